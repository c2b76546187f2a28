"""Sample library "dates": calendar arithmetic, parsing human-written dates, durations."""

from __future__ import annotations

from repogym.samples.spec import BugSpec, Change, Edit, LibrarySpec

CALENDAR = '''"""Calendar arithmetic on datetime.date: leap years, month lengths, adding months, business days."""

from __future__ import annotations

import datetime as dt

_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def is_leap_year(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year: int, month: int) -> int:
    if not 1 <= month <= 12:
        raise ValueError(f"month must be in 1..12, got {month}")
    if month == 2 and is_leap_year(year):
        return 29
    return _DAYS_IN_MONTH[month - 1]


def add_months(day: dt.date, months: int) -> dt.date:
    """`day` moved by `months` calendar months; the day of the month is clamped (Jan 31 + 1 month = Feb 28/29)."""
    index = day.year * 12 + (day.month - 1) + months
    year, month = divmod(index, 12)
    month += 1
    return dt.date(year, month, min(day.day, days_in_month(year, month)))


def business_days_between(start: dt.date, end: dt.date) -> int:
    """Weekdays (Monday to Friday) in [start, end); negative when end is before start."""
    if end < start:
        return -business_days_between(end, start)
    full_weeks, remainder = divmod((end - start).days, 7)
    count = full_weeks * 5
    for offset in range(remainder):
        if (start + dt.timedelta(days=offset)).weekday() < 5:
            count += 1
    return count
'''

PARSING = '''"""Parse dates as people write them: "2024-03-05", "05/03/2024" (day first), "March 5, 2024", "5 Mar 2024"."""

from __future__ import annotations

import datetime as dt
import re

_MONTH_NAMES = (
    ("jan", "january"),
    ("feb", "february"),
    ("mar", "march"),
    ("apr", "april"),
    ("may",),
    ("jun", "june"),
    ("jul", "july"),
    ("aug", "august"),
    ("sep", "sept", "september"),
    ("oct", "october"),
    ("nov", "november"),
    ("dec", "december"),
)
MONTHS = {name: number for number, names in enumerate(_MONTH_NAMES, start=1) for name in names}

_ISO = re.compile(r"^(\\d{4})-(\\d{1,2})-(\\d{1,2})$")
_NUMERIC = re.compile(r"^(\\d{1,2})[/.](\\d{1,2})[/.](\\d{4})$")
_MONTH_FIRST = re.compile(r"^([A-Za-z]+)\\.? (\\d{1,2}),? (\\d{4})$")
_DAY_FIRST = re.compile(r"^(\\d{1,2}) ([A-Za-z]+)\\.?,? (\\d{4})$")


def parse_date(text: str, day_first: bool = True) -> dt.date:
    """Parse `text` into a date; numeric dates are read day first unless day_first=False."""
    cleaned = " ".join(text.split())
    match = _ISO.match(cleaned)
    if match:
        year, month, day = (int(part) for part in match.groups())
        return _build(year, month, day, text)
    match = _NUMERIC.match(cleaned)
    if match:
        first, second, year = (int(part) for part in match.groups())
        day, month = (first, second) if day_first else (second, first)
        return _build(year, month, day, text)
    match = _MONTH_FIRST.match(cleaned)
    if match:
        return _build(int(match.group(3)), _month(match.group(1), text), int(match.group(2)), text)
    match = _DAY_FIRST.match(cleaned)
    if match:
        return _build(int(match.group(3)), _month(match.group(2), text), int(match.group(1)), text)
    raise ValueError(f"unrecognised date: {text!r}")


def _month(name: str, text: str) -> int:
    number = MONTHS.get(name.lower())
    if number is None:
        raise ValueError(f"unknown month {name!r} in {text!r}")
    return number


def _build(year: int, month: int, day: int, text: str) -> dt.date:
    try:
        return dt.date(year, month, day)
    except ValueError as exc:
        raise ValueError(f"invalid date {text!r}: {exc}") from None
'''

DURATIONS = '''"""Durations written as "1h30m", "2d 4h" or "45s", and back."""

from __future__ import annotations

import re

_UNITS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}
_PART = re.compile(r"(\\d+)([wdhms])")


def parse_duration(text: str) -> int:
    """Seconds in `text`, e.g. parse_duration("1h30m") == 5400. Units: w, d, h, m, s."""
    compact = text.replace(" ", "").lower()
    if not compact:
        raise ValueError("empty duration")
    position = 0
    total = 0
    for match in _PART.finditer(compact):
        if match.start() != position:
            raise ValueError(f"unexpected {compact[position:match.start()]!r} in duration {text!r}")
        total += int(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    if position != len(compact):
        raise ValueError(f"unexpected {compact[position:]!r} in duration {text!r}")
    return total


def format_duration(seconds: int) -> str:
    """"1h 30m" for 5400 and "0s" for 0: largest units first, zero parts left out."""
    if seconds < 0:
        return "-" + format_duration(-seconds)
    if seconds == 0:
        return "0s"
    parts = []
    for unit, size in _UNITS.items():
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return " ".join(parts)
'''

