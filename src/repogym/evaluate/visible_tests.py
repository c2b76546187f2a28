"""The `tests` criterion of best-of-n: how many of a task's tests that exist before the fix an attempt passes.

Those tests are the task's PASS_TO_PASS set, run as the base commit has them: graded by `repogym.grading.grade`
on a copy of the task whose required tests are its PASS_TO_PASS tests, with no test patch and no gold patch.
So the grader's guarantees hold (the candidate cannot change the test files it is judged by, a forged report
is caught by the canary and counts nothing), and neither a FAIL_TO_PASS test, nor the hidden test patch that
brings them, nor the gold patch can reach the selection. A task without PASS_TO_PASS tests has nothing to
select by: every attempt passes 0 of 0, and the tie goes to the earliest attempt, as any tie does.
"""

from __future__ import annotations

from repogym.grading.grade import grade
from repogym.grading.report import Outcome
from repogym.sandbox.pool import RuntimePool
from repogym.task import Task

#: Grades whose test statuses are an honest run's; any other ending (a refused patch, a forged report, an
#: error, a timeout) passes nothing.
_RAN = (Outcome.RESOLVED, Outcome.UNRESOLVED, Outcome.TESTS_NEED_NETWORK)


def visible_task(task: Task) -> Task:
    """`task` as the `tests` selection may see it: PASS_TO_PASS as the tests to pass, nothing hidden."""
    return task.replace(FAIL_TO_PASS=list(task.PASS_TO_PASS), PASS_TO_PASS=[], test_patch="", patch="")


def visible_tests_passed(task: Task, diff: str, runtimes: RuntimePool) -> int:
    """How many of `task`'s PASS_TO_PASS tests pass with `diff` applied to the base commit (0 without any)."""
    if not task.PASS_TO_PASS:
        return 0
    result = grade(visible_task(task), diff, runtimes=runtimes)
    if result.outcome not in _RAN:
        return 0
    return sum(1 for status in result.fail_to_pass.values() if status is not None and status.ok)
