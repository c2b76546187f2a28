"""Run configuration: YAML -> pydantic models, with `key.sub=value` overrides.

The seed's training config (its section 9.1) loads unchanged. Every model
forbids unknown keys; every error names the key path, the bad value and what
is allowed, and a misspelled key gets a suggestion.
"""

from __future__ import annotations

import copy
import difflib
import os
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from repogym.errors import ConfigError


class ConfigModel(BaseModel):
    """The base of every config section: frozen, unknown keys refused, each field's docstring its help."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, use_attribute_docstrings=True, populate_by_name=True
    )


class RewardComponentConfig(ConfigModel):
    """One weighted term of the reward: `weight * fn(...)`."""

    name: str
    """Label of the term in reward breakdowns (e.g. tests_pass)."""
    weight: float = 1.0
    """Multiplier applied to the component's value."""
    fn: str
    """Registered reward function (e.g. run_pytest, patch_similarity) or a dotted path package.module:function."""
    kwargs: dict[str, Any] = Field(default_factory=dict)
    """Keyword options passed to the function (e.g. {partial: true} for tests_pass)."""


def _default_components() -> list[RewardComponentConfig]:
    return [
        RewardComponentConfig(name="tests_pass", weight=1.0, fn="run_pytest"),
        RewardComponentConfig(name="compile_pass", weight=0.5, fn="type_check"),
        RewardComponentConfig(name="minimal_diff", weight=0.1, fn="diff_size_penalty"),
    ]


class VerifierRewardConfig(ConfigModel):
    """GRPO's verifier term: a learned verifier's p(YES) on a completion's final diff, for tasks no test can prove.

    A task with FAIL_TO_PASS tests is judged by its tests alone and the verifier is never asked about it, so a
    policy cannot trade a test failure for the verifier's approval; a task without them (which `env.task_set`
    may then hold) gets `weight * p(YES)` in this term, 0 for an empty diff or an unparsable answer."""

    path: str = Field(min_length=1)
    """The verifier folder (`repogym train verifier --out`, or any causal LM with its tokenizer and chat template),
    checked by `repogym config check` and loaded once per training run."""
    weight: float = Field(default=1.0, allow_inf_nan=False)
    """Multiplier of p(YES) (in [0, 1]) in the reward; 1.0 puts a verified attempt level with a resolved one."""
    batch_size: int | None = Field(default=None, ge=1)
    """Attempts per forward pass of the verifier; None: every test-free completion of a training batch in one pass."""


class RewardConfig(ConfigModel):
    """How an attempt's grade becomes a scalar reward."""

    type: Literal["rule_based"] = "rule_based"
    """Only rule-based rewards (computed from tests and diffs) exist today."""
    components: list[RewardComponentConfig] = Field(default_factory=_default_components, min_length=1)
    """Terms summed into the reward; the defaults are the seed's (tests +1.0, compile -0.5, diff -0.1)."""
    forged_report_penalty: float = Field(default=-1.0, allow_inf_nan=False)
    """The whole reward of an attempt graded REPORT_FORGED (its code under test rewrote the test report),
    in place of every component: a forger must earn nothing from the other terms (similarity, diff size).
    Keep it no higher than the lowest total an honest attempt can get with your components: -0.6 for the
    defaults in agent mode (compile -0.5, diff -0.1), -1.0 in agentless mode (a format error)."""
    verifier: VerifierRewardConfig | None = None
    """A learned verifier as one more term, named `verifier` in the breakdown (GRPO only, `repogym train rl`):
    its score where a task has no FAIL_TO_PASS tests, the tests where it has; None: no verifier term."""


class EnvConfig(ConfigModel):
    """Which environment episodes run in."""

    type: Literal["repogym", "swegym"] = "repogym"
    """'swegym' names the same multi-turn RepoEnv (SWE-Gym's setting); kept so the seed's config loads."""
    task_set: str = ""
    """Task file (JSONL, JSON or parquet) or a dataset name."""
    mode: Literal["agent", "agentless"] = "agent"
    """'agent': multi-turn tool use; 'agentless': one SEARCH/REPLACE answer (SWE-RL's setting)."""
    sandbox: str = "bwrap"
    """Sandbox backend: bwrap (isolated, the default) or local (no isolation)."""
    options: dict[str, Any] = Field(default_factory=dict)
    """More `repogym.env.options.EnvOptions` fields for every episode (e.g. {observation_chars: 4000});
    checked against EnvOptions before training starts."""


