"""Agentless window context: compact prompts around localized lines (oracle and sbfl), answers against the real file."""

from __future__ import annotations

import contextlib

import pytest

from repogym.env.context import Localization, localizers
from repogym.grading.report import Outcome
from repogym.search_replace import SearchReplace, render_answer

SOURCE = "src/calc/__init__.py"


def test_oracle_windows_show_only_the_bug_neighbourhood_and_the_gold_answer_resolves(make_env):
    env = make_env(mode="agentless", context="window", window_lines=1)
    observation, info = env.reset()
    assert f"### {SOURCE} (lines 1-3)\ndef add(a, b):\n    return a - b\n\n```" in observation
    assert "def mul" not in observation and "Suspicious lines:\nsrc/calc/__init__.py:2:" in observation
    assert info["localization"]["method"] == "oracle" and info["localization"]["uses_gold"] is True
    gold = env.gold_answer()
    assert "<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE" in gold
    _, reward, _, _, info = env.step(gold)
    assert info["grade"].outcome is Outcome.RESOLVED and reward == 2.0


def test_sbfl_finds_the_bug_line_from_the_tests_alone(make_env):
    env = make_env(mode="agentless", context="window", window_lines=1, localize="sbfl")
    _, info = env.reset()
    assert info["localization"]["spots"] == {SOURCE: [2]} and info["localization"]["uses_gold"] is False
    assert env.localization.scores[f"{SOURCE}:2"] == 1.0 and f"{SOURCE}:6" not in env.localization.scores
    _, _, _, _, info = env.step(env.gold_answer())
    assert info["grade"].resolved


def _far(task, contents, runtime):  # a localizer that points at the wrong function
    return Localization("far", {SOURCE: (6,)}, uses_gold=False)


def test_a_missed_localization_has_no_gold_answer_but_answers_still_apply_to_the_real_file(make_env):
    with contextlib.suppress(ValueError):  # registered by an earlier run in this process
        localizers.add("test-far", _far)
    env = make_env(mode="agentless", context="window", window_lines=0, localize="test-far")
    observation, _ = env.reset()
    assert "    return a * b" in observation and "return a - b" not in observation
    assert env.gold_answer() is None
    answer = render_answer([SearchReplace(SOURCE, "    return a * b", "    return b * a")], "Swap.")
    _, _, _, _, info = env.step(answer)
    assert info["format_error"] is None and info["grade"].outcome is Outcome.UNRESOLVED


def test_unknown_localizers_are_named_with_the_known_ones(make_env):
    from repogym.errors import UnknownNameError

    with pytest.raises(UnknownNameError, match="known: oracle, sbfl"):
        make_env(mode="agentless", context="window", localize="orcale")