TEST_CALENDAR = """import datetime as dt

import pytest

from __pkg__ import calendar_math as cal


def test_leap_years():
    assert cal.is_leap_year(2024)
    assert not cal.is_leap_year(2023)
    assert not cal.is_leap_year(1900)


def test_days_in_month():
    assert cal.days_in_month(2024, 2) == 29
    assert cal.days_in_month(2023, 2) == 28
    assert cal.days_in_month(2023, 4) == 30
    with pytest.raises(ValueError):
        cal.days_in_month(2023, 13)


def test_add_months():
    assert cal.add_months(dt.date(2024, 1, 15), 1) == dt.date(2024, 2, 15)
    assert cal.add_months(dt.date(2023, 11, 10), 3) == dt.date(2024, 2, 10)
    assert cal.add_months(dt.date(2024, 3, 10), -2) == dt.date(2024, 1, 10)


def test_business_days_between():
    monday = dt.date(2024, 3, 4)
    assert cal.business_days_between(monday, monday + dt.timedelta(days=7)) == 5
    assert cal.business_days_between(monday, dt.date(2024, 3, 6)) == 2
    assert cal.business_days_between(dt.date(2024, 3, 6), monday) == -2
"""

TEST_PARSING = """import datetime as dt

import pytest

from __pkg__.parsing import parse_date


def test_iso_dates():
    assert parse_date("2024-03-05") == dt.date(2024, 3, 5)


def test_numeric_dates_are_day_first():
    assert parse_date("05/03/2024") == dt.date(2024, 3, 5)
    assert parse_date("5.3.2024") == dt.date(2024, 3, 5)


def test_month_names():
    assert parse_date("March 5, 2024") == dt.date(2024, 3, 5)
    assert parse_date("5 Mar 2024") == dt.date(2024, 3, 5)
    assert parse_date("Sept. 30, 2023") == dt.date(2023, 9, 30)


def test_invalid_dates():
    with pytest.raises(ValueError):
        parse_date("2024-02-30")
    with pytest.raises(ValueError):
        parse_date("Smarch 5, 2024")
"""

TEST_DURATIONS = """import pytest

from __pkg__.durations import format_duration, parse_duration


def test_parse_duration():
    assert parse_duration("1h30m") == 5400
    assert parse_duration("45 s") == 45


def test_parse_duration_rejects_unknown_units():
    with pytest.raises(ValueError):
        parse_duration("1x2h")


def test_format_duration():
    assert format_duration(5400) == "1h 30m"
    assert format_duration(90) == "1m 30s"
    assert format_duration(-90) == "-1m 30s"
"""

USAGE = """import datetime as dt
from __pkg__.parsing import parse_date
from __pkg__ import calendar_math

due = calendar_math.add_months(parse_date("31 Jan 2024"), 1)   # 2024-02-29
calendar_math.business_days_between(dt.date.today(), due)
"""

SRC = "src/__pkg__/"

FEATURES = (
    Change(
        "Add quarter()",
        (
            Edit(
                SRC + "calendar_math.py",
                "",
                '''def quarter(day: dt.date) -> int:
    """The quarter of the year (1 to 4) that `day` falls in."""
    return (day.month - 1) // 3 + 1''',
            ),
            Edit(
                "tests/test_calendar_math.py",
                "",
                """def test_quarter():
    assert cal.quarter(dt.date(2024, 1, 1)) == 1
    assert cal.quarter(dt.date(2024, 5, 31)) == 2
    assert cal.quarter(dt.date(2024, 12, 31)) == 4""",
            ),
        ),
        changelog="Added `calendar_math.quarter()`.",
    ),
    Change(
        "Add parse_date_or_none() for optional fields",
        (
            Edit(
                SRC + "parsing.py",
                "",
                '''def parse_date_or_none(text: str, day_first: bool = True):
    """Like parse_date(), but None for empty or unparsable text."""
    if not text or not text.strip():
        return None
    try:
        return parse_date(text, day_first=day_first)
    except ValueError:
        return None''',
            ),
            Edit(
                "tests/test_parsing.py",
                "",
                """def test_parse_date_or_none():
    from __pkg__.parsing import parse_date_or_none

    assert parse_date_or_none("") is None
    assert parse_date_or_none("not a date") is None
    assert parse_date_or_none("2024-03-05") == dt.date(2024, 3, 5)""",
            ),
        ),
        changelog="Added `parsing.parse_date_or_none()`.",
    ),
)

