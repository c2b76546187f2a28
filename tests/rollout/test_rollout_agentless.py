"""`repogym rollout --mode agentless`: one SEARCH/REPLACE answer per attempt, graded like GRPO grades it."""

from __future__ import annotations

import json

from typer.testing import CliRunner

import repogym.env
from repogym.cli import app
from repogym.dataset import save_tasks
from repogym.rollout.store import load_trajectories
from repogym.search_replace import answer_from_patch


def test_agentless_rollout_sends_the_prompt_alone_and_grades_the_answer(tmp_path, toy_task):
    tasks = tmp_path / "tasks.jsonl"
    save_tasks([toy_task], tasks)
    env = repogym.env.make(toy_task.instance_id, [toy_task], mode="agentless")
    prompt, info = env.reset()
    env.close()
    gold = answer_from_patch(toy_task.patch, info["code_context"])
    script = tmp_path / "answers.jsonl"
    script.write_text(json.dumps({"instance_id": toy_task.instance_id, "actions": [gold]}) + "\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["rollout", str(tasks), "--policy", f"scripted:{script}", "--mode", "agentless", "--out", str(out)],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (trajectory,) = load_trajectories(out)
    assert trajectory.resolved and trajectory.format_errors == 0
    assert [m["role"] for m in trajectory.messages] == ["user", "assistant"]
    assert trajectory.messages[0]["content"] == prompt, "the same prompt GRPO trains on"
    assert trajectory.tools == []
    assert json.loads((out / "run.json").read_text())["identity"]["mode"] == "agentless"


def test_a_malformed_agentless_answer_is_a_format_error_not_a_tool_call(tmp_path, toy_task):
    tasks = tmp_path / "tasks.jsonl"
    save_tasks([toy_task], tasks)
    script = tmp_path / "answers.jsonl"
    script.write_text(
        json.dumps({"instance_id": toy_task.instance_id, "actions": ["view_file('a.py')"]}) + "\n"
    )
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["rollout", str(tasks), "--policy", f"scripted:{script}", "--mode", "agentless", "--out", str(out)],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (trajectory,) = load_trajectories(out)
    assert not trajectory.resolved and trajectory.format_errors == 1
    assert trajectory.reward == -1.0, "agentless's default reward: SWE-RL's -1 for a malformed answer"
    bad = CliRunner().invoke(app, ["rollout", str(tasks), "--policy", "scripted:gold", "--mode", "oneshot",
                                   "--out", str(tmp_path / "bad")])  # fmt: skip
    assert bad.exit_code == 2 and "--mode 'oneshot'" in bad.output
