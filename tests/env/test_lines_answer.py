"""Window mode's compact answer: the suspicious lines rewritten, graded in the real sandbox like SWE-RL's blocks."""

from __future__ import annotations

import pytest

from repogym.env.lines_answer import apply_lines, lines_answer, parse_lines, to_search_replace
from repogym.grading.report import Outcome
from repogym.patches import unified_diff
from repogym.search_replace import FormatError, FormatErrorReason, parse_answer

SOURCE = "src/calc/__init__.py"
CONTENTS = {"a.py": "def f(a, b):\n    if a < b:\n        return a - b\n    return a\n", "b.py": "x = 1\r\n"}


def test_the_gold_answer_is_the_fixed_line_and_resolves_in_the_sandbox(make_env):
    env = make_env(mode="agentless", context="window", window_lines=1, answer_format="lines")
    observation, _ = env.reset()
    assert "<<<<<<< SEARCH" not in observation and "one per line, in order" in observation
    assert env.gold_answer() == "<solution>\n    return a + b\n</solution>"
    _, reward, _, _, info = env.step(env.gold_answer())
    assert info["grade"].outcome is Outcome.RESOLVED and reward == 2.0 and info["similarity"] == 1.0
    removed = [
        line for line in info["patch"].splitlines() if line.startswith("-") and not line.startswith("---")
    ]
    assert removed == ["-    return a - b"]


def test_a_wrong_line_is_graded_and_a_malformed_one_is_a_format_error(make_env):
    env = make_env(mode="agentless", context="window", window_lines=1, answer_format="lines")
    env.reset()
    _, reward, _, _, info = env.step("<solution>\n    return b - a\n</solution>")
    assert info["format_error"] is None and info["grade"].outcome is Outcome.UNRESOLVED and reward < 1.0
    env.reset()
    _, reward, _, _, info = env.step("<solution>\n    return a + b\n    return 0\n</solution>")
    assert info["format_error"].startswith("bad_line_count") and reward == -1.0 and info["grade"] is None


def test_lines_need_the_window_context(make_env):
    from repogym.errors import ConfigError

    with pytest.raises((ConfigError, ValueError), match="needs context='window'"):
        make_env(mode="agentless", answer_format="lines")


def test_each_line_replaces_its_suspicious_line_keeping_indentation_and_line_ends():
    spots = {"a.py": (2, 3), "b.py": (1,)}
    new = apply_lines("<solution>\n    if a <= b:\n        return a + b\nx = 2\n</solution>", spots, CONTENTS)
    assert new["a.py"] == "def f(a, b):\n    if a <= b:\n        return a + b\n    return a\n"
    assert new["b.py"] == "x = 2\r\n"  # the file's own CRLF kept
    answer = parse_answer(to_search_replace("<solution>\n    if a <= b:\n        return a - b\nx = 1\n</solution>",
                                            spots, CONTENTS))  # fmt: skip
    assert [(e.path, e.search, e.replace) for e in answer.edits] == [
        ("a.py", "    if a < b:", "    if a <= b:")
    ]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("    if a <= b:", FormatErrorReason.BAD_TAGS),
        ("<solution>\n    if a <= b:\n</solution><solution>\n</solution>", FormatErrorReason.BAD_TAGS),
        ("<solution>\n    if a < b:\n</solution>", FormatErrorReason.SEARCH_EQUALS_REPLACE),
        ("<solution>\n    if a <= b:\n    pass\n</solution>", FormatErrorReason.BAD_LINE_COUNT),
    ],
)
def test_malformed_lines_answers_name_the_rule_they_break(text, reason):
    with pytest.raises(FormatError) as caught:
        apply_lines(text, {"a.py": (2,)}, CONTENTS)
    assert caught.value.reason is reason


def test_gold_answers_exist_only_for_rewrites_of_the_localized_lines():
    fix = unified_diff({"a.py": CONTENTS["a.py"]}, {"a.py": CONTENTS["a.py"].replace("a - b", "a + b")})
    assert lines_answer(fix, {"a.py": (3,)}, CONTENTS) == "<solution>\n        return a + b\n</solution>"
    assert lines_answer(fix, {"a.py": (2,)}, CONTENTS) is None  # the fix is not on the localized line
    insertion = unified_diff(
        {"a.py": CONTENTS["a.py"]},
        {"a.py": CONTENTS["a.py"].replace("    return a\n", "    a += 1\n    return a\n")},
    )
    assert lines_answer(insertion, {"a.py": (4,)}, CONTENTS) is None  # a new line is not a rewrite


def test_hostile_lines_answer_smuggling_a_search_replace_block_edits_nothing(make_env):
    """Attack: write SWE-RL blocks (a conftest that passes every test) inside the compact answer."""
    env = make_env(mode="agentless", context="window", window_lines=1, answer_format="lines")
    env.reset()
    block = "```python\n### tests/conftest.py\n<<<<<<< SEARCH\n\n=======\nimport pytest\n>>>>>>> REPLACE\n```"
    _, reward, _, _, info = env.step(f"<think>x</think>\n<solution>\n    return a + b\n{block}\n</solution>")
    assert info["format_error"].startswith("bad_line_count") and info["grade"] is None and reward == -1.0


def test_hostile_lines_answer_cannot_reach_a_line_the_prompt_does_not_list():
    """Attack: a lines answer is only ever spliced into the listed lines, whatever the text says."""
    text = "<solution>\n    if a < b: import os; os.remove('tests/test_a.py')\n</solution>"
    new = apply_lines(text, {"a.py": (2,)}, CONTENTS)
    assert set(new) == {"a.py"}
    assert parse_lines(text, 1) == ["    if a < b: import os; os.remove('tests/test_a.py')"]
    assert (
        new["a.py"].splitlines()[0] == "def f(a, b):"
        and new["a.py"].splitlines()[2:] == CONTENTS["a.py"].splitlines()[2:]
    )
