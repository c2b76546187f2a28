"""How long a candidate's test run may take when it is graded for a reward or an eval: a limit from the
task's validated test time, not the sandbox's ten-minute default.

A model's answer can make the tests loop forever (the quickstart's GRPO model once wrote a digit-grouping
loop that never ends, in a held-out eval). Under the default limit that one answer holds a grading worker
for ten minutes, in every eval and every GRPO step that samples it. Validation measured how long the
task's tests take (`metadata["validation"]["timings"]` with `metadata["validation"]["runs"]`), so a grade
can stop a run that takes many times as long. Tasks without that record (SWE-bench imports, hand-written
ones) keep the limits they were given. `repogym grade` does not use this: its `--timeout` is the user's.
"""

from __future__ import annotations

from repogym.sandbox.base import Limits
from repogym.task import Task
from repogym.taskmeta import ValidationRecord

#: A graded test run may take this many times the slowest validated run, plus a third of the floor...
GRADE_FACTOR = 10.0
#: ...and never less than this: a loaded machine, a cold import cache or a slower answer is not a timeout.
GRADE_FLOOR_S = 60.0

#: The phase timings validation records (validate.py: before_s / after_s; synthetic.py: clean_s / before_s),
#: each the total of `runs` runs of the task's tests.
_PHASES = ("before_s", "after_s", "clean_s")


def validated_run_s(task: Task) -> float | None:
    """Seconds of the slowest phase validation recorded, per run; None when the task has no such record."""
    validation = ValidationRecord.of(task)
    if validation.runs < 1:
        return None
    timings = validation.timings
    phases = [
        float(timings[name])
        for name in _PHASES
        if isinstance(timings.get(name), int | float) and not isinstance(timings.get(name), bool)
    ]
    return max(phases) / validation.runs if phases else None


def capped(limits: Limits, run_s: float, factor: float, floor_s: float) -> Limits:
    """`limits` with the wall limit cut to `factor` times a run of `run_s` plus a third of `floor_s`, at least
    `floor_s`; never raised above `limits.wall_s`.

    >>> capped(Limits(wall_s=600), 2.0, 10, 60).wall_s
    60.0
    >>> capped(Limits(wall_s=600), 30.0, 10, 60).wall_s
    320.0
    >>> capped(Limits(wall_s=100), 30.0, 10, 60).wall_s
    100.0
    """
    wall = float(min(limits.wall_s, max(floor_s, factor * run_s + floor_s / 3)))
    return limits.model_copy(update={"wall_s": wall})


def grade_limits(task: Task, limits: Limits, timeout_s: float | None = None) -> Limits:
    """The limits of a candidate's graded test run: `timeout_s` of wall time when given, else `limits` cut
    from the task's validated test time (GRADE_FACTOR, GRADE_FLOOR_S), else `limits` as they are."""
    if timeout_s is not None:
        return limits.with_timeout(timeout_s)
    measured = validated_run_s(task)
    return limits if measured is None else capped(limits, measured, GRADE_FACTOR, GRADE_FLOOR_S)
