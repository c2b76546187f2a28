"""The options of an attempt, shared by `repogym rollout` and `repogym eval`: declared once, here.

The policy and how it samples, when the loop stops an attempt, the env it plays in (mode, context, env
options, prompts, reward, sandbox) and how many attempts run and where. Both commands take every one of
them, with the same names, defaults and help; each adds its own (rollout: --keep; eval: --k, --stage, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from repogym.agent.loop import AgentLimits
from repogym.agent.policies import PolicyConfig, SamplingParams
from repogym.cli.options import Instances, Jobs, OptionGroup, ReposDir
from repogym.cli.sandbox_option import Sandbox
from repogym.config import load_yaml
from repogym.errors import ConfigError

#: The library's defaults, which the options repeat (the spec is needed to make one, and not used).
_POLICY = PolicyConfig(spec="scripted:gold")
_LIMITS = AgentLimits()


@dataclass(frozen=True)
class AttemptOptions(OptionGroup):
    """What `rollout` and `eval` run: N attempts of a policy per task, each in its own sandboxed env."""

    policy: Annotated[
        str,
        typer.Option(
            "--policy",
            help="scripted:gold | scripted:FILE | hf:PATH | openai:MODEL | human | heuristic:swap | a dotted path "
            "(required; eval's --route names two instead).",
        ),
    ] = ""
    n: Annotated[int, typer.Option("-n", min=1, help="Attempts per task (a GRPO group; pass@n in eval).")] = 1
    instance: Instances = None
    jobs: Jobs = 1
    executor: Annotated[str, typer.Option("--executor", help="local (thread pool) or ray.")] = "local"
    ray_address: Annotated[
        str | None, typer.Option("--ray-address", help="With --executor ray: a running cluster.")
    ] = None
    # the policy
    base_url: Annotated[
        str, typer.Option("--base-url", help="openai: the endpoint, e.g. http://127.0.0.1:8000/v1.")
    ] = _POLICY.base_url
    api_key_env: Annotated[str, typer.Option("--api-key-env", help="openai: env var with the API key.")] = (
        _POLICY.api_key_env
    )
    timeout_s: Annotated[float, typer.Option("--timeout-s", help="openai: seconds per HTTP request.")] = (
        _POLICY.timeout_s
    )
    max_retries: Annotated[
        int,
        typer.Option(
            "--max-retries", help="openai: retries of a request (timeouts, 429, 5xx), with backoff."
        ),
    ] = _POLICY.max_retries
    concurrency: Annotated[
        int, typer.Option("--concurrency", help="openai: requests in flight; hf: batch size.")
    ] = _POLICY.concurrency
    logprobs: Annotated[
        bool, typer.Option("--logprobs", help="openai: record token log-probabilities and ids.")
    ] = _POLICY.logprobs
    # how it samples
    temperature: Annotated[
        float, typer.Option("--temperature", help="Sampling temperature (0 = greedy; pass@k > 1 wants > 0).")
    ] = 0.0
    top_p: Annotated[float, typer.Option("--top-p", help="Nucleus sampling.")] = 1.0
    reply_tokens: Annotated[int, typer.Option("--reply-tokens", help="Longest reply, in tokens.")] = 1024
    seed: Annotated[int | None, typer.Option("--seed", help="Sampling seed (default: none).")] = None
    # when the loop stops an attempt
    max_steps: Annotated[int, typer.Option("--max-steps", help="Policy turns (env steps) per attempt.")] = (
        _LIMITS.max_steps
    )
    max_tokens: Annotated[
        int, typer.Option("--max-tokens", help="Prompt + completion tokens per attempt; 0 = no limit.")
    ] = _LIMITS.max_tokens
    max_wall_s: Annotated[float, typer.Option("--max-wall-s", help="Seconds per attempt.")] = (
        _LIMITS.max_wall_s
    )
    # the env
    mode: Annotated[
        str,
        typer.Option(
            "--mode", help="agent (tool calls, many turns) or agentless (one SEARCH/REPLACE answer)."
        ),
    ] = "agent"
    context: Annotated[
        str | None, typer.Option("--context", help="The agentless env's context option, e.g. window.")
    ] = None
    env_option: Annotated[
        list[str] | None, typer.Option("--env-option", help="An env option KEY=VALUE (repeatable).")
    ] = None
    prompts: Annotated[
        Path | None, typer.Option("--prompts", help="Folder of template overrides (system.md, ...).")
    ] = None
    reward_config: Annotated[
        Path | None, typer.Option("--reward-config", help="YAML whose `reward:` composes the reward.")
    ] = None
    repos_dir: ReposDir = None
    sandbox: Sandbox = "bwrap"

    def policy_config(self, spec: str = "") -> PolicyConfig:
        """--policy with the backend options; `spec` another policy with the same options (eval's --route)."""
        if not (spec or self.policy):
            raise ConfigError(
                "--policy: name the policy to run, e.g. --policy scripted:gold or --policy hf:ckpt/sft"
            )
        return PolicyConfig(
            spec=spec or self.policy, base_url=self.base_url, api_key_env=self.api_key_env, timeout_s=self.timeout_s,
            max_retries=self.max_retries, concurrency=self.concurrency, logprobs=self.logprobs,
        )  # fmt: skip

    def sampling(self) -> SamplingParams:
        return SamplingParams(
            temperature=self.temperature, top_p=self.top_p, max_tokens=self.reply_tokens, seed=self.seed
        )

    def limits(self) -> AgentLimits:
        return AgentLimits(max_steps=self.max_steps, max_tokens=self.max_tokens, max_wall_s=self.max_wall_s)

    def env_options(self) -> dict[str, Any]:
        """--env-option pairs (values read as YAML scalars)."""
        return parse_env_options(self.env_option or [])

    def reward(self) -> dict[str, Any] | None:
        """The `reward:` mapping of --reward-config (None without it)."""
        return read_reward_config(self.reward_config) if self.reward_config else None

    @property
    def instance_ids(self) -> tuple[str, ...]:
        return tuple(self.instance or ())

    @property
    def repos(self) -> str | None:
        return str(self.repos_dir) if self.repos_dir else None

    @property
    def prompts_dir(self) -> str | None:
        return str(self.prompts) if self.prompts else None


def parse_env_options(pairs: list[str]) -> dict[str, Any]:
    """KEY=VALUE pairs, values read as YAML scalars.

    >>> parse_env_options(["observation_chars=4000", "tools=[bash, submit]"])
    {'observation_chars': 4000, 'tools': ['bash', 'submit']}
    """
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--env-option {pair!r}: write KEY=VALUE, e.g. observation_chars=4000")
        options[key.strip()] = yaml.safe_load(value)
    return options


def read_reward_config(path: Path) -> dict[str, Any]:
    data = load_yaml(path)
    reward = data.get("reward") if isinstance(data, dict) else None
    if not isinstance(reward, dict):
        raise ConfigError(
            f"--reward-config {path}: no `reward:` mapping in it (see examples/ for the seed's)"
        )
    return reward
