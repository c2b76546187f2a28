"""Sample library "calculator": an expression evaluator, descriptive statistics and rounding helpers."""

from __future__ import annotations

from repogym.samples.spec import BugSpec, Change, Edit, LibrarySpec

TOKENIZER = '''"""Split arithmetic expressions such as "2 * (3 + 4.5)" into tokens."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List

OPERATORS = "+-*/^%"


@dataclass(frozen=True)
class Token:
    kind: str  # "number", "op", "lparen" or "rparen"
    text: str
    position: int


def tokenize(expression: str) -> List[Token]:
    """Tokens of `expression`; raises ValueError naming the position of a bad character."""
    tokens: List[Token] = []
    i = 0
    while i < len(expression):
        char = expression[i]
        if char.isspace():
            i += 1
            continue
        if char.isdigit() or char == ".":
            start = i
            while i < len(expression) and (expression[i].isdigit() or expression[i] == "."):
                i += 1
            text = expression[start:i]
            if text.count(".") > 1 or text == ".":
                raise ValueError(f"malformed number {text!r} at position {start}")
            tokens.append(Token("number", text, start))
            continue
        if char in OPERATORS:
            tokens.append(Token("op", char, i))
        elif char == "(":
            tokens.append(Token("lparen", char, i))
        elif char == ")":
            tokens.append(Token("rparen", char, i))
        else:
            raise ValueError(f"unexpected character {char!r} at position {i}")
        i += 1
    return tokens
'''

EVALUATOR = '''"""Evaluate arithmetic expressions with the usual precedence rules.

Grammar, from the lowest precedence to the highest::

    expr   := term (("+" | "-") term)*
    term   := unary (("*" | "/" | "%") unary)*
    unary  := ("-" | "+") unary | power
    power  := atom ("^" unary)?
    atom   := NUMBER | "(" expr ")"

"^" is right-associative and binds tighter than a minus sign on its left,
so "-2 ^ 2" is -4 and "2 ^ 3 ^ 2" is 512, as in mathematics.
"""

from __future__ import annotations

from typing import List, Optional

from .tokenizer import Token, tokenize


class _Parser:
    def __init__(self, tokens: List[Token]) -> None:
        self.tokens = tokens
        self.index = 0

    def peek(self) -> Optional[Token]:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def take(self) -> Token:
        token = self.peek()
        if token is None:
            raise ValueError("unexpected end of expression")
        self.index += 1
        return token

    def expr(self) -> float:
        value = self.term()
        while self._next_is("+", "-"):
            op = self.take().text
            right = self.term()
            value = value + right if op == "+" else value - right
        return value

    def term(self) -> float:
        value = self.unary()
        while self._next_is("*", "/", "%"):
            op = self.take().text
            right = self.unary()
            if op == "*":
                value = value * right
            elif right == 0:
                raise ZeroDivisionError("division by zero in expression")
            elif op == "/":
                value = value / right
            else:
                value = value % right
        return value

    def unary(self) -> float:
        if self._next_is("-", "+"):
            op = self.take().text
            operand = self.unary()
            return -operand if op == "-" else operand
        return self.power()

    def power(self) -> float:
        base = self.atom()
        if self._next_is("^"):
            self.take()
            return base ** self.unary()
        return base

    def atom(self) -> float:
        token = self.take()
        if token.kind == "number":
            return float(token.text)
        if token.kind == "lparen":
            value = self.expr()
            closing = self.take()
            if closing.kind != "rparen":
                raise ValueError(f"expected ')' at position {closing.position}")
            return value
        raise ValueError(f"unexpected {token.text!r} at position {token.position}")

    def _next_is(self, *ops: str) -> bool:
        token = self.peek()
        return token is not None and token.kind == "op" and token.text in ops


def evaluate(expression: str) -> float:
    """The value of `expression`, e.g. evaluate("2 * (3 + 4)") == 14.0."""
    parser = _Parser(tokenize(expression))
    if parser.peek() is None:
        raise ValueError("empty expression")
    value = parser.expr()
    leftover = parser.peek()
    if leftover is not None:
        raise ValueError(f"unexpected {leftover.text!r} at position {leftover.position}")
    return value
'''

