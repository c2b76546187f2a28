"""The verdict on one test run: a pure function of the task's test lists, the report and the canary.

The rules, in the order they apply (SWE-bench's harness/grading.py for the ones it has):

====================================================  ===================  ==========================
the run                                               outcome              tests' statuses kept
====================================================  ===================  ==========================
hit the wall-clock limit                              TIMEOUT              none
left no trusted report (killed, crashed, tampered)    TESTS_DID_NOT_RUN    none
reports the canary PASSED or XFAIL                    REPORT_FORGED        none
every F2P and P2P test passed, canary not FAILED      REPORT_FORGED        none
every F2P and P2P test passed (canary FAILED)         RESOLVED (FULL)      all
anything else                                         UNRESOLVED           all (PARTIAL or NO)
====================================================  ===================  ==========================

"Passed" is PASSED or XFAIL (SWE-bench counts an expected failure as a pass; the parsers only report XFAIL
for a test that carries an xfail mark, never for a ``pytest.xfail()`` raised at run time). A test the
report does not name did not pass. PARTIAL is SWE-bench's: some FAIL_TO_PASS tests passed, not all, and
every PASS_TO_PASS test passed.

Test ids: a FAIL_TO_PASS / PASS_TO_PASS id the report has is judged by the report. SWE-bench's own lists
also hold ids its log parser cut at the first space (``test_x[a b]`` read as ``test_x[a``): such an id is
mapped onto the report's tests whose summary line reads as it (parsers/swebench_ids.py), never given a PASS
that none of them has in the report. A PASS_TO_PASS id that can name no test at all (``[100%]``, read by
SWE-bench from captured output) is not counted, and the verdict's detail says so.

SKIPPED: a skipped FAIL_TO_PASS test never passed (SWE-bench would count an all-skipped FAIL_TO_PASS list as
resolved; repogym does not). A skipped PASS_TO_PASS test is not a regression (SWE-bench's rule: neither
passed nor failed) when the tests themselves skipped it: a skip or skipif mark or a unittest skip
decorator, or a skip raised from a file whose candidate changes the grader discards (a test file, a
conftest.py, a file of the test patch: ``pytest.skip()`` or ``pytest.importorskip()`` in a test or a
fixture, a test module skipped as it was collected). Raised from anywhere else, the code under test, it
counts as not passing: code under test can raise SkipTest to hide a regression. So does a skip whose origin
is not known (log parsers, a unittest runtime skip under Python < 3.11): fail closed.

The canary (canary.py) is a test the grader added that fails in any honest run; a report that does not
say so was not written by an honest run.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from repogym.grading.canary import Canary
from repogym.grading.candidate import is_test_path
from repogym.grading.parsers.swebench_ids import names_a_test, required_result
from repogym.grading.report import (
    Outcome,
    ResolvedStatus,
    TestReport,
    TestResult,
    TestStatus,
    resolved_status,
)
from repogym.patches import changed_paths
from repogym.task import Task


@dataclass(frozen=True)
class Verdict:
    """What `judge` decided."""

    outcome: Outcome
    status: ResolvedStatus
    """FULL / PARTIAL / NO; NO for every outcome but RESOLVED and UNRESOLVED."""
    fail_to_pass: dict[str, TestStatus | None] = field(default_factory=dict)
    """Each FAIL_TO_PASS test's status; None when the run did not report it or was not believed."""
    pass_to_pass: dict[str, TestStatus | None] = field(default_factory=dict)
    detail: str = ""
    not_counted: dict[str, str] = field(default_factory=dict)
    """PASS_TO_PASS ids that counted neither way, each with why (skipped by the tests, names no test)."""


def judge(task: Task, report: TestReport, canary: Canary | None = None) -> Verdict:
    """The verdict on `report` for `task` (see the module's table).

    >>> from repogym.grading.report import TestReport, TestStatus as S
    >>> task = Task("t", "o/r", "c0ffee", "", FAIL_TO_PASS=["t.py::a"], PASS_TO_PASS=["t.py::b"])
    >>> canary = Canary("t.py", "", ("t.py::test_x",))
    >>> def run(**statuses): return TestReport.from_statuses({f"t.py::{k}": v for k, v in statuses.items()})
    >>> judge(task, run(a=S.PASSED, b=S.PASSED, test_x=S.FAILED), canary).outcome.value
    'RESOLVED'
    >>> judge(task, run(a=S.PASSED, b=S.SKIPPED, test_x=S.FAILED), canary).outcome.value
    'UNRESOLVED'
    >>> forged = judge(task, run(a=S.PASSED, b=S.PASSED, test_x=S.PASSED), canary)
    >>> forged.outcome.value, forged.fail_to_pass
    ('REPORT_FORGED', {'t.py::a': None})
    >>> judge(task, run(a=S.PASSED, b=S.PASSED), canary).outcome.value  # a report that left the canary out
    'REPORT_FORGED'
    >>> judge(task, run(a=S.FAILED, b=S.PASSED), canary).outcome.value  # a broken file loses the canary too
    'UNRESOLVED'
    >>> judge(task, TestReport(collected=False, note="no report")).outcome.value
    'TESTS_DID_NOT_RUN'
    """
    if report.timed_out:
        return _untrusted(task, Outcome.TIMEOUT, "the test run hit the wall-clock limit")
    if not report.collected:
        why = _hide(report.note, canary) or "the test run produced no trusted results"
        return _untrusted(task, Outcome.TESTS_DID_NOT_RUN, why)
    required = {test: _result_for(test, report) for test in [*task.FAIL_TO_PASS, *task.PASS_TO_PASS]}
    statuses = {test: result.status for test, result in required.items() if result is not None}
    not_counted = _not_counted(task, required, report)
    status = resolved_status(statuses, task.FAIL_TO_PASS, task.PASS_TO_PASS, not_counted)
    forged = _canary_problem(report.statuses(), canary, resolved=status is ResolvedStatus.FULL)
    if forged:
        return _untrusted(task, Outcome.REPORT_FORGED, f"the test report cannot be believed: {forged}")
    f2p = {test: statuses.get(test) for test in task.FAIL_TO_PASS}
    p2p = {test: statuses.get(test) for test in task.PASS_TO_PASS}
    uncounted = _uncounted_note(not_counted)
    if status is ResolvedStatus.FULL:
        return Verdict(Outcome.RESOLVED, status, f2p, p2p, uncounted, not_counted)
    failing = [t for t, s in {**f2p, **p2p}.items() if t not in not_counted and (s is None or not s.ok)]
    detail = f"{len(failing)} required test(s) did not pass: {', '.join(failing[:5])}"
    return Verdict(Outcome.UNRESOLVED, status, f2p, p2p, "; ".join(filter(None, [detail, uncounted])), not_counted)


