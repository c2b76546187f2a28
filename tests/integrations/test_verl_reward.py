"""verl's reward function on the real toy task: the same verdict `repogym grade` gives, and never an exception."""

from __future__ import annotations

import json

import pytest

import repogym.env
from repogym.integrations.episodes import ENDED, EPISODES, SUBMITTED
from repogym.integrations.verl import (
    EPISODE_FIELD,
    GroundTruth,
    Mode,
    compute_score,
    episode_stash,
)
from repogym.search_replace import SearchReplace, apply_answer, render_answer
from repogym.testing import BUGGY_SOURCE

SOURCE = "src/calc/__init__.py"
KEYS = {"score", "acc", "format_error", "outcome"}


def truth_of(export) -> str:
    import pyarrow.parquet

    return pyarrow.parquet.read_table(export.parquet).to_pylist()[0]["reward_model"]["ground_truth"]


def test_the_gold_answer_resolves_as_repogym_grade_gold_does_and_scores_the_envs_reward(
    agentless_export, gold_answer, cli_grade, toy_task, toy_runtime
):
    verdict = compute_score("repogym", gold_answer, truth_of(agentless_export), {"index": 0})
    assert cli_grade("--gold")["outcome"] == verdict["outcome"] == "RESOLVED"
    env = repogym.env.make(toy_task.instance_id, toy_task, mode="agentless", runtime=toy_runtime)
    env.reset()
    _, env_reward, _, _, _ = env.step(gold_answer)
    assert verdict == {"score": env_reward, "acc": 1.0, "format_error": 0.0, "outcome": "RESOLVED"}
    assert env_reward == 2.0  # tests 1.0 + SWE-RL's similarity 1.0


def test_a_wrong_answer_gets_the_grade_its_diff_gets_and_scores_its_similarity(
    agentless_export, cli_grade, tmp_path
):
    wrong = render_answer(
        [SearchReplace(SOURCE, "    return a * b", "    return b * a")], "Swap the factors."
    )
    verdict = compute_score("repogym", wrong, truth_of(agentless_export), None)
    diff = tmp_path / "wrong.diff"
    diff.write_text(apply_answer(wrong, {SOURCE: BUGGY_SOURCE}).diff)
    assert cli_grade("--patch", str(diff))["outcome"] == verdict["outcome"] == "UNRESOLVED"
    assert 0.0 < verdict["score"] < 1.0 and verdict["acc"] == 0.0 and verdict["format_error"] == 0.0


@pytest.mark.parametrize(
    "completion",
    [None, 12, b"<solution></solution>", "", "return a + b", "<think>x</think><solution>" + "y" * 100_000],
)
def test_a_garbage_completion_is_a_format_error_never_an_exception(agentless_export, completion):
    verdict = compute_score("repogym", completion, truth_of(agentless_export), {"index": 0})
    assert verdict == {"score": -1.0, "acc": 0.0, "format_error": 1.0, "outcome": "FORMAT_ERROR"}


@pytest.mark.parametrize(
    "ground_truth",
    [None, "", "{", "[]", '{"mode": "agentless"}', '{"mode": "agentless", "sandbox": "bwrap", "task": 3}', 5],
)
def test_a_garbage_ground_truth_is_not_graded_and_scores_zero(ground_truth, caplog, gold_answer):
    verdict = compute_score("repogym", gold_answer, ground_truth, {})
    assert verdict == {"score": 0.0, "acc": 0.0, "format_error": 0.0, "outcome": "NOT_GRADED"}
    assert "not graded" in caplog.text


def test_a_task_whose_repository_is_gone_is_not_graded(agentless_export, toy_task, gold_answer, caplog):
    moved = toy_task.replace(repo_source="/nonexistent/calc", instance_id="toy__moved-1")
    truth = GroundTruth(Mode.AGENTLESS, "bwrap", moved).to_json()
    assert compute_score("repogym", gold_answer, truth, {})["outcome"] == "NOT_GRADED"
    assert "toy__moved-1" in caplog.text


