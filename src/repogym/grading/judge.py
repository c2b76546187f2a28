"""The verdict on one test run: a pure function of the task's test lists, the report and the canary.

The rules, in the order they apply (SWE-bench's harness/grading.py for the ones it has):

====================================================  ===================  ==========================
the run                                               outcome              tests' statuses kept
====================================================  ===================  ==========================
hit the wall-clock limit                              TIMEOUT              none
left no trusted report (killed, crashed, tampered)    TESTS_DID_NOT_RUN    none
reports the canary PASSED, or XFAIL without a mark    REPORT_FORGED        none
every F2P and P2P test passed, canary not FAILED      REPORT_FORGED        none
every F2P and P2P test passed (canary FAILED)         RESOLVED (FULL)      all
anything else                                         UNRESOLVED           all (PARTIAL or NO)
====================================================  ===================  ==========================

"Passed" is PASSED or XFAIL (SWE-bench counts an expected failure as a pass), with two guards, since code
under test runs in the test process and can make a failing test an expected failure:

- the parsers report XFAIL only for a test that carried an xfail mark when collection ended (the report
  plugin keeps those marks and ignores any added later), never for a ``pytest.xfail()`` raised at run time;
- the grader's static reading of the trusted test sources (xfail_marks.py: the test files after the test
  patch, and the conftest.py files on each test's path) must find an xfail mark that can apply to the
  test: code under test imported while tests are collected could have added the mark. An XFAIL without one
  counts as FAILED, and the verdict's detail says so. (`judge` without `may_xfail`, for callers that read
  no sources, counts every XFAIL.)

A test the report does not name did not pass. PARTIAL is SWE-bench's: some FAIL_TO_PASS tests passed, not all, and
every PASS_TO_PASS test passed.

Test ids: a FAIL_TO_PASS / PASS_TO_PASS id the report has is judged by the report. SWE-bench's own lists
also hold ids its log parser cut at the first space (``test_x[a b]`` read as ``test_x[a``): such an id is
mapped onto the report's tests whose summary line reads as it (parsers/swebench_ids.py), never given a PASS
that none of them has in the report. A PASS_TO_PASS id that can name no test at all (``[100%]``, read by
SWE-bench from captured output) is not counted, and the verdict's detail says so.

SKIPPED, under one of two rules (`SkipRule`):

- ``strict`` (the default, and what every reward is computed with): a required test that is SKIPPED did not
  pass, FAIL_TO_PASS or PASS_TO_PASS, wherever the skip came from. A skip cannot be trusted by its origin:
  a skipif condition or an ``importorskip`` in a test file the candidate cannot touch still reads the code
  under test (a patch that makes ``pkg.optional`` fail to import skips every test that importorskips it), and
  a PASS_TO_PASS test passed before the patch by definition, so a skip now is the patch's doing or the
  environment's, never a pass. A gold patch that a skip stops from resolving shows the environment is wrong
  (``repogym grade --gold``, the env checker, validate). The report keeps where each skip came from.
- ``swebench``: SWE-bench's verdict on SWE-bench's reading of the same run (harness/grading.py since v5.0.0,
  commit a5ecda6, "Fix pytest skipped test grading (#598)"): ``test_failed`` counts SKIPPED as a failure for
  FAIL_TO_PASS, ``test_maintained`` counts it as a success for PASS_TO_PASS. Its log parsers only see a
  skip by the test's name for unittest-style logs (django's ``... skipped``): its pytest parsers read
  ``SKIPPED [1] file:line: reason`` (no test id; dropped since v5) and its sympy parser reads no skips, so
  there a skipped test is missing from its status map, i.e. failed. So under ``swebench`` a skipped
  PASS_TO_PASS test is not a regression for the ``django`` and ``unittest`` parsers and fails for the others;
  a skipped FAIL_TO_PASS test always fails. (Before v5 SWE-bench counted a skip neither way, so an
  all-skipped FAIL_TO_PASS list scored FULL; that rule is not offered: it is the hole v5 closed.)

The canary (canary.py) is a test the grader added that fails in any honest run; a report that does not
say so was not written by an honest run. A canary reported XFAIL is an honest failure only where the trusted
sources can xfail its class or module (its own xfail marks are dropped when it is planted).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from repogym.grading.canary import Canary
from repogym.grading.parsers.swebench_ids import id_file, names_a_test, required_result
from repogym.grading.report import (
    Outcome,
    ResolvedStatus,
    SkipRule,
    TestReport,
    TestResult,
    TestStatus,
    resolved_status,
)
from repogym.task import Source, Task


@dataclass(frozen=True)
class Judgement:
    """What `judge` decided."""

    outcome: Outcome
    status: ResolvedStatus
    """FULL / PARTIAL / NO; NO for every outcome but RESOLVED and UNRESOLVED."""
    fail_to_pass: dict[str, TestStatus | None] = field(default_factory=dict)
    """Each FAIL_TO_PASS test's status; None when the run did not report it or was not believed."""
    pass_to_pass: dict[str, TestStatus | None] = field(default_factory=dict)
    detail: str = ""
    not_counted: dict[str, str] = field(default_factory=dict)
    """PASS_TO_PASS ids that did not count as failures, each with why (an id that names no test; under the
    ``swebench`` rule, a skip SWE-bench counts as maintained)."""

    @property
    def not_passed(self) -> list[str]:
        """The required tests that count and did not pass (no status, or one that is not a pass), in order."""
        return _not_passed(self.fail_to_pass, self.pass_to_pass, self.not_counted)


