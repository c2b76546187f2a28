"""`heuristic:swap`, the non-learned baseline: its answers to real window prompts, and a real eval of it on the
toy task (sandboxed grades) in both answer formats."""

from __future__ import annotations

import json

import pytest

from repogym.agent.backends.heuristic import listed_lines, swaps
from repogym.agent.policies import PolicyRequest, PolicyUnavailable, SamplingParams, make_policy
from repogym.dataset import save_tasks
from repogym.env.agentless import agentless_prompt
from repogym.env.context import make_windows, window_prompt
from repogym.env.lines_answer import parse_lines
from repogym.search_replace import apply_answer
from repogym.testing import FIXED_SOURCE

from ..support.cli import cli

_SOURCE = "def clamp(value, low, high):\n    if value < low and low <= high:\n        return low\n    return value\n"
_CONTENTS = {"pkg/clamp.py": _SOURCE}
_SPOTS = {"pkg/clamp.py": (2,)}


def _prompt(answer_format: str, style: str = "compact") -> str:
    windows = make_windows(_SPOTS, _CONTENTS, 1)
    return window_prompt("clamp is wrong", windows, _SPOTS, _CONTENTS, answer_format, style)


def _answer(prompt: str, temperature: float = 0.0, attempt: int = 0, seed: int | None = 7) -> str:
    request = PolicyRequest(
        messages=[{"role": "user", "content": prompt}],
        tools=[],
        sampling=SamplingParams(temperature=temperature, seed=seed),
        instance_id="pkg__clamp-1",
        attempt=attempt,
    )
    return make_policy("heuristic:swap").act(request).text


@pytest.mark.parametrize("style", ["compact", "full"])
def test_greedy_answer_is_the_first_ranked_swap_of_the_listed_line(style):
    prompt = _prompt("lines", style)
    assert [(s.path, s.number, s.text) for s in listed_lines(prompt)] == [
        ("pkg/clamp.py", 2, "    if value < low and low <= high:")
    ]
    assert parse_lines(_answer(prompt), 1) == ["    if value <= low and low <= high:"]


def test_search_replace_answer_applies_to_the_file_the_prompt_shows():
    answer = _answer(_prompt("search_replace", "full"))
    assert apply_answer(answer, _CONTENTS).new_contents == {
        "pkg/clamp.py": _SOURCE.replace("value < low", "value <= low")
    }


def test_sampled_attempts_draw_several_swaps_and_repeat_with_the_seed():
    prompt = _prompt("lines")
    drawn = [parse_lines(_answer(prompt, 1.0, attempt), 1)[0] for attempt in range(12)]
    assert len(set(drawn)) >= 4 and set(drawn) <= set(swaps("    if value < low and low <= high:"))
    assert drawn == [parse_lines(_answer(prompt, 1.0, attempt), 1)[0] for attempt in range(12)]


def test_a_prompt_without_suspicious_lines_is_refused_with_what_to_set():
    with pytest.raises(PolicyUnavailable, match="context=window"):
        _answer(agentless_prompt("clamp is wrong", _CONTENTS))


def test_a_line_cut_inside_brackets_still_yields_its_swaps():
    assert (
        swaps("    total = sum(x for x in values if x > 0")[0]
        == "    total = sum(x for x in values if x >= 0"
    )
    assert "not in" not in " ".join(swaps("for key in table:"))  # `for x not in` is no repair


@pytest.mark.slow
@pytest.mark.parametrize("answer_format", ["lines", "search_replace"])
def test_eval_of_the_swap_baseline_resolves_the_toy_bug(toy_task, tmp_path, answer_format):
    """The toy bug is `a - b` for `a + b`: one arithmetic swap, the first the table offers on that line."""
    assert "a + b" in FIXED_SOURCE
    tasks = tmp_path / "tasks.jsonl"
    save_tasks([toy_task], tasks)
    out = tmp_path / "eval"
    result = cli("eval", str(tasks), "--policy", "heuristic:swap", "--mode", "agentless", "--context", "window",
                 "--env-option", "localize=oracle", "--env-option", f"answer_format={answer_format}",
                 "--stage", "swap", "--bootstrap", "50", "--out", str(out))  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["policy"] == "heuristic:swap" and summary["pass@1"] == 1.0, summary["per_task"]
