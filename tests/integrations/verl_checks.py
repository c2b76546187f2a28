"""Checks run by verl's own classes, in a virtual environment that has verl (tests/integrations/test_verl_in_verl.py).

Run as `VERL_PYTHON tests/integrations/verl_checks.py INPUTS.json SEEN.json` with this checkout's src/ on
PYTHONPATH; writes one JSON object of what verl saw to SEEN.json (the test compares it with repogym's own
grades). verl is imported
inside `main` so that pytest's doctest collection can import this file without verl.

- verl's RLHFDataset loads each exported parquet (and, for agent rows, builds repogym's tools from the
  exported tool config, as it does to count prompt tokens);
- verl's reward manager (the reward loop's `naive`, made by `load_reward_manager` from the config keys a
  run sets) scores a hand-built batch through `pkg://repogym.integrations.verl` `compute_score`;
- the overrides of examples/verl's GRPO scripts compose with verl's trainer config (every key exists);
- the agent row runs through `RepogymAgentLoop`'s logic over a stand-in for verl's ToolAgentLoop that
  calls the tools as ToolAgentLoop._call_tool does (create -> execute -> release per call), with scripted
  calls for a model; the trajectory's extra fields then go through the reward manager as verl's reward
  loop sends them (`tool_extra_fields`).
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any


def load_dataset(parquet: str, tokenizer: Any, cache: str, tool_config: str | None = None) -> Any:
    from omegaconf import OmegaConf
    from verl.utils.dataset.rl_dataset import RLHFDataset

    config = {"prompt_key": "prompt", "max_prompt_length": 1_000_000, "cache_dir": cache}
    config |= {"filter_overlong_prompts_workers": 1, "tool_config_path": tool_config}
    return RLHFDataset(data_files=[parquet], tokenizer=tokenizer, config=OmegaConf.create(config))


def reward_manager(tokenizer: Any) -> Any:
    """verl's reward-loop manager as a run configures it: reward.custom_reward_function + reward.reward_manager."""
    from omegaconf import OmegaConf
    from verl.trainer.ppo.reward import load_reward_manager

    config = OmegaConf.create(
        {
            "reward": {
                "custom_reward_function": {
                    "path": "pkg://repogym.integrations.verl",
                    "name": "compute_score",
                },
                "reward_manager": {"source": "register", "name": "naive"},
            }
        }
    )
    return load_reward_manager(config, tokenizer)


def one_row_batch(tokenizer: Any, row: dict[str, Any], response: str, tool_extra_fields: Any = None) -> Any:
    """A hand-built batch of one completion, shaped as verl's agent loop hands it to the reward loop."""
    import numpy
    import torch
    from verl import DataProto

    prompt_ids = tokenizer.apply_chat_template(
        row["raw_prompt"], add_generation_prompt=True, return_dict=False
    )
    response_ids = tokenizer.encode(response) or [tokenizer.eos_token_id]
    tensors = {
        "prompts": torch.tensor([prompt_ids]),
        "responses": torch.tensor([response_ids]),
        "attention_mask": torch.ones(1, len(prompt_ids) + len(response_ids), dtype=torch.int64),
    }
    non_tensors = {key: numpy.array([row[key]], dtype=object) for key in ("data_source", "reward_model")}
    non_tensors["extra_info"] = numpy.array([dict(row["extra_info"])], dtype=object)
    if tool_extra_fields is not None:
        non_tensors["tool_extra_fields"] = numpy.array([tool_extra_fields], dtype=object)
    return DataProto.from_dict(tensors=tensors, non_tensors=non_tensors)


class ScriptedToolLoop:
    """Stands in for verl's ToolAgentLoop: scripted calls for a model, each made as ToolAgentLoop._call_tool
    makes one (a tool instance created with the row's create_kwargs, executed, released)."""

    def __init__(self, tools: list[Any], script: list[tuple[str, dict[str, Any]]]) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.script = script
        self.observations: list[str] = []

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> Any:
        from verl.experimental.agent_loop.agent_loop import AgentLoopOutput

        for name, arguments in self.script:
            tool = self.tools[name]
            create_kwargs = kwargs["tools_kwargs"].get(name, {}).get("create_kwargs", {})
            instance_id, _ = await tool.create(create_kwargs=create_kwargs)
            response, _, _ = await tool.execute(instance_id, arguments, agent_data=None)
            await tool.release(instance_id)
            self.observations.append(response.text)
        return AgentLoopOutput(prompt_ids=[1], response_ids=[2], response_mask=[1], num_turns=2, metrics={})