STATS = '''"""Descriptive statistics for sequences of numbers."""

from __future__ import annotations

import math
from typing import Sequence


def mean(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("mean() of an empty sequence")
    return sum(values) / len(values)


def median(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("median() of an empty sequence")
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2 == 1:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def variance(values: Sequence[float], sample: bool = True) -> float:
    """Sample variance (divides by n - 1) by default; population variance with sample=False."""
    n = len(values)
    if n == 0:
        raise ValueError("variance() of an empty sequence")
    if sample and n < 2:
        raise ValueError("sample variance needs at least two values")
    centre = mean(values)
    squares = sum((v - centre) ** 2 for v in values)
    return squares / (n - 1 if sample else n)


def stdev(values: Sequence[float], sample: bool = True) -> float:
    return math.sqrt(variance(values, sample=sample))


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0 <= q <= 100), interpolating linearly between ranks."""
    if not values:
        raise ValueError("percentile() of an empty sequence")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be between 0 and 100, got {q}")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    lower = math.floor(rank)
    upper = min(lower + 1, len(ordered) - 1)
    fraction = rank - lower
    return ordered[lower] + (ordered[upper] - ordered[lower]) * fraction
'''

ROUNDING = '''"""Rounding and number formatting for reports."""

from __future__ import annotations

import math


def round_half_up(value: float, digits: int = 0) -> float:
    """Round halves away from zero (2.5 -> 3, -2.5 -> -3), unlike round()'s banker's rounding."""
    factor = 10 ** digits
    scaled = abs(value) * factor
    rounded = math.floor(scaled + 0.5) / factor
    return math.copysign(rounded, value)


def format_thousands(value: float, separator: str = ",", digits: int = 0) -> str:
    """Format 1234567.891 as "1,234,568" (digits=0) or "1,234,567.89" (digits=2)."""
    rounded = round_half_up(value, digits)
    sign = "-" if rounded < 0 else ""
    text = f"{abs(rounded):.{digits}f}"
    whole, _, fraction = text.partition(".")
    groups = []
    while len(whole) > 3:
        groups.insert(0, whole[-3:])
        whole = whole[:-3]
    groups.insert(0, whole)
    result = sign + separator.join(groups)
    return result + "." + fraction if fraction else result


def clamp(value: float, low: float, high: float) -> float:
    if low > high:
        raise ValueError(f"clamp() low {low} is above high {high}")
    return max(low, min(value, high))
'''

TEST_EVALUATOR = """import pytest

from __pkg__.evaluator import evaluate


def test_precedence():
    assert evaluate("2 + 3 * 4") == 14
    assert evaluate("(2 + 3) * 4") == 20


def test_unary_minus_and_power():
    assert evaluate("-3 + 5") == 2
    assert evaluate("2 ^ 3") == 8
    assert evaluate("-2 ^ 2") == -4


def test_division_and_modulo():
    assert evaluate("7 / 2") == 3.5
    assert evaluate("7 % 4") == 3


def test_division_by_zero():
    with pytest.raises(ZeroDivisionError):
        evaluate("1 / (2 - 2)")


def test_bad_input():
    with pytest.raises(ValueError):
        evaluate("2 +")
    with pytest.raises(ValueError):
        evaluate("2 $ 3")
"""

TEST_STATS = """import pytest

from __pkg__ import stats


def test_mean():
    assert stats.mean([1, 2, 3, 4]) == 2.5


def test_median_odd_length():
    assert stats.median([3, 1, 2]) == 2
    assert stats.median([5]) == 5


def test_variance_and_stdev():
    assert stats.variance([1, 2, 3, 4]) == pytest.approx(1.6666666, rel=1e-6)
    assert stats.stdev([2, 4, 4, 4, 5, 5, 7, 9]) == pytest.approx(2.13808993, rel=1e-6)


def test_percentile_interpolates():
    assert stats.percentile([1, 2, 3, 4, 5], 50) == 3
    assert stats.percentile([10, 20, 30, 40], 25) == 17.5


def test_empty_input_is_an_error():
    with pytest.raises(ValueError):
        stats.mean([])
"""

