"""OpenRLHF's bridge without OpenRLHF, on the real toy task: the export's rows, `reward_func` scoring completions
as `repogym grade` grades their diffs, and the agent executor's logic driven by a scripted policy through a
stand-in for OpenRLHF's multi-turn loop (test_openrlhf_in_openrlhf.py runs OpenRLHF's own loop)."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import Any

import pytest

import repogym.env
from repogym.files import read_jsonl_records
from repogym.integrations.episodes import EPISODES
from repogym.integrations.openrlhf import LOG_NAMES, ExecutorLogic, InstanceLogic, reward_func
from repogym.integrations.rows import GroundTruth, Mode
from repogym.integrations.verl import compute_score
from repogym.search_replace import SearchReplace, apply_answer, render_answer
from repogym.testing import BUGGY_SOURCE
from repogym.train.rl_tasks import UNBOUNDED_AGENT_EPISODE

from ..support.cli import cli

SOURCE = "src/calc/__init__.py"
WRONG_ANSWER = render_answer(
    [SearchReplace(SOURCE, "    return a * b", "    return b * a")], "Swap the factors."
)
FIX = {"path": SOURCE, "old": "return a - b", "new": "return a + b"}
WRONG_FIX = {"path": SOURCE, "old": "return a - b", "new": "return a * b"}


def tool_call(name: str, **arguments: Any) -> str:
    """A reply as a model writes one call in text (the agent prompt's own example format)."""
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def only_row(export) -> dict[str, Any]:
    (row,) = read_jsonl_records(export.dataset)
    return row


def templated(row: dict[str, Any]) -> str:
    """The prompt as OpenRLHF's dataset makes it (apply_chat_template, a plain template here)."""
    return "".join(f"<{m['role']}>{m['content']}\n" for m in row["prompt"]) + "<assistant>"


def diff_file(tmp_path, old: str, new: str) -> str:
    answer = render_answer([SearchReplace(SOURCE, old, new)], "why")
    path = tmp_path / "attempt.diff"
    path.write_text(apply_answer(answer, {SOURCE: BUGGY_SOURCE}).diff)
    return str(path)


# -- the export ----------------------------------------------------------------------------------------------


def test_the_export_writes_the_envs_prompt_and_the_task_record_as_label(
    openrlhf_agentless_export, openrlhf_agent_export, agentless_export, toy_task
):
    import pyarrow.parquet

    verl_row = pyarrow.parquet.read_table(agentless_export.parquet).to_pylist()[0]
    row = only_row(openrlhf_agentless_export)
    assert row["prompt"] == verl_row["prompt"] and row["datasource"] == "repogym"
    assert GroundTruth.from_json(row["label"]) == GroundTruth(Mode.AGENTLESS, "bwrap", toy_task)
    agent_row = only_row(openrlhf_agent_export)
    assert [m["role"] for m in agent_row["prompt"]] == ["system", "user"]
    assert "<tool_call>" in agent_row["prompt"][0]["content"]  # a text-only loop needs the call format
    assert GroundTruth.from_json(agent_row["label"]).mode is Mode.AGENT
    assert openrlhf_agentless_export.user_file.name == "reward_func.py"
    assert openrlhf_agent_export.user_file.name == "agent_func.py"


def test_repogym_export_openrlhf_writes_the_modes_file_and_says_so(toy_tasks_file, tmp_path):
    result = cli(
        "export", "openrlhf", str(toy_tasks_file), "--out", str(tmp_path), "--mode", "agent", "--json"
    )
    assert result.exit_code == 0, result.output
    written = json.loads(result.stdout)
    assert written == {
        "dataset": str(tmp_path / "tasks.jsonl"),
        "rows": 1,
        "mode": "agent",
        "user_file": str(tmp_path / "agent_func.py"),
    }
    assert (
        "from repogym.integrations.openrlhf import AgentExecutor" in (tmp_path / "agent_func.py").read_text()
    )
    assert not (tmp_path / "reward_func.py").exists()


# -- reward_func: agentless completions ----------------------------------------------------------------------


def rewarded(export, completion: str, prompt: str | None = None) -> dict[str, list[float]]:
    row = only_row(export)
    prompt = templated(row) if prompt is None else prompt
    result = reward_func([prompt + completion], [prompt], [row["label"]])
    return {
        key: value.tolist()
        for key, value in [*result.items(), *result["extra_logs"].items()]
        if key != "extra_logs"
    }


def test_reward_func_scores_the_gold_completion_as_grade_gold_resolves_it(
    openrlhf_agentless_export, gold_answer, cli_grade
):
    expected = compute_score("repogym", gold_answer, only_row(openrlhf_agentless_export)["label"], {})
    assert cli_grade("--gold")["outcome"] == expected["outcome"] == "RESOLVED"
    got = rewarded(openrlhf_agentless_export, gold_answer + "<|im_end|>")  # the query keeps special tokens
    assert got == {
        "rewards": [2.0],
        "scores": [1.0],
        "repogym_resolved": [1.0],
        "repogym_format_error": [0.0],
    }
    assert got["rewards"] == [expected["score"]]


def test_reward_func_scores_a_wrong_completion_as_its_diff_is_graded(
    openrlhf_agentless_export, cli_grade, tmp_path
):
    expected = compute_score("repogym", WRONG_ANSWER, only_row(openrlhf_agentless_export)["label"], {})
    assert (
        cli_grade("--patch", diff_file(tmp_path, "    return a * b", "    return b * a"))["outcome"]
        == "UNRESOLVED"
    )
    got = rewarded(openrlhf_agentless_export, WRONG_ANSWER)
    assert got["rewards"] == pytest.approx([expected["score"]]) and 0.0 < got["rewards"][0] < 1.0
    assert got["scores"] == [0.0]


def test_reward_func_finds_the_completion_of_a_prompt_cut_from_the_left(
    openrlhf_agentless_export, gold_answer
):
    prompt = templated(only_row(openrlhf_agentless_export))
    row = only_row(openrlhf_agentless_export)
    result = reward_func([prompt[-300:] + gold_answer], [prompt], [row["label"]])
    assert result["rewards"].tolist() == [2.0]


@pytest.mark.parametrize("case", ["garbage label", "agent label", "query without its prompt"])
def test_reward_func_scores_what_it_cannot_grade_zero_and_says_why(
    case, openrlhf_agentless_export, openrlhf_agent_export, gold_answer, caplog
):
    prompt, label = (
        templated(only_row(openrlhf_agentless_export)),
        only_row(openrlhf_agentless_export)["label"],
    )
    query = prompt + gold_answer
    if case == "garbage label":
        label = "{"
    elif case == "agent label":
        label = only_row(openrlhf_agent_export)["label"]
    else:
        query = "<user>another prompt<assistant>" + gold_answer
    result = reward_func([query], [prompt], [label])
    assert result["rewards"].tolist() == [0.0] and result["scores"].tolist() == [0.0]
    assert set(result["extra_logs"]) == set(LOG_NAMES)
    assert "not graded" in caplog.text


# -- the agent: OpenRLHF's multi-turn loop, scripted ---------------------------------------------------------


class ScriptedMultiTurn:
    """Stands in for OpenRLHF's MultiTurnAgentExecutor (openrlhf/utils/agent.py, 0.11.2) without OpenRLHF:
    the instance made without arguments, reset with the prompt and label, stepped with each reply of the
    scripted policy (`llm_engine` here) until done; a script that runs out is the token budget spent."""

    def __init__(self, agent_instance_cls: type) -> None:
        self.agent_instance_cls = agent_instance_cls

    async def execute(
        self, prompt, label, sampling_params, max_length, hf_tokenizer, llm_engine, images=None
    ):
        instance = self.agent_instance_cls()
        observation = (await instance.reset({"observation": prompt, "label": label}))["observation"]
        total, steps = 0.0, []
        for reply in llm_engine:
            states = {"observation_text": observation, "action_text": reply, "label": label}
            step = await instance.step({**states, "sampling_params": sampling_params})
            total += step["rewards"].item()
            observation += reply + step["environment_feedback"]
            steps.append(step)
            if step["done"]:
                break
        return {"prompt": prompt, "label": label, "reward": total, "steps": steps}


class Executor(ExecutorLogic, ScriptedMultiTurn):
    def __init__(self) -> None:
        super().__init__(InstanceLogic)


def played(export, replies: list[str]) -> dict[str, Any]:
    row = only_row(export)
    params = SimpleNamespace(max_tokens=None, logprobs=None)
    output = asyncio.run(Executor().execute(templated(row), row["label"], params, 10**6, None, replies))
    assert len(EPISODES) == 0  # the executor closed its episode
    return output


def env_reward(toy_task, toy_runtime, *calls: tuple[str, dict[str, Any]]) -> float:
    """The reward RepoEnv gives the same calls in a plain episode (repogym play's path)."""
    env = repogym.env.make(
        toy_task.instance_id, toy_task, mode="agent", runtime=toy_runtime, **UNBOUNDED_AGENT_EPISODE
    )
    env.reset()
    reward = 0.0
    for name, arguments in calls:
        _, reward, _, _, _ = env.step({"name": name, "arguments": arguments})
    env.close()
    return float(reward)


def test_a_scripted_agent_that_fixes_and_submits_earns_grade_golds_reward(
    openrlhf_agent_export, cli_grade, toy_task, toy_runtime
):
    replies = [tool_call("view_file", path=SOURCE), tool_call("str_replace", **FIX), tool_call("submit")]
    output = played(openrlhf_agent_export, replies)
    assert cli_grade("--gold")["outcome"] == "RESOLVED"
    expected = env_reward(toy_task, toy_runtime, ("str_replace", FIX), ("submit", {}))
    assert output["reward"] == expected == 1.0
    assert output["scores"] == 1.0 and output["extra_logs"] == {
        "repogym_resolved": 1.0,
        "repogym_format_error": 0.0,
    }
    steps = output["steps"]
    assert [step["done"] for step in steps] == [False, False, True]
    assert (
        "def add" in steps[0]["environment_feedback"] and "return a + b" in steps[1]["environment_feedback"]
    )
    assert steps[0]["environment_feedback"].startswith("<|im_end|>\n<|im_start|>user\n<tool_response>")
    assert steps[2]["rewards"].item() == 1.0 and steps[2]["environment_feedback"] == ""


def test_a_scripted_agent_with_a_wrong_fix_earns_its_diffs_grade(
    openrlhf_agent_export, cli_grade, toy_task, toy_runtime, tmp_path
):
    output = played(openrlhf_agent_export, [tool_call("str_replace", **WRONG_FIX), tool_call("submit")])
    assert (
        cli_grade("--patch", diff_file(tmp_path, "    return a - b", "    return a * b"))["outcome"]
        == "UNRESOLVED"
    )
    assert output["reward"] == env_reward(toy_task, toy_runtime, ("str_replace", WRONG_FIX), ("submit", {}))
    assert output["scores"] == 0.0 and output["extra_logs"]["repogym_resolved"] == 0.0


def test_a_trajectory_that_runs_out_of_tokens_has_its_diff_graded(openrlhf_agent_export):
    output = played(
        openrlhf_agent_export, [tool_call("str_replace", **FIX), "Let me think about it some more"]
    )
    assert [step["done"] for step in output["steps"]] == [False, False]
    assert "I could not run a tool call" in output["steps"][1]["environment_feedback"]
    assert (
        output["reward"] == 1.0 and output["scores"] == 1.0
    )  # graded when the loop ended, as RepoEnv truncates
    assert output["extra_logs"]["repogym_format_error"] == 1.0


def test_an_instance_outside_the_executor_has_no_episode_and_ends_at_once():
    step = asyncio.run(InstanceLogic().step({"action_text": tool_call("submit")}))
    assert step["done"] and step["rewards"].item() == 0.0
