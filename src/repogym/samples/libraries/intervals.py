"""Sample library "intervals": half-open numeric intervals, merging, gaps and parsing."""

from __future__ import annotations

from repogym.samples.spec import BugSpec, Change, Edit, LibrarySpec

INTERVAL = '''"""A half-open numeric interval [start, end)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Interval:
    """The numbers x with start <= x < end. An interval with start == end is empty."""

    start: float
    end: float

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise ValueError(f"interval end {self.end} is before its start {self.start}")

    @property
    def length(self) -> float:
        return self.end - self.start

    def is_empty(self) -> bool:
        return self.start == self.end

    def contains(self, value: float) -> bool:
        return self.start <= value < self.end

    def overlaps(self, other: Interval) -> bool:
        """True when the two intervals share at least one point."""
        return self.start < other.end and other.start < self.end

    def intersection(self, other: Interval) -> Interval | None:
        start = max(self.start, other.start)
        end = min(self.end, other.end)
        if start >= end:
            return None
        return Interval(start, end)

    def shift(self, offset: float) -> Interval:
        return Interval(self.start + offset, self.end + offset)
'''

OPS = '''"""Operations on collections of intervals: merge, total length, gaps and coverage."""

from __future__ import annotations

from typing import Iterable, List

from .interval import Interval


def merge(intervals: Iterable[Interval]) -> List[Interval]:
    """Merge overlapping or touching intervals into a sorted list of disjoint ones.

    Empty intervals are dropped.
    """
    ordered = sorted((i for i in intervals if not i.is_empty()), key=lambda i: (i.start, i.end))
    merged: List[Interval] = []
    for current in ordered:
        if merged and current.start <= merged[-1].end:
            last = merged.pop()
            merged.append(Interval(last.start, max(last.end, current.end)))
        else:
            merged.append(current)
    return merged


def total_length(intervals: Iterable[Interval]) -> float:
    """Length of the union of the intervals (overlaps counted once)."""
    return sum(i.length for i in merge(intervals))


def gaps(intervals: Iterable[Interval], within: Interval) -> List[Interval]:
    """The parts of `within` not covered by any interval, in order."""
    result: List[Interval] = []
    cursor = within.start
    for interval in merge(intervals):
        if interval.end <= cursor:
            continue
        if interval.start >= within.end:
            break
        if interval.start > cursor:
            result.append(Interval(cursor, interval.start))
        cursor = max(cursor, interval.end)
    if cursor < within.end:
        result.append(Interval(cursor, within.end))
    return result


def coverage(intervals: Iterable[Interval], within: Interval) -> float:
    """Fraction of `within` covered by the intervals, between 0 and 1."""
    if within.is_empty():
        return 0.0
    uncovered = sum(gap.length for gap in gaps(intervals, within))
    return (within.length - uncovered) / within.length
'''

PARSE = '''"""Read and write intervals in the notation "[start, end)"."""

from __future__ import annotations

import re
from typing import List

from .interval import Interval

_NUMBER = r"[-+]?\\d+(?:\\.\\d+)?"
_PATTERN = re.compile(r"^\\s*\\[\\s*(" + _NUMBER + r")\\s*,\\s*(" + _NUMBER + r")\\s*\\)\\s*$")


def _number(text: str) -> float:
    value = float(text)
    return int(value) if value.is_integer() and "." not in text else value


def parse_interval(text: str) -> Interval:
    """Parse "[1, 5)" into Interval(1, 5). Only half-open intervals are accepted."""
    match = _PATTERN.match(text)
    if match is None:
        raise ValueError(f"not an interval: {text!r} (expected something like '[1, 5)')")
    return Interval(_number(match.group(1)), _number(match.group(2)))


def parse_many(text: str) -> List[Interval]:
    """Parse a sequence such as "[1, 2) [4, 6)" (any separators between the intervals)."""
    return [parse_interval(found.group(0)) for found in re.finditer(r"\\[[^\\[)]*\\)", text)]


def _fmt(value: float) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def format_interval(interval: Interval) -> str:
    return f"[{_fmt(interval.start)}, {_fmt(interval.end)})"
'''

