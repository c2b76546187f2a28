"""Checks run by OpenRLHF 0.11.2's own classes, in a virtual environment that has them
(tests/integrations/test_openrlhf_in_openrlhf.py).

Run as `OPENRLHF_PYTHON tests/integrations/openrlhf_checks.py INPUTS.json SEEN.json` with this checkout's src/
on PYTHONPATH; writes what OpenRLHF saw to SEEN.json. OpenRLHF's training stack (deepspeed, vllm, flash-attn)
does not install without CUDA, so the venv holds OpenRLHF without its dependencies plus what its dataset and
agent modules import; everything is imported inside `main`, so pytest's doctest collection imports this file.

- `blending_datasets` and `PromptDataset` read each exported JSONL with the runbook's flags
  (--data.input_key prompt --data.label_key label --data.apply_chat_template);
- `SingleTurnAgentExecutor(remote_rm_url=reward_func.py)` loads the exported file itself and scores a
  scripted engine's completions (the gold answer, a wrong one) through it;
- the exported agent_func.py, loaded as `vllm_engine._load_agent_executor` loads it (that module imports ray
  and vllm, so its lines are repeated here), runs `MultiTurnAgentExecutor.execute` with a scripted engine;
- the flags `openrlhf.cli.train_ppo_ray` declares, read from its source (it imports Ray and deepspeed at
  the top, so it is not run), for the runbook's commands.
"""

from __future__ import annotations

import asyncio
import json
import sys
from types import SimpleNamespace
from typing import Any

#: Long enough for every scripted trajectory; the rambling policy fills what is left of it.
MAX_LENGTH = 200_000


class ScriptedEngine:
    """Stands in for OpenRLHF's vLLM engine (`await generate(token_ids, sampling_params, multi_modal_data=...)`,
    whose `outputs[0]` has token_ids, text, logprobs, finish_reason): the scripted replies in turn, then one
    reply that fills the rest of the token budget (a policy that rambles until it is cut off)."""

    def __init__(self, tokenizer: Any, replies: list[str]) -> None:
        self.tokenizer = tokenizer
        self.replies = list(replies)

    async def generate(
        self, prompt_token_ids: list[int], sampling_params: Any, multi_modal_data: Any = None
    ) -> Any:
        if self.replies:
            text = self.replies.pop(0)
            token_ids, reason = self.tokenizer.encode(text), "stop"
        else:
            text, token_ids, reason = "", [self.tokenizer.pad_token_id] * sampling_params.max_tokens, "length"
        output = SimpleNamespace(token_ids=token_ids, text=text, logprobs=None, finish_reason=reason)
        return SimpleNamespace(outputs=[output])


def load_agent_executor(agent_func_path: str) -> Any:
    """openrlhf/trainer/ray/vllm_engine.py's `_load_agent_executor` (0.11.2), line for line."""
    import importlib.util

    from openrlhf.utils.agent import AgentExecutorBase

    spec = importlib.util.spec_from_file_location("agent_module", agent_func_path)
    agent_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(agent_module)
    assert hasattr(agent_module, "AgentExecutor"), "Agent module must contain AgentExecutor class"
    agent_executor_cls = agent_module.AgentExecutor
    assert issubclass(agent_executor_cls, AgentExecutorBase), (
        "AgentExecutor must inherit from AgentExecutorBase"
    )
    return agent_executor_cls()


def prompt_dataset(path: str, tokenizer: Any) -> Any:
    """The rows as OpenRLHF's trainer reads them (openrlhf/trainer/ppo_trainer.py: blending_datasets, then
    PromptDataset), with the arguments the runbook sets."""
    from openrlhf.datasets.prompts_dataset import PromptDataset
    from openrlhf.datasets.utils import blending_datasets

    data = SimpleNamespace(
        input_key="prompt", label_key="label", apply_chat_template=True, image_key="images"
    )
    strategy = SimpleNamespace(args=SimpleNamespace(data=data), print=lambda *_: None, is_rank_0=lambda: True)
    return PromptDataset(blending_datasets(path, None, strategy), tokenizer, strategy)


def trainer_flags() -> list[str]:
    """Every flag `python -m openrlhf.cli.train_ppo_ray` accepts: its parser's add_argument calls."""
    import ast
    import importlib.util

    spec = importlib.util.find_spec("openrlhf")
    assert spec is not None and spec.origin is not None
    with open(spec.origin.replace("__init__.py", "cli/train_ppo_ray.py"), encoding="utf-8") as file:
        tree = ast.parse(file.read())
    return sorted(
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, "attr", None) == "add_argument"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    )


def sampling() -> Any:
    """vLLM's SamplingParams as the executors use it: max_tokens and logprobs, both left to them."""
    return SimpleNamespace(max_tokens=None, logprobs=None)


def plain(value: Any) -> Any:
    """A tensor (or a dict of them) as JSON numbers."""
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    return value.tolist() if hasattr(value, "tolist") else value


def main(inputs: dict[str, Any]) -> dict[str, Any]:
    from bridge_tokenizer import tiny_tokenizer  # beside this script, which runs with its folder on sys.path
    from openrlhf.utils.agent import AgentInstanceBase, MultiTurnAgentExecutor, SingleTurnAgentExecutor

    from repogym.integrations.episodes import EPISODES

    tokenizer = tiny_tokenizer([inputs["gold_answer"], *inputs["agent_replies"]["gold"]])
    seen: dict[str, Any] = {"trainer_flags": trainer_flags()}

    agentless = prompt_dataset(inputs["agentless_jsonl"], tokenizer)
    datasource, prompt, label, _ = agentless[0]
    seen["agentless_row"] = {
        "len": len(agentless),
        "datasource": datasource,
        "prompt": prompt,
        "label": label,
    }
    reward_executor = SingleTurnAgentExecutor(remote_rm_url=inputs["reward_func"])
    for name, completion in (("gold", inputs["gold_answer"]), ("wrong", inputs["wrong_answer"])):
        engine = ScriptedEngine(tokenizer, [completion])
        output = asyncio.run(
            reward_executor.execute(prompt, label, sampling(), MAX_LENGTH, tokenizer, engine)
        )
        seen[f"reward_{name}"] = {key: plain(output[key]) for key in ("reward", "scores", "extra_logs")}

    agent = prompt_dataset(inputs["agent_jsonl"], tokenizer)
    _, prompt, label, _ = agent[0]
    seen["agent_row"] = {"prompt": prompt, "label": label}
    executor = load_agent_executor(inputs["agent_func"])
    seen["agent_classes"] = {
        "executor_is_multi_turn": isinstance(executor, MultiTurnAgentExecutor),
        "instance_is_agent_instance": issubclass(executor.agent_instance_cls, AgentInstanceBase),
    }
    for name, replies in inputs["agent_replies"].items():
        engine = ScriptedEngine(tokenizer, replies)
        output = asyncio.run(executor.execute(prompt, label, sampling(), MAX_LENGTH, tokenizer, engine))
        seen[f"agent_{name}"] = {
            **{key: plain(output[key]) for key in ("reward", "scores", "extra_logs")},
            "turns": len(output["action_ranges"]),
            "text": tokenizer.decode(output["observation_tokens"][: output["action_ranges"][-1][0]]),
            "episodes_open_after": len(EPISODES),
        }
    return seen


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as file:
        seen = main(json.load(file))
    with open(sys.argv[2], "w", encoding="utf-8") as file:  # not stdout: OpenRLHF logs there
        json.dump(seen, file, default=str)