class RolloutSettings(ConfigModel):
    """How attempts are sampled."""

    num_candidates: int = Field(default=8, ge=1, le=4096)
    """Attempts per task (the GRPO group size)."""
    async_: bool = Field(default=True, alias="async")
    """Overlap policy calls with sandbox work. In GRPO agent mode a submitted diff is graded in the
    background while the group's other rollouts still generate; agentless answers only exist once TRL's
    one batched generate call returns, so there it changes nothing."""
    max_steps: int = Field(default=50, ge=1, le=10_000)
    """Tool calls per episode before it is truncated (in GRPO: TRL's max_tool_calling_iterations)."""


class GRPOSettings(ConfigModel):
    """GRPO knobs beyond the seed's keys; names and defaults are TRL's GRPOConfig's unless said otherwise."""

    loss_type: Literal["dapo", "grpo", "dr_grpo", "bnpo", "cispo", "sapo"] = "dapo"
    """Policy loss aggregation (TRL's default dapo: token-level, no length bias)."""
    beta: float = Field(default=0.0, ge=0)
    """KL coefficient against the starting model; > 0 loads a frozen reference copy (and logs `kl`)."""
    epsilon: float = Field(default=0.2, gt=0, lt=1)
    """Lower clip range of the importance ratio."""
    epsilon_high: float | None = Field(default=None, gt=0, lt=1)
    """Upper clip range (DAPO's clip-higher uses 0.28); None: the same as epsilon."""
    scale_rewards: Literal["group", "batch", "none"] = "group"
    """Divide advantages by the group's reward std, the batch's, or not at all (Dr. GRPO: none)."""
    zero_variance_groups: Literal["skip", "keep"] = "skip"
    """A group whose completions all scored the same has no advantage. skip: its completions leave the loss and its
    token count, and a step with nothing left makes no update (repogym.train.rl_groups; with beta > 0 every
    completion carries the KL term, and nothing is dropped); keep: TRL's (they count as zero-advantage tokens, and
    AdamW still steps on its momentum)."""
    format_errors: Literal["penalty", "mask"] = "penalty"
    """Agentless answers that do not parse. penalty: the reward scores them (SWE-RL's -1 from the `format` term);
    mask: every term abstains, so they get no advantage, stay out of their group's baseline and leave the loss
    (DeepSWE's compact filtering, applied to format errors): the advantage is then about fixing the bug only."""
    num_iterations: int = Field(default=1, ge=1)
    """Optimiser passes over each generated batch (mu in the GRPO paper)."""
    max_completion_length: int = Field(default=512, ge=1)
    """Longest completion in tokens; in agent mode it bounds all turns of a rollout together."""
    temperature: float = Field(default=1.0, gt=0)
    """Sampling temperature of rollouts."""
    top_p: float = Field(default=1.0, gt=0, le=1)
    """Nucleus sampling of rollouts."""
    gradient_accumulation_steps: int = Field(default=1, ge=1)
    """Micro-batches per optimiser step; batch_size must be a multiple of it."""
    lr_scheduler_type: str = "linear"
    """transformers scheduler name (linear, constant, cosine, ...)."""
    max_grad_norm: float = Field(default=1.0, gt=0)
    """Gradient clipping norm."""
    gradient_checkpointing: bool = True
    """Recompute activations in the backward pass (saves memory on big models, costs time on tiny ones)."""
    save_steps: int = Field(default=50, ge=1)
    """Write a checkpoint (model, optimiser, scheduler, RNG, trainer state) every this many steps."""
    save_total_limit: int | None = Field(default=None, ge=1)
    """Keep only the newest N checkpoints (None: keep all)."""
    logging_steps: int = Field(default=1, ge=1)
    """Write a metrics.jsonl row every this many steps."""
    grading_workers: int = Field(default=0, ge=0)
    """Completions graded at once in the sandbox; 0: one per CPU core of this machine."""
    grading_executor: Literal["local", "ray"] = "local"
    """Where agentless completions are graded. local: grading_workers threads in the trainer's process; ray: one
    Ray task per completion on the cluster at ray_address, at most ray_max_in_flight at once (docs/ray.md). Agent
    mode grades each rollout in its own episode, in the trainer's process: local only."""
    ray_address: str | None = None
    """With grading_executor: ray, the cluster (host:port); None: a local Ray of grading_workers CPUs."""
    ray_max_in_flight: int = Field(default=64, ge=1)
    """With grading_executor: ray, completions in Ray at once; the rest of a batch waits in the trainer, read as
    slots free up, so a burst never queues whole in a raylet. About twice the cluster's CPUs keeps them busy."""
    report_to: list[str] = Field(default_factory=lambda: ["tensorboard"])
    """transformers loggers besides metrics.jsonl (tensorboard, wandb, ...; [] for none)."""
    use_vllm: bool = False
    """Generate with vLLM when it is installed (TRL's use_vllm)."""
    vllm_mode: Literal["colocate", "server"] = "colocate"
    """colocate: vLLM in the training process; server: a `trl vllm-serve` process."""


