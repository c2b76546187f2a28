"""What validating one candidate ended in: a verdict, the stage it stopped at, and the tests it proved.

A `CandidateOutcome` is the record appended to `<out>.partial.jsonl`; it holds
test ids, timings and the environment spec, never the candidate's patches or
text, so the partial file cannot leak what the privacy stage later removes.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from repogym.errors import DatasetError
from repogym.task import EnvSpec, Task
from repogym.taskmeta import SynthRecord


class Stage(enum.StrEnum):
    """The validation funnel's stages, in order; a candidate dropped at a stage never reaches the next."""

    ENV_BUILT = "env_built"
    APPLIED = "applied"
    HAS_FAIL_TO_PASS = "has_fail_to_pass"
    NOT_FLAKY = "not_flaky"
    SCRUBBED = "scrubbed"


class Verdict(enum.StrEnum):
    """How validating one candidate ended; every value but VALIDATED drops it."""

    VALIDATED = "validated"
    REPO_UNAVAILABLE = "repo_unavailable"
    ENV_BUILD_FAILED = "env_build_failed"
    PYTHON2_ONLY = "python2_only"
    """The code at the base commit is Python 2 only (repogym builds Python 3 environments)."""
    NO_TEST_FILES = "no_test_files"
    TEST_PATCH_FAILED = "test_patch_failed"
    PATCH_FAILED = "patch_failed"
    TESTS_DID_NOT_RUN = "tests_did_not_run"
    ENV_BROKEN = "env_broken"
    """The same tests fail before and after the fix with the same import or collection error."""
    TESTS_NEED_NETWORK = "tests_need_network"
    """The tests that would tell fail because they try to reach the network (the jail has none)."""
    NO_FAIL_TO_PASS = "no_fail_to_pass"
    NO_PASS_TO_PASS = "no_pass_to_pass"
    """Synthetic candidates only: SWE-smith keeps a bug only when some test still passes with it."""
    ONLY_FLAKY = "only_flaky_fail_to_pass"
    INFRA_ERROR = "infra_error"
    """repogym itself failed (a bug, a full disk); not saved in the partial file, so a re-run retries it."""


#: The stage each drop verdict belongs to (INFRA_ERROR carries its own).
VERDICT_STAGE: dict[Verdict, Stage] = {
    Verdict.REPO_UNAVAILABLE: Stage.ENV_BUILT,
    Verdict.ENV_BUILD_FAILED: Stage.ENV_BUILT,
    Verdict.PYTHON2_ONLY: Stage.ENV_BUILT,
    Verdict.ENV_BROKEN: Stage.HAS_FAIL_TO_PASS,
    Verdict.TESTS_NEED_NETWORK: Stage.HAS_FAIL_TO_PASS,
    Verdict.NO_TEST_FILES: Stage.APPLIED,
    Verdict.TEST_PATCH_FAILED: Stage.APPLIED,
    Verdict.PATCH_FAILED: Stage.APPLIED,
    Verdict.TESTS_DID_NOT_RUN: Stage.HAS_FAIL_TO_PASS,
    Verdict.NO_FAIL_TO_PASS: Stage.HAS_FAIL_TO_PASS,
    Verdict.NO_PASS_TO_PASS: Stage.HAS_FAIL_TO_PASS,
    Verdict.ONLY_FLAKY: Stage.NOT_FLAKY,
}

VERDICT_DESCRIPTIONS: dict[Verdict, str] = {
    Verdict.REPO_UNAVAILABLE: "the repository or its base commit could not be found",
    Verdict.ENV_BUILD_FAILED: "the Python environment at the base commit could not be built",
    Verdict.PYTHON2_ONLY: "the code at the base commit is Python 2 only",
    Verdict.ENV_BROKEN: "the same tests fail before and after the fix with the same import or collection error",
    Verdict.TESTS_NEED_NETWORK: "the tests fail because they try to reach the network (the sandbox has none)",
    Verdict.NO_TEST_FILES: "the test patch adds or changes no test file to run",
    Verdict.TEST_PATCH_FAILED: "the test patch does not apply at the base commit",
    Verdict.PATCH_FAILED: "the gold code patch does not apply at the base commit",
    Verdict.TESTS_DID_NOT_RUN: "the tests produced no trusted results after the gold patch",
    Verdict.NO_FAIL_TO_PASS: "no test fails before the gold patch and passes after it",
    Verdict.NO_PASS_TO_PASS: "no test passes both before and after the gold patch (a synthetic task needs one)",
    Verdict.ONLY_FLAKY: "every test that went from failing to passing changed outcome between runs",
    Verdict.INFRA_ERROR: "repogym failed while validating (retried on the next run)",
}


