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
report does not name did not pass.

SKIPPED: a skipped FAIL_TO_PASS test did not pass (as in SWE-bench). A skipped PASS_TO_PASS test did not
pass either, and here repogym departs from SWE-bench, which counts it as neither a success nor a failure
("not a regression"): PASS_TO_PASS tests passed when the task was validated, in the same environment, so a
skip now was caused by the patch, and code under test can raise one (``pytest.skip()``, a broken import
under ``importorskip``) to hide a regression. An imported SWE-bench task whose PASS_TO_PASS tests skip
here fails its gold check instead of grading wrong answers as right.

The canary (canary.py) is a test the grader added that fails in any honest run; a report that does not
say so was not written by an honest run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from repogym.grading.canary import Canary
from repogym.grading.report import Outcome, ResolvedStatus, TestReport, TestStatus, resolved_status
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
    statuses = report.statuses()
    status = resolved_status(statuses, task.FAIL_TO_PASS, task.PASS_TO_PASS)
    forged = _canary_problem(statuses, canary, resolved=status is ResolvedStatus.FULL)
    if forged:
        return _untrusted(task, Outcome.REPORT_FORGED, f"the test report cannot be believed: {forged}")
    f2p = {test: statuses.get(test) for test in task.FAIL_TO_PASS}
    p2p = {test: statuses.get(test) for test in task.PASS_TO_PASS}
    if status is ResolvedStatus.FULL:
        return Verdict(Outcome.RESOLVED, status, f2p, p2p)
    failing = [t for t, s in {**f2p, **p2p}.items() if s is None or not s.ok]
    detail = f"{len(failing)} required test(s) did not pass: {', '.join(failing[:5])}"
    return Verdict(Outcome.UNRESOLVED, status, f2p, p2p, detail)


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