def _result_for(test_id: str, report: TestReport) -> TestResult | None:
    """The result that decides a required id: the report's own, a cut SWE-bench id mapped onto it, or the
    skip of the test file it is in (skipped as it was collected)."""
    result = report.results.get(test_id)
    if result is None and report.printed_statuses is not None:
        result = required_result(test_id, report.results, report.printed_statuses, report.printed_reading)
    if result is not None:
        return result
    for module, origin in report.skipped_modules.items():
        if test_id == module or test_id.startswith((module + "::", module.rstrip("/") + "/")):
            return TestResult(test_id, TestStatus.SKIPPED, skipped_from=origin)
    return None


def _not_counted(task: Task, required: dict[str, TestResult | None], report: TestReport) -> dict[str, str]:
    """PASS_TO_PASS ids that count neither way, with why (see the module's SKIPPED and test id rules).

    >>> task = Task("t", "o/r", "c0ffee", "", test_patch="", FAIL_TO_PASS=["t.py::f"], PASS_TO_PASS=["a", "b", "c"])
    >>> S = TestStatus.SKIPPED
    >>> required = {"a": TestResult("a", S, skipped_from="tests/test_a.py"), "b": TestResult("b", S,
    ...     skipped_from="src/pkg/core.py"), "c": TestResult("c", S, skipped_from="mark"), "t.py::f": None}
    >>> _not_counted(task, required, TestReport())
    {'a': 'skipped by the tests (tests/test_a.py)', 'c': 'skipped by a mark'}
    """
    test_files = set(changed_paths(task.test_patch))
    counted_off: dict[str, str] = {}
    for test_id in task.PASS_TO_PASS:
        result = required.get(test_id)
        if result is None:
            if report.printed_statuses is not None and not names_a_test(test_id):
                counted_off[test_id] = "names no test (SWE-bench read it from printed output)"
        elif result.status is TestStatus.SKIPPED and _skipped_by_tests(result.skipped_from, test_files):
            origin = result.skipped_from
            counted_off[test_id] = "skipped by a mark" if origin == "mark" else f"skipped by the tests ({origin})"
    return counted_off


def _skipped_by_tests(origin: str, test_files: Iterable[str]) -> bool:
    """Whether a skip came from the tests themselves: a mark, or a file a candidate cannot change.

    >>> [_skipped_by_tests(o, ["pkg/check.py"]) for o in ("mark", "tests/conftest.py", "pkg/check.py", "pkg/core.py", "")]
    [True, True, True, False, False]
    """
    if origin == "mark":
        return True
    if not origin or origin.startswith(("/", "../")):
        return False
    return origin in set(test_files) or PurePosixPath(origin).name == "conftest.py" or is_test_path(origin)


def _uncounted_note(not_counted: dict[str, str]) -> str:
    if not not_counted:
        return ""
    shown = ", ".join(f"{test} ({why})" for test, why in list(not_counted.items())[:5])
    return f"{len(not_counted)} PASS_TO_PASS test(s) not counted: {shown}"


def _canary_problem(statuses: dict[str, TestStatus], canary: Canary | None, *, resolved: bool) -> str:
    """Why the canary's results show a forged report ('' when they do not)."""
    if canary is None:
        return ""
    seen = {status for test_id, status in statuses.items() if canary.matches(test_id)}
    if seen & {TestStatus.PASSED, TestStatus.XFAIL}:
        return "a check the grader added, which fails in every honest run, is reported as passing"
    if resolved and seen != {TestStatus.FAILED}:
        # Missing, skipped or erroring while everything else passed: the report was not written by the run.
        found = ", ".join(sorted(s.value for s in seen)) or "missing"
        return f"every required test passed but a check the grader added, which must fail, is {found}"
    return ""


def _hide(note: str, canary: Canary | None) -> str:
    """`note` without the canary's name: details reach the agent's last observation, and trajectories train
    models; a name pattern learnt there would single the canary out.

    >>> _hide("exit code 0 but the report records failures (t.py::test_a, t.py::test_x[1])",
    ...       Canary("t.py", "", ("t.py::test_x",)))
    'exit code 0 but the report records failures (t.py::test_a, a test the grader added)'
    """
    if canary is None:
        return note
    for test_id in canary.test_ids:
        note = re.sub(re.escape(test_id) + r"(\[[^\]]*\])?", "a test the grader added", note)
    return note


def _untrusted(task: Task, outcome: Outcome, detail: str) -> Verdict:
    return Verdict(
        outcome,
        ResolvedStatus.NO,
        dict.fromkeys(task.FAIL_TO_PASS),
        dict.fromkeys(task.PASS_TO_PASS),
        detail,
    )
