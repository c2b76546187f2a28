"""Validating synthetic candidates: the repository's own tests, narrowed by coverage, against clean runs shared
by every candidate of one repo state.

A synthetic candidate (`source` synthetic, empty test patch; see `repogym.synth`) names in `metadata["synth"]`
its clean commit (REV), the tests to run (those that run the mutated lines, then a few more of their files)
and the suite's test files. Its gold patch turns the base commit (the bug) back into REV, so:

- after the gold patch the repository IS the clean commit: the suite runs there K times once per
  (repository, commit, environment, K), and every candidate of that state reuses the runs. The reuse is
  checked first: on the host, git applies the gold patch to the base commit's tree and the result must be
  the clean commit's tree, else the candidate is dropped (PATCH_FAILED);
- before the gold patch only the candidate's tests run, K times in one episode, stopping after the first run
  when no test that passes cleanly failed (no FAIL_TO_PASS is then possible); a run with no trusted result
  (a hang, a crash) drops the candidate rather than counting its tests as failing;
- the repo's install step (an editable install, `repogym.sandbox.installs`) is not run again per candidate:
  its layers at the clean commit are stacked over the candidate's checkout, as long as they hold none of
  the files the bug changed. The bug only edits source the install step does not write, so the two are
  the same; without this every candidate paid for a build of the package (`uv pip install -e .`);
- a candidate is kept with >= 1 FAIL_TO_PASS and >= 1 PASS_TO_PASS, as SWE-smith keeps them.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repogym.errors import DatasetError
from repogym.grading.report import TestReport, TestStatus
from repogym.grading.runner import run_directives
from repogym.grading.timelimit import capped
from repogym.hostgit import run_git
from repogym.patches import parse_patch
from repogym.sandbox.cache import cache_dir
from repogym.sandbox.installs import CommitLayers
from repogym.sandbox.runtime import Episode, TaskRuntime
from repogym.task import Source, Task
from repogym.taskmeta import SynthRecord
from repogym.validate.classify import Category, category, classify
from repogym.validate.outcome import CandidateOutcome, Verdict

if TYPE_CHECKING:
    from repogym.validate.pool import EnvSpecRecord, ValidationPool

#: A candidate's test run may take this many times the clean run of the suite (plus a floor), so a mutation
#: that loops forever costs seconds, not the default ten-minute limit.
TIME_FACTOR = 5.0
TIME_FLOOR_S = 30.0

Drop = Callable[..., CandidateOutcome]
Statuses = dict[str, TestStatus]


@dataclass(frozen=True)
class SyntheticPlan:
    clean_commit: str
    tests: tuple[str, ...]
    suite_files: tuple[str, ...]


def synthetic_plan(task: Task) -> SyntheticPlan | None:
    """The plan of a synthetic candidate; None for any other candidate. Raises DatasetError when a synthetic
    candidate's metadata is incomplete."""
    if task.source is not Source.SYNTHETIC or task.test_patch.strip():
        return None
    synth = SynthRecord.of(task)
    where = f"{task.instance_id}: metadata.synth"
    if not synth.present:
        raise DatasetError(
            f"{where} is missing: a synthetic candidate names its clean commit and tests there"
        )
    if not synth.clean_commit:
        raise DatasetError(f"{where}.clean_commit must be the sha the gold patch restores")
    for name, value in (("tests", synth.tests), ("suite_files", synth.suite_files)):
        if not value or not all(isinstance(v, str) for v in value):
            raise DatasetError(f"{where}.{name} must be a non-empty list of strings")
    return SyntheticPlan(synth.clean_commit, synth.tests, synth.suite_files)