TEST_ROUNDING = """from __pkg__ import rounding


def test_round_half_up():
    assert rounding.round_half_up(2.5) == 3
    assert rounding.round_half_up(3.14159, 2) == 3.14
    assert rounding.round_half_up(-2.6) == -3


def test_format_thousands():
    assert rounding.format_thousands(1234567.891) == "1,234,568"
    assert rounding.format_thousands(1234567.891, digits=2) == "1,234,567.89"
    assert rounding.format_thousands(999) == "999"


def test_clamp():
    assert rounding.clamp(15, 0, 10) == 10
    assert rounding.clamp(-1, 0, 10) == 0
"""

USAGE = """from __pkg__.evaluator import evaluate
from __pkg__ import stats

evaluate("2 * (3 + 4) ^ 2")          # 98.0
stats.percentile([12, 15, 11, 20], 90)
"""

SRC = "src/__pkg__/"

FEATURES = (
    Change(
        "Add mode() to stats",
        (
            Edit(
                SRC + "stats.py",
                "",
                '''def mode(values: Sequence[float]) -> float:
    """The most frequent value; the smallest one wins a tie."""
    if not values:
        raise ValueError("mode() of an empty sequence")
    counts = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return min(counts, key=lambda value: (-counts[value], value))''',
            ),
            Edit(
                "tests/test_stats.py",
                "",
                """def test_mode():
    assert stats.mode([1, 2, 2, 3]) == 2
    assert stats.mode([4, 1, 4, 1]) == 1""",
            ),
        ),
        changelog="Added `stats.mode()`.",
    ),
    Change(
        "Add format_percent()",
        (
            Edit(
                SRC + "rounding.py",
                "",
                '''def format_percent(fraction: float, digits: int = 1) -> str:
    """0.125 -> "12.5%"."""
    return f"{round_half_up(fraction * 100, digits):.{digits}f}%"''',
            ),
            Edit(
                "tests/test_rounding.py",
                "",
                '''def test_format_percent():
    assert rounding.format_percent(0.125) == "12.5%"
    assert rounding.format_percent(1) == "100.0%"''',
            ),
        ),
        changelog="Added `rounding.format_percent()`.",
    ),
)

REFACTORS = (
    Change(
        "Look up bracket tokens in a table",
        (
            Edit(
                SRC + "tokenizer.py",
                'OPERATORS = "+-*/^%"\n',
                'OPERATORS = "+-*/^%"\n_BRACKETS = {"(": "lparen", ")": "rparen"}\n',
            ),
            Edit(
                SRC + "tokenizer.py",
                """        if char in OPERATORS:
            tokens.append(Token("op", char, i))
        elif char == "(":
            tokens.append(Token("lparen", char, i))
        elif char == ")":
            tokens.append(Token("rparen", char, i))
        else:
            raise ValueError(f"unexpected character {char!r} at position {i}")""",
                """        kind = "op" if char in OPERATORS else _BRACKETS.get(char)
        if kind is None:
            raise ValueError(f"unexpected character {char!r} at position {i}")
        tokens.append(Token(kind, char, i))""",
            ),
        ),
    ),
    Change(
        "Move digit grouping into a helper",
        (
            Edit(
                SRC + "rounding.py",
                """    groups = []
    while len(whole) > 3:
        groups.insert(0, whole[-3:])
        whole = whole[:-3]
    groups.insert(0, whole)
    result = sign + separator.join(groups)""",
                """    result = sign + _group_digits(whole, separator)""",
            ),
            Edit(
                SRC + "rounding.py",
                "",
                '''def _group_digits(digits: str, separator: str) -> str:
    """'1234567' -> '1,234,567' with separator ','."""
    groups = []
    while len(digits) > 3:
        groups.insert(0, digits[-3:])
        digits = digits[:-3]
    groups.insert(0, digits)
    return separator.join(groups)''',
            ),
        ),
    ),
)