def test_an_unknown_sandbox_is_not_graded(toy_task, gold_answer):
    truth = GroundTruth(Mode.AGENTLESS, "no-such-sandbox", toy_task).to_json()
    assert compute_score("repogym", gold_answer, truth, {})["outcome"] == "NOT_GRADED"


def test_the_ground_truth_carries_the_task_record_exactly(agentless_export, toy_task):
    truth = GroundTruth.from_json(truth_of(agentless_export))
    assert (truth.task, truth.mode, truth.sandbox) == (toy_task, Mode.AGENTLESS, "bwrap")
    assert json.loads(truth.to_json()) == json.loads(truth_of(agentless_export))


# -- agent mode: the episode the agent loop keeps, scored as `repogym grade` scores its diff ------------------


def _fix(key: str) -> str:
    episode = EPISODES.get(key)
    assert episode is not None
    return episode.call("str_replace", {"path": SOURCE, "old": "return a - b", "new": "return a + b"})


def test_an_agent_episode_that_fixes_and_submits_is_scored_like_grade_gold(agent_export, cli_grade):
    truth = GroundTruth.from_json(truth_of(agent_export))
    key = EPISODES.open(truth)
    try:
        episode = EPISODES.get(key)
        assert "def add" in episode.call("view_file", {"path": SOURCE})
        assert "Format error" in episode.call("view_file", {"nope": 1})  # bad arguments: an observation
        _fix(key)
        assert episode.call("submit", {}) == SUBMITTED
        assert episode.call("bash", {"command": "rm -rf src"}) == ENDED  # nothing changes after the grade
        verdict = episode.finish()
    finally:
        EPISODES.close(key)
    assert EPISODES.get(key) is None
    stash = {EPISODE_FIELD: episode_stash(truth.instance_id, verdict), "index": 0}
    scored = compute_score("repogym", "ignored: the sandbox holds the answer", truth.to_json(), stash)
    assert cli_grade("--gold")["outcome"] == scored["outcome"] == "RESOLVED"
    # One malformed call is counted (format_error), and the env's default reward does not charge for it.
    assert scored == {"score": 1.0, "acc": 1.0, "format_error": 1.0, "outcome": "RESOLVED"}


def test_an_agent_episode_that_never_submits_has_its_diff_graded_like_grade_empty(agent_export, cli_grade):
    truth = GroundTruth.from_json(truth_of(agent_export))
    key = EPISODES.open(truth)
    try:
        verdict = EPISODES.get(key).finish()
    finally:
        EPISODES.close(key)
    assert (
        verdict.outcome == cli_grade("--empty")["outcome"] and verdict.score == 0.0 and not verdict.resolved
    )


@pytest.mark.parametrize(
    "extra_info",
    [
        None,
        {},
        {EPISODE_FIELD: "x"},
        {EPISODE_FIELD: {"instance_id": "other", "score": 1.0}},
        {EPISODE_FIELD: {}},
    ],
)
def test_an_agent_row_without_its_episodes_verdict_is_not_graded(agent_export, extra_info, caplog):
    verdict = compute_score("repogym", "submit()", truth_of(agent_export), extra_info)
    assert verdict == {"score": 0.0, "acc": 0.0, "format_error": 0.0, "outcome": "NOT_GRADED"}
    assert "agent_name repogym_agent" in caplog.text


def test_every_result_has_the_same_keys(agentless_export, agent_export, gold_answer):
    results = [
        compute_score("repogym", gold_answer, truth_of(agentless_export), {}),
        compute_score("repogym", "", truth_of(agentless_export), {}),
        compute_score("repogym", "", truth_of(agent_export), {}),
        compute_score("repogym", "", "garbage", {}),
    ]
    assert all(set(result) == KEYS for result in results)  # verl stacks each key across the batch