def gold_restores_clean(runtime: TaskRuntime, task: Task, clean_commit: str) -> str:
    """'' when the gold patch turns the base commit's tree into the clean commit's; else why not."""
    assert runtime.mirror_path is not None
    git_dir = str(runtime.mirror_path)
    with tempfile.TemporaryDirectory(prefix="repogym-gold-") as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "index"), "GIT_DIR": git_dir}

        def git(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
            return run_git(None, *args, input=stdin, env=env)

        steps = [
            git("read-tree", task.base_commit),
            git("apply", "--cached", "--whitespace=nowarn", "-", stdin=task.patch.encode()),
        ]
        failed = next((step for step in steps if step.returncode != 0), None)
        if failed is not None:
            return f"the gold patch does not apply at the base commit: {failed.stderr.decode(errors='replace').strip()[-300:]}"
        tree = git("write-tree").stdout.decode().strip()
        clean = git("rev-parse", "--verify", f"{clean_commit}^{{tree}}")
    if clean.returncode != 0:
        return f"metadata.synth.clean_commit {clean_commit[:12]} is not in the repository"
    if tree != clean.stdout.decode().strip():
        return f"the gold patch does not turn the base commit into metadata.synth.clean_commit {clean_commit[:12]}"
    return ""


@dataclass
class CleanRun:
    """The suite's K runs at one clean commit: their statuses, or why they gave nothing to build on."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    runs: list[Statuses] | None = None
    seconds: float = 0.0
    error: str = ""
    layers: CommitLayers | None = None
    """The install layers of the clean commit, which candidates of this state borrow."""
    env_key: str = ""


class CleanRuns:
    """The suite's K runs at each clean commit, made once and shared by every candidate; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._slots: dict[str, CleanRun] = {}
        self.made = 0
        """How many clean runs were made (the rest of the requests were served from them)."""

    def get(self, pool: ValidationPool, task: Task, plan: SyntheticPlan, runs: int) -> CleanRun:
        key_data = [
            task.repo_source,
            task.repo,
            plan.clean_commit,
            task.env.to_dict(),
            plan.suite_files,
            runs,
        ]
        key = hashlib.sha256(json.dumps(key_data, sort_keys=True, default=str).encode()).hexdigest()[:20]
        with self._lock:
            slot = self._slots.setdefault(key, CleanRun())
        with slot.lock:
            if slot.runs is None and not slot.error:
                self._make(pool, task, plan, runs, slot, cache_dir("logs", "validate-clean", key))
        return slot

    def _make(
        self, pool: ValidationPool, task: Task, plan: SyntheticPlan, runs: int, slot: CleanRun, logs: Path
    ) -> None:
        started = time.perf_counter()
        clean_task = task.replace(
            instance_id=f"{task.repo}@{plan.clean_commit[:12]}", base_commit=plan.clean_commit
        )
        runtime, _ = pool.runtime(clean_task)
        with runtime.episode() as episode:
            reports = [
                run_directives(clean_task, episode, list(plan.suite_files), logs / f"clean-{k}.log")
                for k in range(runs)
            ]
        slot.layers = runtime.layers
        slot.env_key = runtime.env.key if runtime.env is not None else ""
        self.made += 1
        slot.seconds = time.perf_counter() - started
        untrusted = next((r for r in reports if not r.results), None)
        if untrusted is not None:
            slot.error = (
                f"the clean suite at {plan.clean_commit[:12]} gave no trusted result "
                f"({untrusted.note or 'no results'}; log {untrusted.log_path})"
            )
            return
        slot.runs = [report.statuses() for report in reports]


def validate_synthetic(
    task: Task,
    plan: SyntheticPlan,
    runtime: TaskRuntime,
    spec: EnvSpecRecord,
    pool: ValidationPool,
    runs: int,
    logs: Path,
    drop: Drop,
    fingerprint: str,
) -> CandidateOutcome:
    """Validate one synthetic candidate in its prepared runtime (see the module docstring)."""
    started = time.perf_counter()
    why = gold_restores_clean(runtime, task, plan.clean_commit)
    if why:
        return drop(Verdict.PATCH_FAILED, why)
    clean = pool.clean_runs.get(pool, task, plan, runs)
    if clean.runs is None:
        return drop(Verdict.TESTS_DID_NOT_RUN, clean.error)
    wanted = set(plan.tests)
    after = [{t: s for t, s in run.items() if t in wanted} for run in clean.runs]
    clean_passing = [t for t in plan.tests if all(category(run.get(t)) is Category.PASS for run in after)]
    borrowed = borrow_clean_layers(runtime, task, clean)
    runtime.limits = capped(runtime.limits, clean.seconds / max(runs, 1), TIME_FACTOR, TIME_FLOOR_S)
    before, reports = _before_runs(task, runtime, plan, runs, logs, clean_passing)
    if not reports[-1].results:
        detail = f"the tests gave no trusted result with the bug ({reports[-1].note or 'no results'}; log {reports[-1].log_path})"
        return drop(Verdict.TESTS_DID_NOT_RUN, detail)
    validation: dict[str, Any] = {
        "runs": runs,
        "before_runs": len(before),
        "test_files": sorted({t.split("::", 1)[0] for t in plan.tests}),
        "tests_run": len(plan.tests),
        "clean_commit": plan.clean_commit,
        "clean_runs_reused": True,
        "install_layers_from": plan.clean_commit if borrowed else task.base_commit,
        "env": spec.to_dict(),
        "logs": {"before": reports[0].log_path},
        "timings": {
            **{name: round(seconds, 4) for name, seconds in runtime.timings.items()},
            "clean_s": round(clean.seconds, 4),
            "before_s": round(time.perf_counter() - started, 4),
        },
    }
    found = classify(before, after)
    summary = f"before: {_summary(before[0])}; after (clean runs): {_summary(after[0])}"
    if not found.fail_to_pass:
        verdict = Verdict.ONLY_FLAKY if found.flaky_fail_to_pass else Verdict.NO_FAIL_TO_PASS
        return drop(verdict, summary, validation=validation, flaky=found.flaky)
    if not found.pass_to_pass:
        return drop(Verdict.NO_PASS_TO_PASS, summary, validation=validation, flaky=found.flaky)
    return CandidateOutcome(
        instance_id=task.instance_id,
        verdict=Verdict.VALIDATED,
        fail_to_pass=found.fail_to_pass,
        pass_to_pass=found.pass_to_pass,
        flaky=found.flaky,
        validation=validation,
        fingerprint=fingerprint,
    )


def borrow_clean_layers(runtime: TaskRuntime, task: Task, clean: CleanRun) -> bool:
    """Give the candidate's runtime the clean commit's install layers over its own checkout (see the module
    docstring); False, and the runtime makes its own, when they are not known to be the same."""
    layers = clean.layers
    env = runtime.env
    if layers is None or runtime.pristine is None or env is None or env.key != clean.env_key:
        return False
    if not layers.install_step or not runtime.sandbox.supports_overlay:
        return False  # no install step: nothing to save; copy mode: the clean layer is a whole checkout
    uppers = layers.repo[:-1]  # the last lower is the clean commit's own checkout
    changed = [patched.path for patched in parse_patch(task.patch) or []]
    if not changed or any(os.path.lexists(upper / path) for upper in uppers for path in changed):
        return False  # the install wrote (or removed) a file the bug changed: its layer is not the bug's
    if runtime.layers is not None:
        return False  # already made (the runtime is this candidate's own, so nothing else sets it)
    runtime.layers = CommitLayers((*uppers, runtime.pristine), layers.venv, None, layers.install_step)
    return True


def _before_runs(
    task: Task, runtime: TaskRuntime, plan: SyntheticPlan, runs: int, logs: Path, clean_passing: list[str]
) -> tuple[list[Statuses], list[TestReport]]:
    """The K runs with the bug, in one episode; they stop at a run with no trusted result (the last report
    then has none) and after the first run when no test that passes cleanly failed."""
    wanted = set(plan.tests)
    before: list[Statuses] = []
    reports: list[TestReport] = []
    with runtime.episode() as episode:
        for k in range(runs):
            report = _run_tests(task, episode, list(plan.tests), logs / f"before-{k}")
            reports.append(report)
            if not report.results:
                break
            before.append({t: s for t, s in report.statuses().items() if t in wanted})
            if k == 0 and not any(category(before[0].get(t)) is Category.FAIL for t in clean_passing):
                break  # every test that passes cleanly passed with the bug: no FAIL_TO_PASS can come of more runs
    return before, reports


def _run_tests(task: Task, episode: Episode, tests: list[str], log_base: Path) -> TestReport:
    """Run the ids together; when that run stopped early, run each test file whole, alone.

    The bug can break a test module's import: given ids, pytest then exits 4 ("found no collectors")
    and nothing is trusted; given the file, it reports the file's collection error (its tests fail, as
    they should) and the other files' tests get their real outcome.
    """
    report = run_directives(task, episode, tests, log_base.with_name(log_base.name + ".log"))
    if report.collected or report.timed_out:
        return report
    files = list(dict.fromkeys(test.split("::", 1)[0] for test in tests))
    merged: TestReport | None = None
    for index, path in enumerate(files):
        alone = run_directives(task, episode, [path], log_base.with_name(f"{log_base.name}.{index}.log"))
        if not alone.results:
            return alone  # untrusted: its tests would count as failing, so the whole run is not believed
        merged = alone if merged is None else merged.merged(alone)
    assert merged is not None
    return merged


def _summary(statuses: Statuses) -> str:
    counts = {kind: 0 for kind in Category}
    for status in statuses.values():
        counts[category(status)] += 1
    return ", ".join(f"{count} {kind.value}" for kind, count in counts.items() if count) or "no results"
