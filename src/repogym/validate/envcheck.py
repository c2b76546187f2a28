"""One repository's environment at one commit, checked: built, its whole test suite collected and run in the
sandbox, or the named reason why not (`repogym env check`).

Nothing here builds an environment of its own: the commit's recipe (`envresolve`, through the validation
pool), the repository's repogym.toml and an env file (`overrides`), the sandbox's runtime and test runner,
and the diagnosis of build and collection failures (`diagnose`) are validation's, so a repository that checks
here builds the same way when its candidates are validated.

The suite is the project's own: with pytest, the paths its CI or tox.ini hands pytest (`suitepaths`) when its
pytest configuration sets no `testpaths`, else what pytest collects from the root.

Counting: with pytest the suite runs with `--continue-on-collection-errors`, so a module that fails to import
is named and the other modules' tests still count; `collected` is False when any module failed to collect
(its tests are missing from the counts) or when the runner gave no trusted report. A suite cut by the time
limit after pytest's collection phase finished cleanly (pytest collects every module before it runs a test, and
prints `collected N items`) is collected: `tests` is the number pytest selected, `complete` is False and no
pass or fail is counted, since a cut run's per-test results are not trusted.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repogym.errors import EnvBuildError, RepoSourceError
from repogym.grading.report import TestReport, TestStatus
from repogym.grading.runner import run_directives
from repogym.hostgit import run_git
from repogym.sandbox.base import Limits
from repogym.sandbox.cache import cache_dir
from repogym.sandbox.syspackages import packages_of
from repogym.task import Task
from repogym.validate.diagnose import (
    SetupCause,
    diagnose_build,
    first_env_error,
    missing_submodules,
    python2_code,
    read_log,
)
from repogym.validate.overrides import apply_overrides
from repogym.validate.pool import ValidationPool
from repogym.validate.pythons import Python2OnlyError
from repogym.validate.suitepaths import suite_paths

#: pytest's flag that keeps running the modules that collected when another one failed to import.
_KEEP_COLLECTING = "--continue-on-collection-errors"


@dataclass(frozen=True)
class EnvCheck:
    """What checking one repository at one commit found; `to_dict` is `repogym env check --json`'s object."""

    repo: str
    """The local clone's path."""
    commit: str
    built: bool
    collected: bool
    tests: int
    """Tests that reported a result (modules that failed to collect are not tests)."""
    passed: int
    """PASSED or XFAIL, as SWE-bench counts them."""
    failed: int
    """FAILED or ERROR."""
    skipped: int
    seconds: float
    """The whole check: checkout, environment (built or found in the cache), install step and the suite."""
    cause: SetupCause | None = None
    """None exactly when `built` and `collected`."""
    detail: str = ""
    system_packages: tuple[str, ...] = ()
    """For SYSTEM_PACKAGE_MISSING: the Debian packages to install."""
    python: str = ""
    log: str = ""
    """The suite's log, else the failed build's."""
    complete: bool = True
    """False when the time limit cut a collected suite: `tests` is what pytest selected, nothing counted."""
    suite: tuple[str, ...] = ()
    """The paths pytest was given (from `suite_source`), () for pytest's own choice."""
    suite_source: str = ""

    @property
    def ok(self) -> bool:
        return self.built and self.collected

    def cause_text(self) -> str | None:
        """'<cause>: <detail>' (a stable name first, the words after it), None when built and collected."""
        if self.cause is None:
            return None
        return f"{self.cause.value}: {self.detail}" if self.detail else self.cause.value

    def to_dict(self) -> dict[str, Any]:
        return {
            "built": self.built,
            "collected": self.collected,
            "tests": self.tests,
            "passed": self.passed,
            "failed": self.failed,
            "seconds": round(self.seconds, 2),
            "cause": self.cause_text(),
            "cause_kind": self.cause.value if self.cause else None,
            "system_packages": list(self.system_packages),
            "skipped": self.skipped,
            "repo": self.repo,
            "commit": self.commit,
            "python": self.python,
            "log": self.log,
            "complete": self.complete,
            "suite": list(self.suite),
            "suite_source": self.suite_source,
        }


def resolve_commit(repo: Path, commit: str) -> str:
    """The full sha `commit` names in the clone at `repo`; RepoSourceError when it is no clone or no commit."""
    if not (repo / ".git").exists():
        raise RepoSourceError(f"{repo}: not a git clone (no .git); env check takes a local clone's folder")
    found = run_git(repo, "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}")
    if found.returncode != 0:
        raise RepoSourceError(f"{repo}: no commit {commit!r} (git rev-parse cannot resolve it)")
    return found.stdout.decode().strip()