def composed(overrides: list[str]) -> dict[str, Any]:
    """verl's trainer config with a run's overrides, as `python -m verl.trainer.main_ppo` composes it: an
    override naming a key verl does not have fails here, as it would on the cluster."""
    import os

    import verl
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    config_dir = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
    try:
        with initialize_config_dir(config_dir=config_dir, version_base=None):
            config = compose(config_name="ppo_trainer", overrides=overrides)
    except Exception as exc:  # hydra's errors for an unknown key or a bad value: reported, not raised
        return {"error": f"{type(exc).__name__}: {exc}"}
    reward = OmegaConf.to_container(config.reward.custom_reward_function)
    return {"error": None, "reward_function": reward, "adv_estimator": config.algorithm.adv_estimator}


def main(inputs: dict[str, Any]) -> dict[str, Any]:
    import hydra.utils
    from bridge_tokenizer import tiny_tokenizer  # beside this script, which runs with its folder on sys.path
    from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop
    from verl.tools.base_tool import BaseTool
    from verl.tools.tool_registry import initialize_tools_from_config

    from repogym.integrations.episodes import EPISODES
    from repogym.integrations.verl import GroundTruth
    from repogym.integrations.verl_agent import AgentLoopLogic

    tokenizer = tiny_tokenizer([inputs["gold_answer"], "system user assistant tool submit"])
    manager = reward_manager(tokenizer)
    seen: dict[str, Any] = {"manager": type(manager).__module__ + "." + type(manager).__name__}
    seen["examples"] = {name: composed(overrides) for name, overrides in inputs["example_overrides"].items()}

    def score(batch: Any) -> dict[str, Any]:
        return manager.loop.run_until_complete(manager.run_single(batch))

    agentless = load_dataset(inputs["agentless_parquet"], tokenizer, inputs["cache"])
    row = agentless[0]
    seen["agentless_row"] = {key: row[key] for key in ("raw_prompt", "reward_model", "extra_info", "index")}
    seen["agentless_len"] = len(agentless)
    seen["gold"] = score(one_row_batch(tokenizer, row, inputs["gold_answer"]))
    seen["garbage"] = score(one_row_batch(tokenizer, row, "no answer here"))

    agent = load_dataset(inputs["agent_parquet"], tokenizer, inputs["cache"], inputs["tool_config"])
    row = agent[0]
    seen["agent_row"] = {key: row[key] for key in ("agent_name", "tools_kwargs", "index")}
    seen["dataset_tool_names"] = [schema["function"]["name"] for schema in agent.tool_schemas or []]

    tools = initialize_tools_from_config(inputs["tool_config"])
    seen["tools_are_verl_base_tools"] = [isinstance(tool, BaseTool) for tool in tools]
    loop_class = hydra.utils.get_class(inputs["agent_loop_class"])  # how hydra resolves the config's _target_
    seen["agent_loop_is_a_tool_agent_loop"] = issubclass(loop_class, ToolAgentLoop)

    by_name = {tool.name: tool for tool in tools}

    async def reward_of_a_fix(episode: str | None) -> tuple[str, float]:
        tool = by_name["str_replace"]
        instance_id, _ = await tool.create(create_kwargs={"episode": episode} if episode else {})
        response, _, _ = await tool.execute(instance_id, inputs["fix"])
        return response.text, await tool.calc_reward(instance_id)

    key = EPISODES.open(GroundTruth.from_json(row["reward_model"]["ground_truth"]))
    try:
        seen["calc_reward"] = asyncio.run(reward_of_a_fix(key))[1]
    finally:
        EPISODES.close(key)
    seen["outside_an_episode"] = asyncio.run(reward_of_a_fix(None))

    script = [("view_file", {"path": inputs["source"]}), ("str_replace", inputs["fix"])]
    for name, extra in (("submitted", [("submit", {})]), ("never_submitted", [])):
        scripted = type("Loop", (AgentLoopLogic, ScriptedToolLoop), {})(tools, script + extra)
        output = asyncio.run(scripted.run({}, **row))
        seen[name] = {
            "observations": scripted.observations,
            "episodes_open_after": len(EPISODES),
            "reward": score(one_row_batch(tokenizer, row, "<tool_call>", output.extra_fields)),
        }
    return seen


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as file:
        seen = main(json.load(file))
    with open(
        sys.argv[2], "w", encoding="utf-8"
    ) as file:  # not stdout: verl prints there (tool schemas, sizes)
        json.dump(seen, file, default=str)
