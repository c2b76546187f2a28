"""Validate one candidate in the sandbox: prove its tests fail before the gold patch and pass after it.

The steps, each with its own drop verdict (see `repogym.validate.outcome`):
environment at the base commit (shared through a `ValidationPool`) -> the test
patch's test files -> before: test patch applied, the files run K times in one
episode -> the episode reset -> after: gold patch then test patch applied (the
order `repogym grade` uses), the files run K times -> FAIL_TO_PASS,
PASS_TO_PASS and flaky tests (`repogym.validate.classify`). Synthetic candidates
(no test patch; the suite's own tests, narrowed by coverage) take their own
route after the environment step: `repogym.validate.synthetic`.

The K runs of a phase share their episode, so a test that depends on what an
earlier run left behind (in /tmp, in the repository) shows up as flaky too;
the first after-run starts from the same fresh state a grader's run does.
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repogym.errors import DatasetError, EnvBuildError, RepoSourceError
from repogym.grading.report import TestReport, TestStatus
from repogym.grading.runner import run_directives
from repogym.sandbox.cache import cache_dir
from repogym.sandbox.runtime import Episode
from repogym.task import Task
from repogym.validate.classify import Category, category, classify, test_files
from repogym.validate.diagnose import (
    SetupCause,
    env_build_cause,
    first_env_error,
    missing_submodules,
    needs_network,
    python2_code,
    read_log,
)
from repogym.validate.outcome import CandidateOutcome, Stage, Verdict, candidate_fingerprint, clip_detail
from repogym.validate.pool import ValidationPool
from repogym.validate.recipe import Python2OnlyError
from repogym.validate.synthetic import synthetic_plan, validate_synthetic

_DETAIL_CHARS = 2000


@dataclass
class _Where:
    """The stage a candidate has reached (an unexpected error is counted there)."""

    stage: Stage = Stage.ENV_BUILT


def validate_candidate(
    candidate: Task, pool: ValidationPool, runs: int = 2, log_dir: str | Path | None = None
) -> CandidateOutcome:
    """Validate one candidate; never raises for problems of the candidate or the sandbox (they are verdicts)."""
    fingerprint = candidate_fingerprint(candidate, runs)
    where = _Where()
    try:
        return _validate(
            candidate.replace(FAIL_TO_PASS=[], PASS_TO_PASS=[]), pool, runs, fingerprint, where, log_dir
        )
    except Exception as exc:  # one broken candidate must not stop a batch of thousands
        detail = f"{type(exc).__name__}: {exc}"[:_DETAIL_CHARS]
        return CandidateOutcome.dropped(
            candidate, Verdict.INFRA_ERROR, detail, fingerprint, stage=where.stage
        )


def _validate(
    task: Task, pool: ValidationPool, runs: int, fingerprint: str, where: _Where, log_dir: str | Path | None
) -> CandidateOutcome:
    started = time.perf_counter()

    def drop(verdict: Verdict, detail: str, **kwargs: Any) -> CandidateOutcome:
        return CandidateOutcome.dropped(
            task, verdict, clip_detail(detail, _DETAIL_CHARS), fingerprint, **kwargs
        )

    try:
        runtime, spec = pool.runtime(task)
    except RepoSourceError as exc:
        return drop(Verdict.REPO_UNAVAILABLE, str(exc))
    except Python2OnlyError as exc:
        return drop(Verdict.PYTHON2_ONLY, str(exc))
    except EnvBuildError as exc:
        cause = env_build_cause(str(exc))
        return drop(Verdict.ENV_BUILD_FAILED, f"failed on: {cause}\n{exc}" if cause else str(exc))
    task = runtime.task  # with the environment's recipe filled in: what a validated task records
    where.stage = Stage.APPLIED
    logs = Path(log_dir) if log_dir else run_log_dir(task)
    try:
        plan = synthetic_plan(task)
    except DatasetError as exc:
        return drop(Verdict.NO_TEST_FILES, str(exc))
    if plan is not None:
        outcome = validate_synthetic(task, plan, runtime, spec, pool, runs, logs, drop, fingerprint)
        recorded = {"task_env": task.env.to_dict(), "env_recipe": task.metadata.get("env_recipe", {})}
        return dataclasses.replace(outcome, validation={**outcome.validation, **recorded})
    files = test_files(task.test_patch)
    if not files:
        return drop(Verdict.NO_TEST_FILES, "the test patch adds or changes no Python test module")
    timings = dict(runtime.timings)
    with runtime.episode() as episode:
        before = _phase(task, episode, [("test.patch", task.test_patch)], files, runs, logs / "before")
        if isinstance(before, str):
            return drop(Verdict.TEST_PATCH_FAILED, before)
        timings["reset_s"] = episode.reset()
        patches = [("gold.patch", task.patch)] if task.patch.strip() else []
        after = _phase(
            task, episode, [*patches, ("test.patch", task.test_patch)], files, runs, logs / "after"
        )
        if isinstance(after, str):
            verdict = (
                Verdict.PATCH_FAILED
                if after.startswith("git apply gold.patch")
                else Verdict.TEST_PATCH_FAILED
            )
            return drop(verdict, after)
    where.stage = Stage.HAS_FAIL_TO_PASS
    timings.update(before_s=before.seconds, after_s=after.seconds, total_s=time.perf_counter() - started)
    validation = {
        "runs": runs,
        "test_files": files,
        "env": spec.to_dict(),
        "task_env": task.env.to_dict(),
        "env_recipe": task.metadata.get("env_recipe", {}),
        "timings": {name: round(seconds, 4) for name, seconds in timings.items()},
    }
    broken = _environment_fault(before.reports[0], after.reports[0], runtime.pristine)
    if not any(report.results for report in after.reports):
        if broken is not None:
            return drop(broken[0], broken[1], validation=validation)
        notes = (
            "; ".join(dict.fromkeys(r.note for r in after.reports if r.note)) or "no test reported a result"
        )
        return drop(
            Verdict.TESTS_DID_NOT_RUN, f"{notes} (log {after.reports[-1].log_path})", validation=validation
        )
    found = classify(before.statuses(), after.statuses())
    if not found.fail_to_pass:
        if broken is not None and not found.flaky_fail_to_pass:
            return drop(broken[0], broken[1], validation=validation, flaky=found.flaky)
        verdict = Verdict.ONLY_FLAKY if found.flaky_fail_to_pass else Verdict.NO_FAIL_TO_PASS
        detail = f"before: {_summary(before.reports[0])}; after: {_summary(after.reports[0])}"
        if found.flaky:
            detail += f"; flaky: {', '.join(found.flaky[:5])}"
        detail += f" (log {after.reports[0].log_path})"
        return drop(verdict, detail, validation=validation, flaky=found.flaky)
    return CandidateOutcome(
        instance_id=task.instance_id,
        verdict=Verdict.VALIDATED,
        fail_to_pass=found.fail_to_pass,
        pass_to_pass=found.pass_to_pass,
        flaky=found.flaky,
        validation=validation,
        fingerprint=fingerprint,
    )


@dataclass(frozen=True)
class _PhaseRuns:
    """The K test runs of one phase (before or after the gold patch)."""

    reports: list[TestReport]
    seconds: float

    def statuses(self) -> list[dict[str, TestStatus]]:
        return [report.statuses() for report in self.reports]


def run_log_dir(task: Task) -> Path:
    """A new folder for one validation's test logs under the cache: two validations of one candidate at once
    (two processes sharing a cache, a setup agent's trials beside the rules' own run) never overwrite each
    other's logs, which the environment-fault rules read back (a shared `before-0.log` once turned an
    env_broken candidate into tests_did_not_run)."""
    stamp = f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-{time.monotonic_ns() % 10**9}"
    return cache_dir("logs", "validate", task.instance_id.replace("/", "__")) / stamp


def _phase(
    task: Task, episode: Episode, patches: list[tuple[str, str]], files: list[str], runs: int, log_base: Path
) -> _PhaseRuns | str:
    """Apply the patches in order, then run the test files `runs` times; or why a patch did not apply."""
    for name, patch in patches:
        failure = _apply(episode, name, patch)
        if failure:
            return failure
    started = time.perf_counter()
    reports = [
        _run_files(task, episode, files, log_base.with_name(f"{log_base.name}-{k}")) for k in range(runs)
    ]
    return _PhaseRuns(reports, time.perf_counter() - started)


def _apply(episode: Episode, name: str, patch: str) -> str:
    """Apply a patch exactly (a gold patch from the repository's own history needs no fuzz); '' or why not."""
    path = episode.put_file(name, patch)
    result = episode.run(f"git apply --whitespace=nowarn {path}")
    if result.ok:
        return ""
    tail = " | ".join(result.output.strip().splitlines()[-8:])
    return f"git apply {name}: {tail or f'exit code {result.exit_code}'}"


def _run_files(task: Task, episode: Episode, files: list[str], log_base: Path) -> TestReport:
    """Run the test files together; when that run is not trusted, run each file alone.

    pytest stops before running anything when one file fails to collect (a test module that imports
    what the fix adds), which would hide the other files' real outcomes. A run cut by the time limit is
    run file by file too: a bug that hangs one file (click's pager before its fix) would otherwise leave
    every test of every file unreported before the fix, and each of them passing after would be taken
    for FAIL_TO_PASS, tests that passed all along among them. It costs the hanging file's limit again,
    once per trial, and only for candidates whose run hung.
    """
    report = run_directives(task, episode, files, log_base.with_name(log_base.name + ".log"))
    if report.collected or len(files) < 2:
        return report
    merged: TestReport | None = None
    for index, path in enumerate(files):
        alone = run_directives(task, episode, [path], log_base.with_name(f"{log_base.name}.{index}.log"))
        merged = alone if merged is None else merged.merged(alone)
    assert merged is not None
    return merged


def _environment_fault(
    before: TestReport, after: TestReport, checkout: Path | None = None
) -> tuple[Verdict, str] | None:
    """The environment's fault when the tests cannot tell the fix from its absence, or None.

    Python 2 code or a network attempt after the fix name themselves; an import or collection error
    is the environment's when the same tests fail before and after the fix with the same error, said as
    a missing submodule when it names an empty one of `checkout` (as `repogym env check` says it).
    """
    after_log = read_log(after.log_path)
    old = python2_code(after_log)
    if old:
        return Verdict.PYTHON2_ONLY, f"{old} (log {after.log_path})"
    failing_after = {t for t, s in after.statuses().items() if not s.ok}
    network = needs_network(after_log)
    if network and (failing_after or not after.collected):
        return Verdict.TESTS_NEED_NETWORK, f"{network} (log {after.log_path})"
    error = first_env_error(after_log)
    failing_before = {t for t, s in before.statuses().items() if not s.ok}
    same_tests = failing_before == failing_after and (failing_after or not after.collected)
    if error and same_tests and first_env_error(read_log(before.log_path)) == error:
        empty = missing_submodules(after_log, checkout)
        named = f"{SetupCause.SUBMODULE_MISSING.value}: {', '.join(empty)}; " if empty else ""
        return (
            Verdict.ENV_BROKEN,
            f"{named}same error before and after the fix: {error} (log {after.log_path})",
        )
    return None


def _summary(report: TestReport) -> str:
    """'3 pass, 1 fail' for one run, or the run's note when it reported nothing."""
    if not report.results:
        return report.note or "no results"
    counts = {kind: 0 for kind in Category}
    for status in report.statuses().values():
        counts[category(status)] += 1
    return ", ".join(f"{count} {kind.value}" for kind, count in counts.items() if count)