def _not_passed(
    f2p: dict[str, TestStatus | None], p2p: dict[str, TestStatus | None], not_counted: dict[str, str]
) -> list[str]:
    return [t for t, s in {**f2p, **p2p}.items() if t not in not_counted and (s is None or not s.ok)]


def skip_rule_for(task: Task) -> SkipRule:
    """SWEBENCH for tasks imported from SWE-bench-format data, STRICT for the rest (and for every reward)."""
    return SkipRule.SWEBENCH if task.source is Source.IMPORTED else SkipRule.STRICT


#: Parsers whose SWE-bench counterpart records a skipped test under its own name (``test ... skipped``).
_SKIPS_BY_NAME = frozenset({"django", "unittest"})


def judge(
    task: Task,
    report: TestReport,
    canary: Canary | None = None,
    skip_rule: SkipRule = SkipRule.STRICT,
    may_xfail: Callable[[str], bool] | None = None,
    absent_files: frozenset[str] = frozenset(),
) -> Judgement:
    """The verdict on `report` for `task` (see the module's table and its SKIPPED and XFAIL rules);
    `may_xfail`: whether an xfail mark of the trusted sources can apply to a test (xfail_marks.py);
    `absent_files`: files of required ids that the run cannot have (neither in the base tree nor written by
    the test patch: runner.test_directives), whose PASS_TO_PASS ids SWE-bench read from printed output.

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
    >>> unmarked = judge(task, run(a=S.XFAIL, b=S.PASSED, test_x=S.FAILED), canary, may_xfail=lambda t: False)
    >>> unmarked.outcome.value, unmarked.fail_to_pass
    ('UNRESOLVED', {'t.py::a': <TestStatus.FAILED: 'FAILED'>})
    >>> judge(task, TestReport(collected=False, note="no report")).outcome.value
    'TESTS_DID_NOT_RUN'
    """
    if report.timed_out:
        return _untrusted(task, Outcome.TIMEOUT, "the test run hit the wall-clock limit")
    if not report.collected:
        why = _hide(report.note, canary) or "the test run produced no trusted results"
        return _untrusted(task, Outcome.TESTS_DID_NOT_RUN, why)
    found = {test: _result_for(test, report) for test in [*task.FAIL_TO_PASS, *task.PASS_TO_PASS]}
    required = {test: _counted(test, result, may_xfail) for test, result in found.items()}
    unmarked = [test for test, result in required.items() if result is not found[test]]
    statuses = {test: result.status for test, result in required.items() if result is not None}
    not_counted = _not_counted(task, required, report, skip_rule, absent_files)
    status = resolved_status(statuses, task.FAIL_TO_PASS, task.PASS_TO_PASS, not_counted)
    forged = _canary_problem(report.statuses(), canary, status is ResolvedStatus.FULL, may_xfail)
    if forged:
        return _untrusted(task, Outcome.REPORT_FORGED, f"the test report cannot be believed: {forged}")
    f2p = {test: statuses.get(test) for test in task.FAIL_TO_PASS}
    p2p = {test: statuses.get(test) for test in task.PASS_TO_PASS}
    notes = [_uncounted_note(not_counted), _unmarked_note(unmarked)]
    if status is ResolvedStatus.FULL:
        return Judgement(Outcome.RESOLVED, status, f2p, p2p, "; ".join(filter(None, notes)), not_counted)
    failing = _not_passed(f2p, p2p, not_counted)
    detail = f"{len(failing)} required test(s) did not pass: {', '.join(failing[:5])}"
    return Judgement(
        Outcome.UNRESOLVED, status, f2p, p2p, "; ".join(filter(None, [detail, *notes])), not_counted
    )