TEST_INTERVAL = """import pytest

from __pkg__.interval import Interval


def test_length_and_emptiness():
    assert Interval(2, 5).length == 3
    assert Interval(4, 4).is_empty()
    assert not Interval(4, 5).is_empty()


def test_end_before_start_is_rejected():
    with pytest.raises(ValueError):
        Interval(5, 1)


def test_contains_start_and_inside():
    interval = Interval(0, 10)
    assert interval.contains(0)
    assert interval.contains(4.5)
    assert not interval.contains(-1)


def test_overlaps():
    assert Interval(1, 5).overlaps(Interval(3, 8))
    assert Interval(3, 8).overlaps(Interval(1, 5))
    assert not Interval(1, 2).overlaps(Interval(5, 6))


def test_intersection():
    assert Interval(1, 5).intersection(Interval(3, 8)) == Interval(3, 5)
    assert Interval(1, 2).intersection(Interval(5, 6)) is None
"""

TEST_OPS = """from __pkg__.interval import Interval
from __pkg__ import ops


def test_merge_overlapping():
    assert ops.merge([Interval(1, 4), Interval(2, 6)]) == [Interval(1, 6)]


def test_merge_keeps_disjoint_intervals():
    assert ops.merge([Interval(1, 2), Interval(4, 5)]) == [Interval(1, 2), Interval(4, 5)]


def test_merge_drops_empty_intervals():
    assert ops.merge([Interval(3, 3), Interval(4, 6)]) == [Interval(4, 6)]


def test_total_length_counts_overlap_once():
    assert ops.total_length([Interval(0, 4), Interval(2, 6), Interval(10, 11)]) == 7


def test_gaps_inside_window():
    found = ops.gaps([Interval(1, 2), Interval(4, 5)], within=Interval(0, 10))
    assert found == [Interval(0, 1), Interval(2, 4), Interval(5, 10)]


def test_coverage_half():
    assert ops.coverage([Interval(0, 5)], Interval(0, 10)) == 0.5
"""

TEST_PARSE = """import pytest

from __pkg__.interval import Interval
from __pkg__ import parse


def test_parse_interval():
    assert parse.parse_interval("[1, 5)") == Interval(1, 5)
    assert parse.parse_interval("  [0.5,2.25) ") == Interval(0.5, 2.25)


def test_parse_rejects_closed_interval():
    with pytest.raises(ValueError):
        parse.parse_interval("[1, 5]")


def test_parse_many():
    assert parse.parse_many("[1, 2) [4, 6)") == [Interval(1, 2), Interval(4, 6)]


def test_format_round_trip():
    assert parse.format_interval(Interval(1, 2.5)) == "[1, 2.5)"
    assert parse.format_interval(parse.parse_interval("[3, 7)")) == "[3, 7)"
"""

USAGE = """from __pkg__.interval import Interval
from __pkg__ import ops

busy = [Interval(9, 10.5), Interval(10, 12), Interval(14, 15)]
ops.merge(busy)                      # [Interval(9, 12), Interval(14, 15)]
ops.gaps(busy, Interval(9, 17))      # [Interval(12, 14), Interval(15, 17)]"""

SRC = "src/__pkg__/"

FEATURES = (
    Change(
        "Add clip() to cut intervals to a window",
        (
            Edit(
                SRC + "ops.py",
                "",
                '''def clip(intervals: Iterable[Interval], within: Interval) -> List[Interval]:
    """The intervals cut to `within`; parts outside it are dropped."""
    result: List[Interval] = []
    for interval in intervals:
        part = interval.intersection(within)
        if part is not None:
            result.append(part)
    return result''',
            ),
            Edit(
                "tests/test_ops.py",
                "",
                """def test_clip_to_window():
    clipped = ops.clip([Interval(0, 5), Interval(8, 12), Interval(20, 30)], Interval(2, 10))
    assert clipped == [Interval(2, 5), Interval(8, 10)]""",
            ),
        ),
        changelog="Added `ops.clip()` to cut intervals to a window.",
    ),
    Change(
        "Add format_many() as the inverse of parse_many()",
        (
            Edit(
                SRC + "parse.py",
                "",
                '''def format_many(intervals: List[Interval]) -> str:
    """Intervals written one after the other, separated by a space."""
    return " ".join(format_interval(interval) for interval in intervals)''',
            ),
            Edit(
                "tests/test_parse.py",
                "",
                """def test_format_many_round_trips():
    text = "[1, 2) [4, 6.5)"
    assert parse.format_many(parse.parse_many(text)) == text""",
            ),
        ),
        changelog="Added `parse.format_many()`.",
    ),
)