def check_environment(
    repo: Path,
    commit: str = "HEAD",
    *,
    sandbox: str = "bwrap",
    timeout_s: float = 1800.0,
    env_file: Path | None = None,
) -> EnvCheck:
    """Build the environment of the clone at `repo` as of `commit` and run its whole suite in the sandbox.

    Raises RepoSourceError when `repo` is not a clone or `commit` not one of its commits (a user's error);
    every way the environment or the suite can fail is an `EnvCheck` with its cause.
    `timeout_s`: the suite's wall-clock limit (the build has its own, `envbuild.BUILD_LIMITS`).
    """
    started = time.perf_counter()
    sha = resolve_commit(repo, commit)
    name = repo.resolve().name
    task = Task(f"{name}@{sha[:12]}", f"local/{name}", sha, "", repo_source=str(repo.resolve()))
    (task,), _ = apply_overrides([task], env_file)
    pool = ValidationPool(sandbox, limits=Limits.for_timeout(timeout_s))
    base = {"repo": str(repo), "commit": sha}

    def not_built(cause: SetupCause, detail: str, **extra: Any) -> EnvCheck:
        return EnvCheck(**base, built=False, collected=False, tests=0, passed=0, failed=0, skipped=0,
                        seconds=time.perf_counter() - started, cause=cause, detail=detail, **extra)  # fmt: skip

    try:
        runtime, spec = pool.runtime(task)
        episode = runtime.episode()  # makes the install layers at this commit: the repository's own install
    except RepoSourceError as exc:
        return not_built(SetupCause.REPO_UNAVAILABLE, str(exc))
    except Python2OnlyError as exc:
        return not_built(SetupCause.PYTHON2_ONLY, str(exc))
    except EnvBuildError as exc:
        found = diagnose_build(str(exc))
        return not_built(found.cause, found.detail or _last_line(str(exc)),
                         system_packages=packages_of(found.needs), log=found.log)  # fmt: skip
    task = runtime.task
    pytest_run = task.env.log_parser == "pytest"  # a suite path, collecting on and a cut are pytest's alone
    suite = suite_paths(runtime.pristine) if pytest_run else None
    directives = [_KEEP_COLLECTING, *(suite.paths if suite else ())] if pytest_run else []
    log = cache_dir("logs", "env-check", name) / f"{sha[:12]}-{time.strftime('%Y%m%dT%H%M%S')}.log"
    with episode:
        report = run_directives(task, episode, directives, log)
    cause, detail = suite_fault(report, runtime.pristine)
    counts = _counts(report)
    selected = cut_after_collection(report) if pytest_run else None
    if selected is not None:
        cause, detail = None, ""
    return EnvCheck(
        **base,
        built=True,
        collected=cause is None,
        complete=selected is None,
        suite=suite.paths if suite else (),
        suite_source=suite.source if suite else "",
        tests=sum(counts.values()) if selected is None else selected,
        passed=counts["passed"],
        failed=counts["failed"],
        skipped=counts["skipped"],
        seconds=time.perf_counter() - started,
        cause=cause,
        detail=detail,
        python=spec.python,
        log=str(log),
    )


def collection_errors(report: TestReport) -> list[str]:
    """The modules (or packages) that failed to collect: pytest reports each as an ERROR with no test name."""
    return sorted(
        t for t, status in report.statuses().items() if status is TestStatus.ERROR and "::" not in t
    )


def suite_fault(report: TestReport, checkout: Path | None = None) -> tuple[SetupCause | None, str]:
    """Why a suite's run does not show a collected suite, (None, '') when it does.

    Python 2 code and import errors are named from the log (pytest prints them where it failed to collect),
    an empty submodule of `checkout` before them when the log names it (tomlkit's test data); a run with
    no trusted report says why in its note."""
    text = read_log(report.log_path)
    broken = collection_errors(report)
    if broken or not report.results:
        if old := python2_code(text):
            return SetupCause.PYTHON2_ONLY, f"{old} (log {report.log_path})"
        error = first_env_error(text)
        where = ", ".join(broken[:5]) + (f" and {len(broken) - 5} more" if len(broken) > 5 else "")
        words = ": ".join(part for part in (where, error) if part)
        if empty := missing_submodules(text, checkout):
            return SetupCause.SUBMODULE_MISSING, (
                f"{', '.join(empty)} (a git submodule the clone did not check out: clone with "
                f"--recurse-submodules; the suite failed on it: {words or 'see the log'}) (log {report.log_path})"
            )
        if broken or error:
            return SetupCause.COLLECTION_ERROR, f"{words} (log {report.log_path})"
    if not report.results:
        if report.exit_code == 5 or report.collected:
            return SetupCause.NO_TESTS, f"the runner found no tests (log {report.log_path})"
        return SetupCause.TESTS_DID_NOT_RUN, f"{report.note or 'no results'} (log {report.log_path})"
    if not report.collected:
        return (
            SetupCause.TESTS_DID_NOT_RUN,
            f"{report.note or 'the run stopped early'} (log {report.log_path})",
        )
    return None, ""


#: pytest's line after its collection phase: `collected 62862 items / 427 deselected / 62435 selected`.
_COLLECTED = re.compile(
    r"^collected (?P<items>\d+) items?(?: / (?P<deselected>\d+) deselected)?(?: / (?P<selected>\d+) selected)?\s*$",
    re.MULTILINE,
)


def cut_after_collection(report: TestReport) -> int | None:
    """The tests pytest selected when the time limit cut a run whose collection phase finished cleanly, else None.

    Clean: pytest's `collected` line carries no `/ N errors` (the pattern ends there) and no module is reported
    as failing to collect. The count comes from pytest's own line, not from the cut run's results."""
    if not report.timed_out or collection_errors(report):
        return None
    found = _COLLECTED.search(read_log(report.log_path))
    if found is None:
        return None
    if found["selected"]:
        return int(found["selected"])
    return int(found["items"]) - int(found["deselected"] or 0)


def _counts(report: TestReport) -> dict[str, int]:
    broken = set(collection_errors(report))
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for test_id, status in report.statuses().items():
        if test_id in broken:
            continue
        kind = "passed" if status.ok else "skipped" if status is TestStatus.SKIPPED else "failed"
        counts[kind] += 1
    return counts


def _last_line(message: str) -> str:
    """The last non-empty line of a message: what an unrecognised failure said last."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""
