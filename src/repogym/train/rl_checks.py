"""Checks a GRPO run makes before it trains: each wrong setting is a ConfigError naming the key and the fix.

They run in order of cost (numbers, then the model folder (`repogym.train.model.check_model_folder`,
shared with SFT), then the reward, then the tasks and their sandboxes), so a typo fails in a
second, never after an hour of environment builds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repogym.config import RunConfig, validate_config
from repogym.env.options import EnvOptions
from repogym.errors import ConfigError
from repogym.rollout.ray_session import require_ray
from repogym.train.tiny import load_tokenizer

_WEIGHTS = (
    "model.safetensors",
    "pytorch_model.bin",
    "model.safetensors.index.json",
    "pytorch_model.bin.index.json",
)
_MAKE_ONE = "a local Hugging Face model folder, e.g. base_model=DIR after `python -m repogym.train.tiny DIR`"


def check_numbers(config: RunConfig, num_processes: int = 1) -> int:
    """Group and batch arithmetic; returns the per-device batch size (completions per micro-batch)."""
    if config.algorithm != "grpo":
        raise ConfigError(
            f"algorithm: {config.algorithm!r} is not GRPO; `repogym train sft` runs SFT configs"
        )
    group = config.rollout.num_candidates
    if group < 2:
        raise ConfigError(
            f"rollout.num_candidates: {group}; GRPO compares the completions of a group, set at least 2"
        )
    if config.batch_size % group:
        lower, upper = (config.batch_size // group) * group, (config.batch_size // group + 1) * group
        hint = f"batch_size={upper}" + (f" or batch_size={lower}" if lower else "")
        raise ConfigError(
            f"batch_size: {config.batch_size} completions is not a multiple of rollout.num_candidates={group} "
            f"(each task is sampled {group} times in a step); set {hint}, or change rollout.num_candidates"
        )
    split = config.grpo.gradient_accumulation_steps * num_processes
    if config.batch_size % split:
        raise ConfigError(
            f"batch_size: {config.batch_size} does not split into grpo.gradient_accumulation_steps="
            f"{config.grpo.gradient_accumulation_steps} x {num_processes} process(es); make it a multiple of {split}"
        )
    return config.batch_size // split


def check_env_options(config: RunConfig) -> None:
    """`env.options` must be EnvOptions fields (mode and limits are set from the run's own keys)."""

    for key in ("mode",):
        if key in config.env.options:
            raise ConfigError(f"env.options.{key}: set env.{key} instead")
    validate_config({"mode": config.env.mode, **config.env.options}, EnvOptions, source="env.options")


def check_grading_executor(config: RunConfig) -> None:
    """`grpo.grading_executor: ray` grades agentless answers only, and needs Ray; `grpo.ray_address` needs it."""
    grpo = config.grpo
    if grpo.grading_executor == "local":
        if grpo.ray_address:
            raise ConfigError("grpo.ray_address: only used with grpo.grading_executor=ray")
        return
    if config.env.mode != "agentless":
        raise ConfigError(
            "grpo.grading_executor: ray grades agentless answers; an agent-mode rollout is graded in its own "
            "episode in the trainer's process, so set grpo.grading_executor=local or env.mode=agentless"
        )
    require_ray("grpo.grading_executor=ray")


def load_checked_tokenizer(folder: Path, mode: str, key: str = "base_model") -> Any:
    """The folder's tokenizer, with a chat template (and, in agent mode, tool calls TRL can parse)."""

    try:
        tokenizer = load_tokenizer(folder)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{key}: {folder} has no tokenizer transformers can load: {exc}") from None
    if not tokenizer.chat_template:
        raise ConfigError(
            f"{key}: the tokenizer in {folder} has no chat template; GRPO prompts are chat messages. Set "
            "tokenizer.chat_template and save it (an instruct model's folder has one)"
        )
    tokenizer.padding_side = "left"  # decoder-only generation pads on the left
    if mode == "agent":
        enable_tool_parsing(tokenizer, folder, key)
    return tokenizer


def enable_tool_parsing(tokenizer: Any, folder: Path, key: str = "base_model") -> None:
    """Make TRL able to read tool calls out of completions: its known templates, or Qwen's `<tool_call>` JSON.

    TRL parses tool calls with a response template it ships for known chat templates. repogym's tiny
    model writes Qwen2.5's format with its own template text, so a template that renders a call
    as `<tool_call>` + JSON gets TRL's Qwen3 response template.
    """
    from trl.chat_template_utils import add_response_schema, qwen3_template, supports_tool_calling

    if not supports_tool_calling(tokenizer):
        raise ConfigError(
            f"{key}: the chat template in {folder} cannot render tool calls and tool results; agent mode "
            "needs one that can (e.g. Qwen2.5's), or use env.mode=agentless"
        )
    if getattr(tokenizer, "response_template", None) or getattr(tokenizer, "response_schema", None):
        return
    try:
        add_response_schema(tokenizer)
        return
    except ValueError:
        pass
    call = [{"type": "function", "function": {"name": "probe", "arguments": {"x": "1"}}}]
    rendered = tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "", "tool_calls": call}],
        tokenize=False,
    )
    if '<tool_call>\n{"name": "probe"' not in rendered:
        raise ConfigError(
            f"{key}: TRL cannot parse tool calls written with the chat template in {folder}; set "
            "tokenizer.response_template (see transformers' chat response parsing) or use env.mode=agentless"
        )
    tokenizer.response_template = qwen3_template