TESTS_ONLY = (
    Change(
        "Test population variance and clamp's argument check",
        (
            Edit(
                "tests/test_stats.py",
                "",
                """def test_population_variance():
    assert stats.variance([2, 4, 4, 4, 5, 5, 7, 9], sample=False) == 4""",
            ),
            Edit(
                "tests/test_rounding.py",
                "",
                """def test_clamp_rejects_inverted_bounds():
    import pytest

    with pytest.raises(ValueError):
        rounding.clamp(1, 10, 0)""",
            ),
        ),
    ),
)

DOCS = (
    Change(
        "docs: describe the expression grammar",
        (
            Edit(
                "docs/grammar.md",
                "",
                """# Expression grammar

`evaluate()` accepts numbers, `+ - * / % ^` and parentheses.

| operator | precedence | associativity |
| --- | --- | --- |
| `+ -` | lowest | left |
| `* / %` | | left |
| unary `-` | | right |
| `^` | highest | right |

So `2 ^ 3 ^ 2` is `2 ^ 9`, and `-2 ^ 2` is `-(2 ^ 2)`.""",
            ),
        ),
    ),
)

BUGS = (
    BugSpec(
        slug="number-leading-dot",
        path=SRC + "tokenizer.py",
        good='        if char.isdigit() or char == ".":',
        bad="        if char.isdigit():",
        intro_message="Start number tokens on digits only",
        fix_title="Accept numbers written with a leading decimal point",
        fix_body='Numbers such as ".5" are valid input and were tokenized until recently.',
        test_path="tests/test_evaluator.py",
        regression_test="""def test_leading_decimal_point():
    assert evaluate(".5 + 1") == 1.5
    assert evaluate("2 * .25") == 0.5""",
        issue_title='Expressions like ".5 * 4" are rejected',
        issue_body="""Our users type amounts such as `.5` and get

```
ValueError: unexpected character '.' at position 0
```

`0.5 * 4` works fine.""",
        hints=("Only numbers that start with the decimal point are affected.",),
    ),
    BugSpec(
        slug="power-associativity",
        path=SRC + "evaluator.py",
        good="""    def power(self) -> float:
        base = self.atom()
        if self._next_is("^"):
            self.take()
            return base ** self.unary()
        return base""",
        bad="""    def power(self) -> float:
        value = self.atom()
        while self._next_is("^"):
            self.take()
            value = value ** self.atom()
        return value""",
        intro_message="Parse chains of ^ in a loop instead of recursing",
        fix_title="Make ^ right-associative again",
        fix_body='"2 ^ 3 ^ 2" means 2 ^ (3 ^ 2) = 512; negative exponents must parse too.',
        test_path="tests/test_evaluator.py",
        regression_test="""def test_power_is_right_associative():
    assert evaluate("2 ^ 3 ^ 2") == 512


def test_negative_exponent():
    assert evaluate("2 ^ -1") == 0.5""",
        issue_title="2 ^ 3 ^ 2 gives 64",
        issue_body="""`evaluate("2 ^ 3 ^ 2")` returns 64.0, but the docs say ^ is right-associative, which
gives 512. Also `evaluate("2 ^ -1")` raises `ValueError: unexpected '-'`.""",
        hints=(
            "Single powers are fine, only chains and signed exponents are broken.",
            "The grammar in the module docstring says power := atom ('^' unary)?",
        ),
    ),
    BugSpec(
        slug="trailing-tokens",
        path=SRC + "evaluator.py",
        good="""    value = parser.expr()
    leftover = parser.peek()
    if leftover is not None:
        raise ValueError(f"unexpected {leftover.text!r} at position {leftover.position}")
    return value""",
        bad="""    return parser.expr()""",
        intro_message="Return the parsed value directly from evaluate()",
        fix_title="Reject input left over after a complete expression",
        fix_body="evaluate() silently ignored everything after the first complete expression.",
        test_path="tests/test_evaluator.py",
        regression_test="""def test_trailing_input_is_an_error():
    with pytest.raises(ValueError):
        evaluate("2 3")
    with pytest.raises(ValueError):
        evaluate("(1 + 2))")""",
        issue_title='evaluate("2 3") returns 2 instead of an error',
        issue_body="""A typo in a formula (a missing operator) is not reported: `evaluate("12 5")` returns 12.
I would expect a ValueError like for other malformed input.""",
        hints=("Same with an extra closing parenthesis: `evaluate('(1 + 2))')` returns 3.",),
    ),
    BugSpec(
        slug="median-even",
        path=SRC + "stats.py",
        good="    middle = len(ordered) // 2",
        bad="    middle = (len(ordered) - 1) // 2",
        intro_message="Compute the median index from the last position",
        fix_title="Fix median() of an even number of values",
        fix_body="The two middle values are at n // 2 - 1 and n // 2.",
        test_path="tests/test_stats.py",
        regression_test="""def test_median_even_length():
    assert stats.median([1, 2, 3, 4]) == 2.5
    assert stats.median([10, 40, 20, 30]) == 25""",
        issue_title="median() is wrong for lists with an even length",
        issue_body="""`stats.median([1, 2, 3, 4])` gives 1.5, I expected 2.5 (the mean of 2 and 3).
Odd-length lists are correct.""",
        hints=("It averages the wrong pair of values: the first two of the middle three.",),
    ),
    BugSpec(
        slug="percentile-top",
        path=SRC + "stats.py",
        good="    upper = min(lower + 1, len(ordered) - 1)",
        bad="    upper = lower + 1",
        intro_message="Simplify percentile rank arithmetic",
        fix_title="Fix IndexError in percentile() at the 100th percentile",
        fix_body="The upper rank must stay within the list for q = 100 and for single values.",
        test_path="tests/test_stats.py",
        regression_test="""def test_percentile_at_the_top():
    assert stats.percentile([1, 2, 3, 4, 5], 100) == 5
    assert stats.percentile([7], 30) == 7""",
        issue_title="percentile(values, 100) raises IndexError",
        issue_body="""```
>>> stats.percentile([1, 2, 3], 100)
IndexError: list index out of range
```

Same for any percentile of a single value. Should return the maximum.""",
        hints=("q = 99.9 works, so it is the exact top rank.",),
    ),
    BugSpec(
        slug="round-negative-half",
        path=SRC + "rounding.py",
        good="    scaled = abs(value) * factor",
        bad="    scaled = value * factor",
        intro_message="Drop redundant abs() in round_half_up(); copysign handles the sign",
        fix_title="Round negative halves away from zero",
        fix_body="round_half_up(-2.5) must be -3 as documented, like its positive counterpart.",
        test_path="tests/test_rounding.py",
        regression_test="""def test_round_half_up_negative_halves():
    assert rounding.round_half_up(-2.5) == -3
    assert rounding.round_half_up(-0.125, 2) == -0.13""",
        issue_title="round_half_up(-2.5) returns -2",
        issue_body="""The docstring says halves are rounded away from zero, and 2.5 becomes 3, but -2.5 becomes -2.
Our invoice credits are off by one cent because of it.""",
        hints=("Only exact negative halves are affected; -2.6 is fine.",),
    ),
)

SPEC = LibrarySpec(
    kind="calculator",
    names=("calcium", "tallyho", "numbra", "sumthing"),
    summary="A safe arithmetic expression evaluator with statistics and rounding helpers.",
    modules={
        "tokenizer.py": TOKENIZER,
        "evaluator.py": EVALUATOR,
        "stats.py": STATS,
        "rounding.py": ROUNDING,
    },
    tests={
        "test_evaluator.py": TEST_EVALUATOR,
        "test_stats.py": TEST_STATS,
        "test_rounding.py": TEST_ROUNDING,
    },
    usage=USAGE,
    features=FEATURES,
    refactors=REFACTORS,
    tests_only=TESTS_ONLY,
    docs=DOCS,
    bugs=BUGS,
)