class FlywheelConfig(ConfigModel):
    """`repogym train flywheel`: rounds of rollout -> SFT on what resolved -> GRPO -> held-out eval."""

    eval_task_set: str = ""
    """Held-out task file, evaluated after every round (never trained on)."""
    attempts: int = Field(default=4, ge=1)
    """Rollouts of the current policy per train task per round (rejection sampling)."""
    eval_attempts: int = Field(default=1, ge=1)
    """Attempts per held-out task; the resolve rate is over all of them."""
    sft_steps: int = Field(default=50, ge=1)
    """SFT optimiser steps per round."""
    sft_learning_rate: float = Field(default=1e-4, gt=0, lt=1)
    """SFT learning rate."""
    grpo_steps: int | None = Field(default=None, ge=1)
    """GRPO steps per round (None: total_steps)."""
    max_reply_tokens: int = Field(default=512, ge=1)
    """Longest reply of the policy in rollouts and evaluation."""


class RunConfig(ConfigModel):
    """A training run (the seed's section 9.1 format)."""

    algorithm: Literal["sft", "grpo"] = "grpo"
    """Training algorithm."""
    base_model: str = ""
    """Model to start from: a local directory or a hub name (no downloads at run time here)."""
    reward: RewardConfig = Field(default_factory=RewardConfig)
    env: EnvConfig = Field(default_factory=EnvConfig)
    rollout: RolloutSettings = Field(default_factory=RolloutSettings)
    batch_size: int = Field(default=32, ge=1)
    """Completions per optimiser step (TRL's generation batch): batch_size / rollout.num_candidates tasks,
    each sampled rollout.num_candidates times, so it must be a multiple of rollout.num_candidates."""
    learning_rate: float = Field(default=1e-6, gt=0, lt=1)
    """Optimiser learning rate; YAML 1.1 reads 1e-6 as a string, which is accepted as the number."""
    total_steps: int = Field(default=1000, ge=1)
    """Optimiser steps."""
    output_dir: str = "runs/grpo"
    """Run folder: checkpoint-N/ folders, metrics.jsonl, TensorBoard logs and the final model."""
    seed: int = 0
    """Seed of sampling, data order and initialisation (a run is reproducible on one machine)."""
    grpo: GRPOSettings = Field(default_factory=GRPOSettings)
    flywheel: FlywheelConfig = Field(default_factory=FlywheelConfig)


def load_yaml(path: str | os.PathLike[str]) -> dict[str, Any]:
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{file}: no such file") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{file}: not UTF-8 text (byte {exc.start}): {exc.reason}") from None
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read: {exc.strerror or exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{file}{line}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: the top level must be a mapping of keys, got {type(data).__name__}")
    return data


def apply_overrides(data: dict[str, Any], overrides: Iterable[str]) -> dict[str, Any]:
    """Apply `a.b.c=value` overrides (value parsed as YAML; list items by index) to a copy of `data`.

    >>> apply_overrides({"rollout": {"max_steps": 50}}, ["rollout.max_steps=8", "env.type=swegym"])
    {'rollout': {'max_steps': 8}, 'env': {'type': 'swegym'}}
    >>> apply_overrides({"reward": {"components": [{"fn": "f"}]}}, ["reward.components.0.weight=2"])
    {'reward': {'components': [{'fn': 'f', 'weight': 2}]}}
    """

    result = copy.deepcopy(data)
    for override in overrides:
        key, sep, raw = override.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"override {override!r}: expected key.path=value, e.g. rollout.max_steps=20")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        parts = key.strip().split(".")
        if not all(parts):
            raise ConfigError(f"override {override!r}: empty key between dots in {key.strip()!r}")
        node: Any = result
        try:
            for depth, part in enumerate(parts[:-1]):
                node = _child(node, part, ".".join(parts[: depth + 1]))
            _assign(node, parts[-1], value, key.strip())
        except ConfigError as exc:
            raise ConfigError(f"override {override!r}: {exc}") from None
    return result


