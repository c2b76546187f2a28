"""A golden table for `patch_similarity`: hand-made (prediction, oracle) pairs, one per rule.

Each expected value was computed once with SWE-RL's reference implementation
(facebookresearch/swe-rl, `calculate_search_replace_reward`) and is checked by
tests/rewards/test_similarity_golden.py; `bench/bench_patch_similarity.py` prints the table.
The one repogym-only rule (BAD_PATH) records the reference's value beside its own.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GoldenCase:
    """One row: the model's answer against an oracle, and the reward it must get."""

    name: str
    rule: str
    """The patch_similarity rule the row exercises."""
    code_context: dict[str, str]
    oracle_new_content: dict[str, str]
    response: str
    expected: float
    """The reward; a ratio is written 2M/T as SequenceMatcher computes it (M matching chars of T in both diffs)."""
    note: str = ""
    reference: float | None = None
    """SWE-RL's value, only where repogym departs from it."""


CALC = (
    "def mean(xs):\n"
    "    return sum(xs) / len(xs) + 1\n"
    "\n\n"
    "def clamp(x, lo, hi):\n"
    "    return min(lo, max(x, hi))\n"
    "\n\n"
    'def label(n):\n    return "item" if n == 1 else "items"\n'
)
TEXT = 'import re\n\n\ndef slug(s):\n    return re.sub(r"[^a-z0-9]+", "-", s).strip("-")\n'
TWINS = "def zero():\n    return 0\n\n\ndef one():\n    return 0\n"
CONTEXT = {"calc.py": CALC, "text.py": TEXT}

MEAN_FIXED = CALC.replace("len(xs) + 1", "len(xs)")
BOTH_FIXED = MEAN_FIXED.replace("min(lo, max(x, hi))", "max(lo, min(x, hi))")
SLUG_FIXED = TEXT.replace("s).strip", "s.lower()).strip")


def block(path: str, search: str, replace: str, fence: str = "python") -> str:
    """One SEARCH/REPLACE block in SWE-RL's format."""
    return f"```{fence}\n### {path}\n<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n```"


def answer(*blocks: str, thought: str = "The mean is off by one.") -> str:
    """A well-formed answer holding `blocks`."""
    return f"<think>\n{thought}\n</think>\n<solution>\n" + "\n".join(blocks) + "\n</solution>"


MEAN_OLD, MEAN_NEW = "    return sum(xs) / len(xs) + 1", "    return sum(xs) / len(xs)"
CLAMP_OLD, CLAMP_NEW = "    return min(lo, max(x, hi))", "    return max(lo, min(x, hi))"
SLUG_OLD = '    return re.sub(r"[^a-z0-9]+", "-", s).strip("-")'
SLUG_NEW = '    return re.sub(r"[^a-z0-9]+", "-", s.lower()).strip("-")'
FIX_MEAN = block("calc.py", MEAN_OLD, MEAN_NEW)
ONE_FILE = {"calc.py": MEAN_FIXED}
TWO_FILES = {"calc.py": MEAN_FIXED, "text.py": SLUG_FIXED}
NEW_FILE = {"eps.py": "EPS = 1e-9\n"}


def case(
    name: str,
    rule: str,
    response: str,
    expected: float,
    oracle: dict[str, str] = ONE_FILE,
    context: dict[str, str] = CONTEXT,
    **extra: object,
) -> GoldenCase:
    """A row over `context` (calc.py and text.py unless given), the oracle fixing mean() unless given."""
    return GoldenCase(name, rule, context, oracle, response, expected, **extra)  # type: ignore[arg-type]


# fmt: off
CASES: tuple[GoldenCase, ...] = (
    case("exact", "identical change", answer(FIX_MEAN), 1.0),
    case("close", "same line, other text", answer(block("calc.py", MEAN_OLD, "    return sum(xs) / max(len(xs), 1)")), 242 / 250),
    case("whitespace_only", "no whitespace normalisation", answer(block("calc.py", MEAN_OLD, "    return sum(xs)/len(xs)")), 238 / 240),
    case("wrong_line", "right file, wrong line", answer(block("calc.py", CLAMP_OLD, CLAMP_NEW)), 76 / 246),
    case("extra_file", "file changed by the prediction only scores 0", answer(FIX_MEAN, block("text.py", SLUG_OLD, SLUG_NEW)), 0.5),
    case("missing_file", "file changed by the oracle only scores 0", answer(FIX_MEAN), 0.5, TWO_FILES),
    case("wrong_file", "disjoint files: both score 0", answer(block("text.py", SLUG_OLD, SLUG_NEW)), 0.0),
    case("two_files", "mean over files, block order free", answer(block("text.py", SLUG_OLD, SLUG_NEW), FIX_MEAN), 1.0, TWO_FILES),
    case("two_blocks", "blocks of one file apply in order", answer(FIX_MEAN, block("calc.py", CLAMP_OLD, CLAMP_NEW)), 1.0, {"calc.py": BOTH_FIXED}),
    case(
        "two_blocks_one_wrong", "one diff per file, compared whole",
        answer(FIX_MEAN, block("calc.py", CLAMP_OLD, "    return min(max(x, lo), hi)")), 390 / 408, {"calc.py": BOTH_FIXED},
    ),
    case(
        "every_occurrence", "SEARCH replaces every occurrence", answer(block("twins.py", "    return 0", "    return 1")),
        110 / 159, {"twins.py": TWINS[: TWINS.rindex("0")] + "1\n"}, {"twins.py": TWINS},
        note="both functions change; the oracle changes one",
    ),
    case("new_file", "empty SEARCH creates a file", answer(block("eps.py", "", "EPS = 1e-9")), 1.0, NEW_FILE),
    case("new_file_elsewhere", "new file at another path", answer(block("constants.py", "", "EPS = 1e-9")), 0.0, NEW_FILE),
    case("bare_fence", "fence language tag optional", answer(block("calc.py", MEAN_OLD, MEAN_NEW, fence="")), 1.0),
    case("missing_think", "format: tag missing", f"<solution>\n{FIX_MEAN}\n</solution>", -1.0),
    case("repeated_solution", "format: tag repeated", answer(FIX_MEAN) + "\n<solution>again</solution>", -1.0),
    case("empty_think", "format: blank thought", answer(FIX_MEAN, thought=" "), -1.0),
    case("prose_only", "format: no blocks", answer("Remove the + 1 from mean()."), -1.0),
    case(
        "unclosed_block", "format: block without REPLACE marker is no block",
        answer(f"```python\n### calc.py\n<<<<<<< SEARCH\n{MEAN_OLD}\n=======\n{MEAN_NEW}\n```"), -1.0,
    ),
    case("search_not_found", "format: SEARCH absent", answer(block("calc.py", "    return sum(xs) / len(xs) - 1", MEAN_NEW)), -1.0),
    case("indent_mismatch", "format: SEARCH must start a line", answer(block("calc.py", MEAN_OLD.strip(), MEAN_NEW.strip())), -1.0),
    case(
        "search_equals_replace", "format: no-op block", answer(FIX_MEAN, block("calc.py", CLAMP_OLD, CLAMP_OLD)), -1.0,
        note="one bad block spoils the answer",
    ),
    case("search_in_missing_file", "format: non-empty SEARCH in a new file", answer(block("calc2.py", MEAN_OLD, MEAN_NEW)), -1.0),
    case(
        "path_escapes_repo", "format: bad path (repogym only)", answer(FIX_MEAN, block("../outside.py", "", "x = 1")), -1.0,
        note="SWE-RL does not check paths", reference=0.5,
    ),
)
# fmt: on