def _counted(
    test_id: str, result: TestResult | None, may_xfail: Callable[[str], bool] | None
) -> TestResult | None:
    """`result`, or a FAILED one for an XFAIL that no xfail mark of the trusted sources can explain."""
    if result is None or result.status is not TestStatus.XFAIL or may_xfail is None or may_xfail(test_id):
        return result
    return dataclasses.replace(result, status=TestStatus.FAILED)


def _unmarked_note(unmarked: list[str]) -> str:
    if not unmarked:
        return ""
    return (
        f"{len(unmarked)} test(s) reported as expected failures counted as failures, since no xfail mark in "
        f"the task's test files can apply to them: {', '.join(unmarked[:5])}"
    )


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


def _not_counted(
    task: Task,
    required: dict[str, TestResult | None],
    report: TestReport,
    skip_rule: SkipRule = SkipRule.STRICT,
    absent_files: frozenset[str] = frozenset(),
) -> dict[str, str]:
    """PASS_TO_PASS ids that do not count as failures, with why (see the module's SKIPPED and test id rules).
    A FAIL_TO_PASS id always counts: nothing but its own passing result resolves a task.

    >>> task = Task("t", "o/r", "c0ffee", "", FAIL_TO_PASS=["t.py::f"], PASS_TO_PASS=["a", "[100%]"])
    >>> required = {"a": TestResult("a", TestStatus.SKIPPED, skipped_from="mark"), "[100%]": None}
    >>> _not_counted(task, required, TestReport(printed_statuses={}))
    {'[100%]': 'names no test (SWE-bench read it from printed output)'}
    >>> nested = Task("t", "o/r", "c0ffee", "", FAIL_TO_PASS=["t.py::f"], PASS_TO_PASS=["inner.py::t"])
    >>> _not_counted(nested, {"inner.py::t": None}, TestReport(), absent_files=frozenset({"inner.py"}))
    {'inner.py::t': 'names a file the run does not have (SWE-bench read it from printed output)'}
    >>> import dataclasses
    >>> django = dataclasses.replace(task, env=dataclasses.replace(task.env, log_parser="django"))
    >>> _not_counted(django, required, TestReport(), SkipRule.SWEBENCH)
    {'a': "skipped: SWE-bench's rule counts a skipped PASS_TO_PASS test as maintained"}
    """
    swebench_sees_skips = skip_rule is SkipRule.SWEBENCH and task.env.log_parser in _SKIPS_BY_NAME
    counted_off: dict[str, str] = {}
    for test_id in task.PASS_TO_PASS:
        result = required.get(test_id)
        if result is None:
            if report.printed_statuses is not None and not names_a_test(test_id):
                counted_off[test_id] = "names no test (SWE-bench read it from printed output)"
            elif id_file(test_id) in absent_files:
                counted_off[test_id] = (
                    "names a file the run does not have (SWE-bench read it from printed output)"
                )
        elif result.status is TestStatus.SKIPPED and swebench_sees_skips:
            counted_off[test_id] = (
                "skipped: SWE-bench's rule counts a skipped PASS_TO_PASS test as maintained"
            )
    return counted_off


def _uncounted_note(not_counted: dict[str, str]) -> str:
    if not not_counted:
        return ""
    shown = ", ".join(f"{test} ({why})" for test, why in list(not_counted.items())[:5])
    return f"{len(not_counted)} PASS_TO_PASS test(s) not counted: {shown}"


def _canary_problem(
    statuses: dict[str, TestStatus],
    canary: Canary | None,
    resolved: bool,
    may_xfail: Callable[[str], bool] | None = None,
) -> str:
    """Why the canary's results show a forged report ('' when they do not). An XFAIL is an honest failure
    only where a class or module xfail mark of the trusted sources can apply to the canary."""
    if canary is None:
        return ""
    seen = set()
    for test_id, status in statuses.items():
        if canary.matches(test_id):
            honest_xfail = status is TestStatus.XFAIL and may_xfail is not None and may_xfail(test_id)
            seen.add(TestStatus.FAILED if honest_xfail else status)
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


def _untrusted(task: Task, outcome: Outcome, detail: str) -> Judgement:
    return Judgement(
        outcome,
        ResolvedStatus.NO,
        dict.fromkeys(task.FAIL_TO_PASS),
        dict.fromkeys(task.PASS_TO_PASS),
        detail,
    )