def clip_detail(text: str, limit: int) -> str:
    """A drop detail cut to `limit` characters, keeping its first line (the cause) and its tail (the log's end).

    >>> clip_detail("failed on: x\\n" + "y" * 50, 30)
    'failed on: x\\n ... yyyyyyyyyyyy'
    """
    if len(text) <= limit:
        return text
    head = text.split("\n", 1)[0][: limit // 2]
    tail_room = max(limit - len(head) - 6, 0)
    return f"{head}\n ... {text[len(text) - tail_room :]}" if tail_room else head


def candidate_fingerprint(task: Task, runs: int) -> str:
    """What a saved outcome depends on: a changed candidate (or --runs) is validated again.

    >>> from repogym.task import EnvSpec, Task
    >>> a = Task("x-1", "o/r", "abc", "patch")
    >>> candidate_fingerprint(a, 2) == candidate_fingerprint(a.replace(problem_statement="new text"), 2)
    True
    >>> candidate_fingerprint(a, 2) == candidate_fingerprint(a, 3)
    False
    """
    payload = {
        "base_commit": task.base_commit,
        "patch": task.patch,
        "test_patch": task.test_patch,
        "env": task.env.to_dict(),
        "runs": runs,
    }
    stored = SynthRecord.of(task).stored
    if stored is not None and "tests" in stored:  # a synthetic candidate: its chosen tests decide its outcome
        # The values as stored, not as typed: a fingerprint must not change when the record's types do.
        payload["synth"] = {"tests": stored.get("tests"), "clean_commit": stored.get("clean_commit")}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:24]


@dataclass(frozen=True)
class CandidateOutcome:
    """The result of validating one candidate."""

    instance_id: str
    verdict: Verdict
    stage: Stage | None = None
    """Where a dropped candidate stopped; None for VALIDATED."""
    detail: str = ""
    """Why it was dropped, in words (apply error, environment build log tail, test log path)."""
    fail_to_pass: tuple[str, ...] = ()
    pass_to_pass: tuple[str, ...] = ()
    flaky: tuple[str, ...] = ()
    """Tests whose outcome changed between runs; left out of FAIL_TO_PASS and PASS_TO_PASS."""
    validation: dict[str, Any] = field(default_factory=dict)
    """Environment spec (python, env_key, install_script), runs, test files and timings."""
    fingerprint: str = ""

    @classmethod
    def dropped(
        cls, task: Task, verdict: Verdict, detail: str, fingerprint: str, **kwargs: Any
    ) -> CandidateOutcome:
        stage = kwargs.pop("stage", None) or VERDICT_STAGE[verdict]
        return cls(task.instance_id, verdict, stage, detail, fingerprint=fingerprint, **kwargs)

    @property
    def validated(self) -> bool:
        return self.verdict is Verdict.VALIDATED

    def to_task(self, candidate: Task) -> Task:
        """The candidate as a validated task: its test lists and `metadata["validation"]` filled in."""
        validation = {k: v for k, v in self.validation.items() if k not in ("task_env", "env_recipe")}
        metadata = {**candidate.metadata, "validation": {**validation, "flaky": list(self.flaky)}}
        env = candidate.env
        if isinstance(self.validation.get("task_env"), dict):
            # The environment the tests were proven in, every field explicit: a rebuild is the same build.
            env = EnvSpec.from_dict(self.validation["task_env"], f"validation of {self.instance_id}")
            metadata["env_recipe"] = self.validation.get("env_recipe", {})
        return candidate.replace(
            FAIL_TO_PASS=list(self.fail_to_pass),
            PASS_TO_PASS=list(self.pass_to_pass),
            metadata=metadata,
            env=env,
        )

    def to_record(self) -> dict[str, Any]:
        return {
            "instance_id": self.instance_id,
            "verdict": self.verdict.value,
            "stage": self.stage.value if self.stage else None,
            "detail": self.detail,
            "FAIL_TO_PASS": list(self.fail_to_pass),
            "PASS_TO_PASS": list(self.pass_to_pass),
            "flaky": list(self.flaky),
            "validation": self.validation,
            "fingerprint": self.fingerprint,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any], where: str = "partial file") -> CandidateOutcome:
        try:
            return cls(
                instance_id=str(record["instance_id"]),
                verdict=Verdict(record["verdict"]),
                stage=Stage(record["stage"]) if record.get("stage") else None,
                detail=str(record.get("detail", "")),
                fail_to_pass=tuple(record.get("FAIL_TO_PASS", ())),
                pass_to_pass=tuple(record.get("PASS_TO_PASS", ())),
                flaky=tuple(record.get("flaky", ())),
                validation=dict(record.get("validation", {})),
                fingerprint=str(record.get("fingerprint", "")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise DatasetError(f"{where}: not a validation record ({exc!r})") from None