REFACTORS = (
    Change(
        "Look up month names with a KeyError handler",
        (
            Edit(
                SRC + "parsing.py",
                """    number = MONTHS.get(name.lower())
    if number is None:
        raise ValueError(f"unknown month {name!r} in {text!r}")
    return number""",
                """    try:
        return MONTHS[name.lower()]
    except KeyError:
        raise ValueError(f"unknown month {name!r} in {text!r}") from None""",
            ),
        ),
    ),
    Change(
        "Do not reuse the seconds argument as a loop variable",
        (
            Edit(
                SRC + "durations.py",
                """    parts = []
    for unit, size in _UNITS.items():
        count, seconds = divmod(seconds, size)""",
                """    parts = []
    remaining = seconds
    for unit, size in _UNITS.items():
        count, remaining = divmod(remaining, size)""",
            ),
        ),
    ),
)

TESTS_ONLY = (
    Change(
        "Test durations with days and all units",
        (
            Edit(
                "tests/test_durations.py",
                "",
                '''def test_days_and_spaces():
    assert parse_duration("2d 4h") == 187200


def test_format_all_units():
    assert format_duration(90061) == "1d 1h 1m 1s"''',
            ),
        ),
    ),
)

DOCS = (
    Change(
        "docs: list the accepted date formats",
        (
            Edit(
                "docs/formats.md",
                "",
                """# Accepted formats

| input | meaning |
| --- | --- |
| `2024-03-05` | ISO 8601 |
| `05/03/2024`, `5.3.2024` | day first (pass `day_first=False` for month first) |
| `March 5, 2024`, `Sept. 5, 2024` | month name first |
| `5 Mar 2024` | day first with a month name |

Durations: `1h30m`, `2d 4h`, `45s`; units w, d, h, m and s.""",
            ),
        ),
    ),
)

