"""Window mode's compact prompt (`prompt_style="compact"`): the code and the suspicious lines only, graded as the full one."""

from __future__ import annotations

import pytest

from repogym.env.context import make_windows, window_prompt
from repogym.env.lines_answer import LINES_FORMAT
from repogym.errors import ConfigError
from repogym.grading.report import Outcome
from repogym.train.mutation_demos import DemoOptions, DemoReport, file_demos

CONTENTS = {
    "a.py": "def f(a, b):\n    if a < b:\n        return a - b\n    return a\n",
    "b.py": "x = 1\ny = 2\n",
}


def test_the_compact_prompt_leaves_the_issue_out_and_ends_with_the_line_to_fix(make_env, toy_task):
    options = {"mode": "agentless", "context": "window", "window_lines": 1, "answer_format": "lines"}
    full, _ = make_env(**options).reset()
    env = make_env(**options, prompt_style="compact")
    compact, _ = env.reset()
    statement = toy_task.problem_statement.strip().splitlines()[0]
    assert statement in full and statement not in compact and "```" not in compact
    assert compact.startswith(LINES_FORMAT)
    assert compact.endswith("Suspicious lines:\n2:     return a - b\n")  # its number, no path
    assert len(compact) < len(full)
    _, reward, _, _, info = env.step(env.gold_answer())  # the same answer, graded the same way
    assert info["grade"].outcome is Outcome.RESOLVED and reward == 2.0


def test_the_compact_prompt_names_each_file_when_the_lines_span_several():
    spots = {"a.py": (3,), "b.py": (2,)}
    prompt = window_prompt("", make_windows(spots, CONTENTS, 0), spots, CONTENTS, "lines", "compact")
    assert prompt.endswith("Suspicious lines:\na.py:3:         return a - b\nb.py:2: y = 2\n")
    assert "### a.py (lines 3-3)" in prompt and "### b.py (lines 2-2)" in prompt


def test_the_compact_prompt_needs_the_window_context(make_env):
    with pytest.raises(ConfigError, match=r"prompt_style=.compact. shortens the window prompt"):
        make_env(mode="agentless", prompt_style="compact")


def test_demonstrations_are_written_in_the_envs_prompt_style():
    text = "def g(items):\n    total = 0\n    for item in items:\n        total += item\n    return total\n"
    rows = {}
    for style in ("full", "compact"):
        options = DemoOptions(answer_format="lines", prompt_style=style, methods=("op_change",))
        rows[style] = list(file_demos("lib/g.py", text, options, DemoReport()))
    assert rows["full"] and len(rows["full"]) == len(rows["compact"])
    for full, compact in zip(rows["full"], rows["compact"], strict=True):
        assert full["messages"][1] == compact["messages"][1]  # the same answer
        prompt = compact["messages"][0]["content"]
        assert (
            prompt.startswith(LINES_FORMAT)
            and "Issue:" not in prompt
            and "Issue:" in full["messages"][0]["content"]
        )
        assert compact["metadata"]["prompt_style"] == "compact"