def _child(node: Any, part: str, path: str) -> Any:
    """The container at `path` (whose last part is `part`), creating a mapping where nothing is set."""
    if isinstance(node, list):
        return node[_index(part, node, path)]
    _refuse_missing_list(node, part, path)
    child = node.get(part)
    if child is None:
        node[part] = child = {}
    elif not isinstance(child, dict | list):
        raise ConfigError(f"{path!r} is a value ({child!r}), not a mapping or list")
    return child


def _assign(node: Any, part: str, value: Any, path: str) -> None:
    if isinstance(node, list):
        node[_index(part, node, path)] = value
    else:
        _refuse_missing_list(node, part, path)
        node[part] = value


def _refuse_missing_list(node: dict[str, Any], part: str, path: str) -> None:
    # Creating {"0": ...} where the file has no list would only fail later with a puzzling
    # "not a valid list" error; defaults (such as reward.components) are not in the file.
    if part.isdigit() and not node:
        parent = path.rpartition(".")[0] or "(top level)"
        raise ConfigError(
            f"{parent!r} is not a list in the file, so it has no item {part}; write the list in the YAML file"
        )


def _index(part: str, node: list[Any], path: str) -> int:
    if not part.isdigit() or int(part) >= len(node):
        parent = path.rpartition(".")[0]
        allowed = f"0 to {len(node) - 1}" if node else "none, the list is empty"
        raise ConfigError(
            f"{parent!r} is a list of {len(node)} item(s); {part!r} is not an index (allowed: {allowed})"
        )
    return int(part)


def load_config(
    path: str | os.PathLike[str] | None = None,
    overrides: Iterable[str] = (),
    model: type[ConfigModel] = RunConfig,
) -> Any:
    """Load a YAML file (or defaults when `path` is None), apply overrides, validate."""
    data = load_yaml(path) if path is not None else {}
    data = apply_overrides(data, overrides)
    return validate_config(data, model, source=str(path) if path is not None else "config")


def validate_config(
    data: Mapping[str, Any], model: type[ConfigModel] = RunConfig, source: str = "config"
) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        lines = [_describe_error(error, model) for error in exc.errors()]
        raise ConfigError(
            f"{source}: {len(lines)} error(s)\n" + "\n".join(f"  - {line}" for line in lines)
        ) from None


def _describe_error(error: Mapping[str, Any], model: type[ConfigModel]) -> str:
    loc = [str(part) for part in error["loc"]]
    path = ".".join(loc) or "(top level)"
    value = error.get("input")
    if error["type"] == "extra_forbidden":
        allowed = _fields_at(model, loc[:-1])
        close = difflib.get_close_matches(loc[-1], allowed, n=1)
        hint = f"did you mean {'.'.join([*loc[:-1], close[0]])!r}? " if close else ""
        return f"{path}: unknown key; {hint}allowed here: {', '.join(allowed)}"
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return f"{path}: {error['msg']} (got {shown})"


def _fields_at(model: type[BaseModel], loc: list[str]) -> list[str]:
    """Names accepted at a location, following nested models (and list indexes)."""
    current: Any = model
    for part in loc:
        if part.isdigit():
            continue
        field = current.model_fields.get(part) if isinstance(current, type) else None
        if field is None:
            return []
        current = _model_of(field.annotation)
        if current is None:
            return []
    names = []
    for name, field in current.model_fields.items():
        names.append(field.alias or name)
    return names


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_of(arg)
        if found is not None:
            return found
    return None


def config_to_dict(config: BaseModel) -> dict[str, Any]:
    """The resolved configuration as plain data, with the YAML key names (aliases)."""
    return config.model_dump(mode="json", by_alias=True)
