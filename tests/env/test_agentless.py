"""Agentless mode on the real toy task: the prompt, SWE-RL answers applied and graded, the similarity reward."""

from __future__ import annotations

import pytest

from repogym.errors import ResetNeeded
from repogym.grading.report import Outcome
from repogym.search_replace import SearchReplace, answer_from_patch, render_answer
from repogym.testing import BUGGY_SOURCE

SOURCE = "src/calc/__init__.py"


@pytest.fixture
def agentless(make_env):
    env = make_env(mode="agentless")
    env.reset()
    return env


def test_the_observation_holds_the_issue_and_the_gold_patchs_files_in_full(make_env, toy_task):
    env = make_env(mode="agentless", extra_context_files=["README.md"])
    observation, info = env.reset()
    assert toy_task.problem_statement in observation
    assert f"### {SOURCE}\n{BUGGY_SOURCE}```" in observation and "### README.md\n# calc" in observation
    assert "<<<<<<< SEARCH" in observation and "</solution>" in observation
    assert info["code_context"] == {SOURCE: BUGGY_SOURCE, "README.md": "# calc\n\nA tiny calculator.\n"}
    assert "tests/test_calc.py" not in observation  # the hidden tests are not shown
    assert env.tool_schemas() == [] and env.reset()[0] == observation


def test_the_gold_patch_as_search_replace_resolves_with_similarity_one(agentless):
    answer = answer_from_patch(agentless.task.patch, agentless.code_context)
    observation, reward, terminated, truncated, info = agentless.step(answer)
    assert (terminated, truncated) == (True, False)
    assert info["grade"].outcome is Outcome.RESOLVED and info["similarity"] == 1.0
    assert info["reward"].components == {
        "tests_pass": 1.0,
        "compile_pass": 0.0,
        "minimal_diff": 0.0,
        "patch_similarity": 1.0,
    }
    assert reward == 2.0 and "+    return a + b" in info["patch"] and "grade RESOLVED" in observation
    with pytest.raises(ResetNeeded):
        agentless.step(answer)


def test_a_wellformed_wrong_answer_is_graded_and_scores_its_similarity(agentless):
    wrong = render_answer(
        [SearchReplace(SOURCE, "    return a * b", "    return b * a")], "Swap the factors."
    )
    _, reward, terminated, _, info = agentless.step({"role": "assistant", "content": wrong})
    assert terminated and info["grade"].outcome is Outcome.UNRESOLVED and info["format_error"] is None
    assert 0.0 < info["similarity"] < 1.0 and reward == pytest.approx(info["similarity"])


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("return a + b", "bad_tags"),
        ("<think>fix</think><solution>no blocks here</solution>", "no_blocks"),
        (render_answer([SearchReplace(SOURCE, "return a % b", "return a + b")]), "search_not_found"),
        (render_answer([SearchReplace("../outside.py", "", "x = 1\n")]), "bad_path"),
        ({"role": "assistant", "content": None}, "bad_tags"),
    ],
)
def test_malformed_answers_score_minus_one_and_are_not_graded(agentless, answer, reason):
    observation, reward, terminated, _, info = agentless.step(answer)
    assert terminated and reward == -1.0 and info["similarity"] == -1.0
    assert info["grade"] is None and info["patch"] == "" and info["format_errors"] == 1
    assert info["format_error"].startswith(reason) and "format error" in observation
