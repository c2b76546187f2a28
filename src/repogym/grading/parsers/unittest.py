"""unittest: per-test statuses from the repogym_unittest runner's JSON-lines report, never from printed lines.

Test ids are unittest's dotted ids (``pkg.tests.test_x.TestC.test_y``). Mapping: passed -> PASSED; failed (a
failing subtest included) -> FAILED; error -> ERROR; skipped -> SKIPPED; expected failure -> XFAIL for a test
decorated with expectedFailure, FAILED otherwise (Python 2 takes an _ExpectedFailure raised anywhere); unexpected
success -> FAILED (unittest itself counts it as a failure since Python 3.4); a name or module that fails to load
-> ERROR under that name; a class or module fixture error -> ERROR under unittest's description of it
(``setUpClass (mod.Class)``). When one id has several results (subtests), the worst wins.

Guarantees:

- Statuses come only from the report file the runner writes; nothing printed can change them.
- Fail closed: a run that timed out or was killed, that died or left through os._exit before the closing
  record, whose report is malformed, or whose exit code disagrees with its report gives ``collected=False``
  and no results. No test run (exit code 5) gives ``collected=False``.
- No stale report: the command deletes the report file first and the runner refuses to write into a file that
  already exists.

- Nothing in the repository stands in for the runner or the standard library it uses: a ``-m unittest``
  command runs the runner as a script, which imports them before the repository's folders are on sys.path.

Not guaranteed:

- Code under test runs in the runner's process and can forge the report; the grader's canary
  (grading/canary.py) catches a forger that does not single it out, not this parser.
- "Decorated with expectedFailure" is read when the test ends (``__unittest_expecting_failure__``), which code
  under test can set on a running test: the grader counts an XFAIL only where its static reading of the
  trusted test sources finds the decorator (grading/xfail_marks.py, judged in grading/judge.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repogym.grading.parsers.common import (
    SANDBOX_PLUGIN_DIR,
    interrupted,
    jsonl_problem,
    judge_exit,
    read_jsonl,
    report_command,
    shell_join,
    untrusted,
    with_args,
)
from repogym.grading.report import TestReport, TestStatus

if TYPE_CHECKING:
    from repogym.grading.parsers import TestRun

PLUGIN_DIR = Path(__file__).resolve().parent.parent / "unittest_runner"
RUNNER = "repogym_unittest.py"

_OUTCOMES = {
    "passed": TestStatus.PASSED,
    "failed": TestStatus.FAILED,
    "error": TestStatus.ERROR,
    "skipped": TestStatus.SKIPPED,
    "xfail": TestStatus.XFAIL,
    "xpass": TestStatus.FAILED,
}
_SEVERITY = {TestStatus.ERROR: 2, TestStatus.FAILED: 1}
# Python 3 turns a name that fails to import into a test with this id prefix; Python 2's discovery likewise.
_LOADER_FAILURE_PREFIXES = ("unittest.loader._FailedTest.", "unittest.loader.ModuleImportFailure.")
_EXIT_MEANINGS = {2: "repogym_unittest rejected its command line"}
_PLAIN_UNITTEST = re.compile(r"-m\s+(?:repogym_)?unittest\b")


def runner_command(test_cmd: str, runner: str) -> str:
    """The task's unittest command, pointed at the structured runner script `runner` (same arguments as
    ``-m unittest``; run as a script so the repository cannot shadow it, see repogym_unittest.py).

    >>> runner_command("", "/p/repogym_unittest.py")
    'python /p/repogym_unittest.py'
    >>> runner_command("python3 -m unittest -v", "/p/repogym_unittest.py")
    'python3 /p/repogym_unittest.py -v'
    """
    if not test_cmd:
        return f"python {runner}"
    return _PLAIN_UNITTEST.sub(lambda _: runner, test_cmd)


@dataclass(frozen=True)
class UnittestParser:
    """Runs tests with the repogym_unittest runner and reads its report."""

    name: str = field(default="unittest", init=False)
    plugin_dir: Path | None = PLUGIN_DIR
    plugin_mount: str = SANDBOX_PLUGIN_DIR
    """Where `plugin_dir` is seen by the command (the host folder itself for a sandbox without bind mounts)."""

    def command(self, test_cmd: str, test_ids: Sequence[str], report_file: str) -> str:
        """A ``test_cmd`` using ``python -m unittest`` runs the repogym_unittest.py script instead; any other
        command must run the runner itself, or it leaves no report and the run is not trusted."""
        run = with_args(runner_command(test_cmd, f"{self.plugin_mount}/{RUNNER}"), shell_join(test_ids))
        return report_command(self.plugin_mount, report_file, run)

    def parse(self, run: TestRun) -> TestReport:
        if run.report_text is None:
            why = interrupted(run) or (
                f"no structured report (exit code {run.exit_code}): the repogym_unittest runner did not run"
            )
            return untrusted(run, why)
        report = read_jsonl(run.report_text)
        statuses, durations = _statuses(report.records)
        why = jsonl_problem(run, report, "repogym_unittest")
        if why:
            return untrusted(run, why, len(statuses))
        tests_run = report.finish.get("tests_run") if report.finish else 0
        return judge_exit(
            run,
            statuses,
            durations,
            ran_tests=bool(tests_run),
            exit_meanings=_EXIT_MEANINGS,
            tool="repogym_unittest",
        )


def _test_id(raw_id: str) -> str:
    """A loader-failure placeholder's id -> the name that failed to load.

    >>> _test_id("unittest.loader._FailedTest.tests.test_broken")
    'tests.test_broken'
    >>> _test_id("tests.test_x.TestC.test_y")
    'tests.test_x.TestC.test_y'
    """
    for prefix in _LOADER_FAILURE_PREFIXES:
        if raw_id.startswith(prefix):
            return raw_id[len(prefix) :]
    return raw_id


def _statuses(records: Iterable[Mapping[str, Any]]) -> tuple[dict[str, TestStatus], dict[str, float]]:
    statuses: dict[str, TestStatus] = {}
    durations: dict[str, float] = {}
    for record in records:
        if record["event"] == "load_error":
            status = TestStatus.ERROR
        elif record["event"] == "test" and record.get("outcome") in _OUTCOMES:
            status = _OUTCOMES[record["outcome"]]
        else:
            continue
        test_id = _test_id(str(record.get("id", "")))
        previous = statuses.get(test_id)
        if previous is None or _SEVERITY.get(status, 0) >= _SEVERITY.get(previous, 0):
            statuses[test_id] = status
        durations[test_id] = durations.get(test_id, 0.0) + float(record.get("duration") or 0.0)
    return statuses, durations