BUGS = (
    BugSpec(
        slug="leap-century",
        path=SRC + "calendar_math.py",
        good="    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)",
        bad="    return year % 4 == 0 and year % 100 != 0",
        intro_message="Simplify is_leap_year()",
        fix_title="Treat years divisible by 400 as leap years",
        fix_body="2000 and 2400 are leap years: the century rule has an exception every 400 years.",
        test_path="tests/test_calendar_math.py",
        regression_test="""def test_years_divisible_by_400_are_leap():
    assert cal.is_leap_year(2000)
    assert cal.days_in_month(2000, 2) == 29""",
        issue_title="February 2000 has 28 days according to days_in_month()",
        issue_body="""Our historical reports drop 29 February 2000:

```
>>> calendar_math.days_in_month(2000, 2)
28
```

2000 was a leap year.""",
        hints=("1900 is correctly not a leap year; 2000 should be one (divisible by 400).",),
    ),
    BugSpec(
        slug="add-months-clamp",
        path=SRC + "calendar_math.py",
        good="    return dt.date(year, month, min(day.day, days_in_month(year, month)))",
        bad="    return dt.date(year, month, day.day)",
        intro_message="Build the result of add_months() directly",
        fix_title="Clamp the day of the month in add_months()",
        fix_body="Adding a month to 31 January gives the last day of February, as documented.",
        test_path="tests/test_calendar_math.py",
        regression_test="""def test_add_months_clamps_to_month_end():
    assert cal.add_months(dt.date(2023, 1, 31), 1) == dt.date(2023, 2, 28)
    assert cal.add_months(dt.date(2024, 3, 31), 1) == dt.date(2024, 4, 30)""",
        issue_title="add_months() raises ValueError at the end of the month",
        issue_body="""Scheduling monthly invoices fails for customers who signed up on the 31st:

```
>>> calendar_math.add_months(date(2023, 1, 31), 1)
ValueError: day is out of range for month
```""",
        hints=("The docstring promises clamping to the end of the shorter month.",),
    ),
    BugSpec(
        slug="add-months-negative",
        path=SRC + "calendar_math.py",
        good="""    index = day.year * 12 + (day.month - 1) + months
    year, month = divmod(index, 12)""",
        bad="""    year = day.year + int((day.month - 1 + months) / 12)
    month = (day.month - 1 + months) % 12""",
        intro_message="Compute year and month separately in add_months()",
        fix_title="Fix add_months() going back across a year boundary",
        fix_body="int() truncates towards zero; going back from January must land in the previous year.",
        test_path="tests/test_calendar_math.py",
        regression_test="""def test_add_negative_months_across_new_year():
    assert cal.add_months(dt.date(2024, 1, 15), -1) == dt.date(2023, 12, 15)
    assert cal.add_months(dt.date(2024, 2, 1), -14) == dt.date(2022, 12, 1)""",
        issue_title="Going back one month from January lands in December of the same year",
        issue_body="""`add_months(date(2024, 1, 15), -1)` returns 2024-12-15 instead of 2023-12-15.
Forward steps across the new year work.""",
        hints=("Only negative steps that cross into an earlier year.",),
    ),
    BugSpec(
        slug="business-days-saturday",
        path=SRC + "calendar_math.py",
        good="        if (start + dt.timedelta(days=offset)).weekday() < 5:",
        bad="        if (start + dt.timedelta(days=offset)).weekday() <= 5:",
        intro_message="Simplify the weekday test in business_days_between()",
        fix_title="Do not count Saturdays as business days",
        fix_body="weekday() is 5 for Saturday; only 0-4 are business days.",
        test_path="tests/test_calendar_math.py",
        regression_test="""def test_weekend_is_not_counted():
    friday, monday = dt.date(2024, 3, 1), dt.date(2024, 3, 4)
    assert cal.business_days_between(friday, monday) == 1""",
        issue_title="business_days_between() counts Saturdays",
        issue_body="""From Friday 1 March 2024 to Monday 4 March there is one business day (the Friday),
but `business_days_between` returns 2. Whole weeks come out right.""",
        hints=("Only ranges that are not whole weeks and include a Saturday.",),
    ),
    BugSpec(
        slug="month-first-dates",
        path=SRC + "parsing.py",
        good="        day, month = (first, second) if day_first else (second, first)",
        bad="        day, month = first, second",
        intro_message="Simplify the numeric branch of parse_date()",
        fix_title="Honour day_first=False for numeric dates",
        fix_body="US-style dates (month first) were read day first even with day_first=False.",
        test_path="tests/test_parsing.py",
        regression_test="""def test_month_first_numeric_dates():
    assert parse_date("03/05/2024", day_first=False) == dt.date(2024, 3, 5)
    assert parse_date("12/31/2023", day_first=False) == dt.date(2023, 12, 31)""",
        issue_title="day_first=False is ignored",
        issue_body="""Importing a CSV from our US office: `parse_date("12/31/2023", day_first=False)` raises
`ValueError: invalid date '12/31/2023': month must be in 1..12`. It looks like the flag has no effect.""",
        hints=("ISO dates and month names are unaffected; only the numeric form.",),
    ),
    BugSpec(
        slug="format-zero-duration",
        path=SRC + "durations.py",
        good="""        return "-" + format_duration(-seconds)
    if seconds == 0:
        return "0s"
""",
        bad="""        return "-" + format_duration(-seconds)
""",
        intro_message="Let the unit loop handle zero in format_duration()",
        fix_title='format_duration(0) returns "0s" again',
        fix_body="An empty string is not a duration; zero is written as 0s.",
        test_path="tests/test_durations.py",
        regression_test="""def test_format_zero():
    assert format_duration(0) == "0s"
    assert parse_duration(format_duration(0)) == 0""",
        issue_title="format_duration(0) returns an empty string",
        issue_body="""Our job table shows an empty cell for jobs that took no time; `format_duration(0)`
returns `""`. Parsing that back with `parse_duration` raises "empty duration".""",
        hints=("Negative and positive values are fine.",),
    ),
)

SPEC = LibrarySpec(
    kind="dates",
    names=("datewise", "almanac", "calendarist", "whenparse"),
    summary="Calendar arithmetic, forgiving date parsing and human-readable durations.",
    modules={"calendar_math.py": CALENDAR, "parsing.py": PARSING, "durations.py": DURATIONS},
    tests={
        "test_calendar_math.py": TEST_CALENDAR,
        "test_parsing.py": TEST_PARSING,
        "test_durations.py": TEST_DURATIONS,
    },
    usage=USAGE,
    features=FEATURES,
    refactors=REFACTORS,
    tests_only=TESTS_ONLY,
    docs=DOCS,
    bugs=BUGS,
)