REFACTORS = (
    Change(
        "Make _number() in the parser easier to follow",
        (
            Edit(
                SRC + "parse.py",
                """def _number(text: str) -> float:
    value = float(text)
    return int(value) if value.is_integer() and "." not in text else value""",
                """def _number(text: str) -> float:
    # "3" stays an int so that formatting round-trips; "3.0" stays a float.
    if "." in text:
        return float(text)
    return int(text)""",
            ),
        ),
    ),
    Change(
        "Shorten _fmt()",
        (
            Edit(
                SRC + "parse.py",
                """    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)""",
                """    return str(int(value)) if float(value).is_integer() else str(value)""",
            ),
        ),
    ),
)

TESTS_ONLY = (
    Change(
        "Add tests for shift() and intersection of nested intervals",
        (
            Edit(
                "tests/test_interval.py",
                "",
                """def test_shift_moves_both_ends():
    assert Interval(1, 3).shift(10) == Interval(11, 13)
    assert Interval(1, 3).shift(-1) == Interval(0, 2)


def test_intersection_of_nested_intervals():
    assert Interval(0, 10).intersection(Interval(2, 3)) == Interval(2, 3)""",
            ),
        ),
    ),
)

DOCS = (
    Change(
        "docs: add a cookbook page on finding free slots",
        (
            Edit(
                "docs/cookbook.md",
                "",
                """# Cookbook

## Free slots in a calendar

Merge the busy periods, then ask for the gaps inside the working day:

```python
from __pkg__.interval import Interval
from __pkg__ import ops

busy = [Interval(9, 10), Interval(9.5, 11), Interval(13, 14)]
free = ops.gaps(busy, within=Interval(9, 17))
```

Intervals are half-open, so a meeting ending at 10 and one starting at 10 do not overlap.""",
            ),
        ),
    ),
)

BUGS = (
    BugSpec(
        slug="overlaps-touching",
        path=SRC + "interval.py",
        good="        return self.start < other.end and other.start < self.end",
        bad="        return self.start <= other.end and other.start <= self.end",
        intro_message="Use inclusive bounds in overlaps() for symmetry with merge()",
        fix_title="Fix overlaps() for intervals that only touch",
        fix_body="Intervals are half-open: [1, 3) and [3, 5) share no point, so they do not overlap.",
        test_path="tests/test_interval.py",
        regression_test="""def test_touching_intervals_do_not_overlap():
    assert not Interval(1, 3).overlaps(Interval(3, 5))
    assert not Interval(3, 5).overlaps(Interval(1, 3))""",
        issue_title="Back-to-back bookings reported as overlapping",
        issue_body="""We use __pkg__ to detect double bookings. Since the last update a meeting from 9 to 10
and one from 10 to 11 are reported as a conflict:

```
>>> from __pkg__.interval import Interval
>>> Interval(9, 10).overlaps(Interval(10, 11))
True
```

The README says intervals are half-open, so I expected False.""",
        hints=(
            "Confirmed. It only happens when the end of one interval equals the start of the other.",
            "Probably the comparison in `Interval.overlaps`; `intersection` still returns None for these.",
        ),
    ),
    BugSpec(
        slug="contains-end",
        path=SRC + "interval.py",
        good="        return self.start <= value < self.end",
        bad="        return self.start <= value <= self.end",
        intro_message="Simplify the bounds check in contains()",
        fix_title="Exclude the end point in contains()",
        fix_body="contains() must agree with the half-open definition: the end is not in the interval.",
        test_path="tests/test_interval.py",
        regression_test="""def test_contains_excludes_end():
    assert not Interval(0, 10).contains(10)
    assert Interval(0, 10).contains(9.999)""",
        issue_title="contains() is true for the end of the interval",
        issue_body="""`Interval(0, 10).contains(10)` returns True, but 10 is not in [0, 10).
We bucket timestamps with it and values on a boundary land in two buckets.""",
        hints=("Looks like an off-by-one at the upper bound only; the start is handled right.",),
    ),
    BugSpec(
        slug="merge-touching",
        path=SRC + "ops.py",
        good="        if merged and current.start <= merged[-1].end:",
        bad="        if merged and current.start < merged[-1].end:",
        intro_message="Tidy up the merge loop",
        fix_title="Merge intervals that touch",
        fix_body="merge() is documented to join touching intervals such as [1, 3) and [3, 5).",
        test_path="tests/test_ops.py",
        regression_test="""def test_merge_joins_touching_intervals():
    assert ops.merge([Interval(1, 3), Interval(3, 5)]) == [Interval(1, 5)]""",
        issue_title="merge() leaves adjacent intervals split",
        issue_body="""The docstring of merge() says touching intervals are merged, but

```
ops.merge([Interval(1, 3), Interval(3, 5)])
```

gives two intervals back instead of [1, 5).""",
        hints=("Overlapping ones are merged fine; only exactly adjacent ones stay apart.",),
    ),
    BugSpec(
        slug="merge-unsorted",
        path=SRC + "ops.py",
        good="    ordered = sorted((i for i in intervals if not i.is_empty()), key=lambda i: (i.start, i.end))",
        bad="    ordered = [i for i in intervals if not i.is_empty()]",
        intro_message="Avoid sorting twice in merge(): callers already pass sorted intervals",
        fix_title="Sort intervals before merging",
        fix_body="merge() must not assume sorted input; gaps() and total_length() rely on it too.",
        test_path="tests/test_ops.py",
        regression_test="""def test_merge_accepts_unsorted_input():
    assert ops.merge([Interval(5, 7), Interval(1, 2)]) == [Interval(1, 2), Interval(5, 7)]
    assert ops.merge([Interval(4, 8), Interval(1, 5)]) == [Interval(1, 8)]""",
        issue_title="Wrong result from merge() when intervals come in any order",
        issue_body="""I load intervals from a database without ORDER BY and merge() returns overlapping
intervals, e.g. [4, 8) then [1, 5) gives [4, 8) instead of [1, 8). total_length() is wrong too.""",
        hints=(
            "Reproduced; sorting the input first works around it.",
            "A recent change stopped merge() from sorting its input.",
        ),
    ),
    BugSpec(
        slug="gaps-covered",
        path=SRC + "ops.py",
        good="""    if cursor < within.end:
        result.append(Interval(cursor, within.end))""",
        bad="""    result.append(Interval(cursor, within.end))""",
        intro_message="Simplify the tail of gaps()",
        fix_title="Fix gaps() when the window is fully covered",
        fix_body="Only add a trailing gap when something of the window is left after the last interval.",
        test_path="tests/test_ops.py",
        regression_test="""def test_gaps_of_fully_covered_window():
    assert ops.gaps([Interval(0, 10)], within=Interval(2, 8)) == []
    assert ops.coverage([Interval(0, 10)], Interval(2, 8)) == 1.0""",
        issue_title="gaps() crashes with ValueError when nothing is free",
        issue_body="""When the busy intervals cover the whole window, gaps() raises

```
ValueError: interval end 8 is before its start 10
```

instead of returning an empty list. coverage() fails the same way.""",
        hints=("Happens whenever an interval reaches past the end of the window.",),
    ),
    BugSpec(
        slug="parse-negative",
        path=SRC + "parse.py",
        good='_NUMBER = r"[-+]?\\d+(?:\\.\\d+)?"',
        bad='_NUMBER = r"\\d+(?:\\.\\d+)?"',
        intro_message="Simplify the number pattern in the parser",
        fix_title="Accept signed numbers in parse_interval()",
        fix_body="Bounds may be negative or carry an explicit plus sign.",
        test_path="tests/test_parse.py",
        regression_test="""def test_parse_negative_bounds():
    assert parse.parse_interval("[-3, 2)") == Interval(-3, 2)
    assert parse.parse_interval("[-2.5, +1)") == Interval(-2.5, 1)""",
        issue_title="parse_interval() rejects negative numbers",
        issue_body="""`parse_interval("[-3, 2)")` raises `ValueError: not an interval`. Temperatures
below zero are a normal case for us.""",
        hints=("Positive bounds work; anything with a sign fails.",),
    ),
)

SPEC = LibrarySpec(
    kind="intervals",
    names=("spanwise", "intervalkit", "rangeset", "halfopen"),
    summary="Half-open numeric intervals: overlap tests, merging, gaps and a small parser.",
    modules={"interval.py": INTERVAL, "ops.py": OPS, "parse.py": PARSE},
    tests={"test_interval.py": TEST_INTERVAL, "test_ops.py": TEST_OPS, "test_parse.py": TEST_PARSE},
    usage=USAGE,
    features=FEATURES,
    refactors=REFACTORS,
    tests_only=TESTS_ONLY,
    docs=DOCS,
    bugs=BUGS,
)
