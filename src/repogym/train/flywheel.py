"""`repogym train flywheel`: the seed's iterative refinement, SFT -> RL -> SFT ..., one round at a time.

Before round 0 the base model is evaluated on the held-out tasks (`flywheel.eval_task_set`). Then
round k, with policy P (the base model in round 0, the previous round's GRPO result after):

1. rollout: P on the train tasks (`env.task_set`), `flywheel.attempts` sampled attempts each
   (`repogym.rollout`, in env.mode) -> round-k/rollout/;
2. SFT data (`repogym data sft`'s library function): the resolved attempts (rejection sampling;
   duplicates dropped), plus in round 0 the gold demonstrations (agentless: SWE-RL answers built
   from the gold patches, in env.options' context; agent: the `scripted:gold` policy's tool
   calls) -> round-k/sft.jsonl;
3. SFT: P -> round-k/sft/ (`repogym train sft`'s library function);
4. GRPO: round-k/sft -> round-k/grpo/ (`repogym.train.grpo.train_rl`, flywheel.grpo_steps steps);
5. eval: round-k/grpo on the held-out tasks -> the round's resolve rate (`evaluate_policy`).

`output_dir/flywheel.json` records each stage's result the moment it finishes (atomic writes), so
the same command after a kill at any point skips finished stages, and the unfinished one picks up
its own partial work: rollouts and evaluations from their trajectory stores, GRPO from its last
checkpoint; an unfinished SFT (minutes) runs again.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from repogym.config import RunConfig
from repogym.dataset import load_tasks
from repogym.errors import ConfigError
from repogym.files import write_json
from repogym.train.flywheel_seams import evaluate_policy, run_sft
from repogym.train.model import check_model_folder
from repogym.train.rl_checks import check_env_options, check_numbers
from repogym.train.rl_tasks import load_task_set, machine_workers, reward_for

Notify = Callable[[str], None]
STATE_FILE = "flywheel.json"


@dataclass(frozen=True)
class RoundRow:
    """One line of the per-round table."""

    round: int
    rollout_resolve_rate: float
    sft_rows: int
    grpo_reward_first: float
    grpo_reward_last: float
    eval_resolve_rate: float
    baseline_resolve_rate: float
    """The base model's held-out resolve rate (the same on every row)."""
    policy: str
    """The model folder this round produced."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class FlywheelState:
    """flywheel.json: stage -> result for every finished stage ('baseline', 'round-0/rollout', ...)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.stages: dict[str, Any] = {}
        if path.is_file():
            self.stages = json.loads(path.read_text(encoding="utf-8")).get("stages", {})

    def run(self, stage: str, work: Callable[[], Any], notify: Notify) -> Any:
        """The stage's recorded result, or do the work now and record it."""
        if stage in self.stages:
            notify(f"{stage}: done earlier, skipped")
            return self.stages[stage]
        notify(f"{stage}: running")
        self.stages[stage] = work()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_json(self.path, {"stages": self.stages})
        return self.stages[stage]


def run_flywheel(
    config: RunConfig,
    rounds: int,
    *,
    notify: Notify = lambda _: None,
    sft: Callable[..., Path] = run_sft,
    evaluate: Callable[..., float] = evaluate_policy,
) -> list[RoundRow]:
    """Run (or finish) `rounds` rounds; returns the per-round table."""
    check_flywheel(config, rounds)
    out = Path(config.output_dir)
    state = FlywheelState(out / STATE_FILE)
    settings = config.flywheel

    def held_out(model: str, folder: Path, stage: str) -> float:
        return evaluate(
            settings.eval_task_set, model, out_dir=folder, mode=config.env.mode, attempts=settings.eval_attempts,
            max_steps=config.rollout.max_steps, max_reply_tokens=settings.max_reply_tokens,
            reward=_reward_mapping(config), env_options=config.env.options, sandbox=config.env.sandbox,
            seed=config.seed, stage=stage,
        )  # fmt: skip

    baseline = state.run(
        "baseline", lambda: held_out(config.base_model, out / "baseline-eval", "baseline"), notify
    )
    policy, table = config.base_model, []
    for k in range(rounds):
        row = _round(config, state, k, policy, sft, held_out, notify)
        table.append(dataclasses.replace(row, baseline_resolve_rate=baseline))
        policy = row.policy
    return table


def _round(
    config: RunConfig,
    state: FlywheelState,
    k: int,
    policy: str,
    sft: Callable[..., Path],
    held_out: Callable[[str, Path, str], float],
    notify: Notify,
) -> RoundRow:
    """Round k's five stages (each skipped when flywheel.json says it is done)."""
    folder, settings = Path(config.output_dir) / f"round-{k}", config.flywheel
    rollout = state.run(f"round-{k}/rollout", lambda: _rollout(config, policy, folder / "rollout", k), notify)
    rows = state.run(f"round-{k}/sft_data", lambda: _sft_data(config, folder, k == 0), notify)

    def fine_tune() -> str:
        shutil.rmtree(folder / "sft", ignore_errors=True)  # an SFT killed midway starts over
        model = sft(policy, folder / "sft.jsonl", folder / "sft", max_steps=settings.sft_steps,
                    learning_rate=settings.sft_learning_rate, seed=config.seed + k)  # fmt: skip
        return str(model)

    sft_dir = state.run(f"round-{k}/sft", fine_tune, notify)
    grpo = state.run(f"round-{k}/grpo", lambda: _grpo(config, sft_dir, folder / "grpo", notify), notify)
    score = state.run(
        f"round-{k}/eval", lambda: held_out(grpo["model_dir"], folder / "eval", f"round{k}"), notify
    )
    return RoundRow(
        round=k, rollout_resolve_rate=rollout["resolve_rate"], sft_rows=rows["rows"],
        grpo_reward_first=grpo["reward_first"], grpo_reward_last=grpo["reward_last"], eval_resolve_rate=score,
        baseline_resolve_rate=0.0, policy=grpo["model_dir"],
    )  # fmt: skip


def check_flywheel(config: RunConfig, rounds: int) -> None:
    """Everything that can be wrong with the settings, before the first stage."""
    if rounds < 1:
        raise ConfigError(f"--rounds: must be >= 1, got {rounds}")
    check_numbers(config)
    check_env_options(config)
    check_model_folder(config.base_model)
    reward_for(config)
    load_task_set(config.env.task_set)
    if not config.flywheel.eval_task_set:
        raise ConfigError(
            "flywheel.eval_task_set: not set; give the held-out task file evaluated after each round "
            "(tasks never trained on), e.g. flywheel.eval_task_set=heldout.jsonl"
        )
    held_out = load_task_set(config.flywheel.eval_task_set)
    shared = set(held_out.ids()) & set(load_tasks(config.env.task_set).ids())
    if shared:
        raise ConfigError(
            f"flywheel.eval_task_set: {len(shared)} task(s) are also in env.task_set ({', '.join(sorted(shared)[:3])}); "
            "the held-out split must not be trained on"
        )


def _rollout(config: RunConfig, policy: str, out: Path, round_index: int) -> dict[str, Any]:
    from repogym.agent.loop import AgentLimits
    from repogym.agent.policies import PolicyConfig, SamplingParams
    from repogym.rollout.run import RolloutConfig, run_rollout

    settings = config.flywheel
    rollout = RolloutConfig(
        tasks=config.env.task_set, policy=PolicyConfig(spec=f"hf:{policy}"), out=str(out), n=settings.attempts,
        jobs=max(2, machine_workers()),
        settings_sampling=SamplingParams(
            temperature=config.grpo.temperature, max_tokens=settings.max_reply_tokens, seed=config.seed + round_index
        ),
        limits=AgentLimits(max_steps=config.rollout.max_steps), sandbox=config.env.sandbox,
        reward=_reward_mapping(config), env_options=dict(config.env.options), mode=config.env.mode,
    )  # fmt: skip
    summary = run_rollout(rollout)
    return {"resolve_rate": summary.resolve_rate, "attempts": summary.attempts, "resolved": summary.resolved}


def _sft_data(config: RunConfig, folder: Path, with_gold: bool) -> dict[str, Any]:
    """`repogym data sft`: the resolved attempts (+ gold in round 0), deduplicated -> folder/sft.jsonl."""
    from repogym.train.sft_data import SFTDataOptions, build_sft_data, write_sft_data

    options = config.env.options
    data_options = SFTDataOptions(
        gold=config.env.mode, context=options.get("context", "files"), window_lines=options.get("window_lines", 3),
        localize=options.get("localize", "oracle"), sandbox=config.env.sandbox, jobs=max(2, machine_workers()),
    )  # fmt: skip
    sources = [folder / "rollout", *([Path(config.env.task_set)] if with_gold else [])]
    data = build_sft_data(sources, data_options, folder / "sft.jsonl")
    if not data.rows:
        raise ConfigError(
            f"{folder}: no resolved attempt to fine-tune on (the policy resolved nothing and there are no gold "
            "demonstrations after round 0); raise flywheel.attempts or start from a stronger base_model"
        )
    write_sft_data(data, folder / "sft.jsonl")
    resolved = sum(report.kept for report in data.reports if report.kind == "rollout")
    return {"rows": len(data.rows), "resolved": resolved, "gold": len(data.rows) - resolved}


def _grpo(config: RunConfig, base_model: str, out: Path, notify: Notify) -> dict[str, Any]:
    from repogym.train.grpo import train_rl

    steps = config.flywheel.grpo_steps or config.total_steps
    run = config.model_copy(update={"base_model": base_model, "output_dir": str(out), "total_steps": steps})
    result = train_rl(run, resume=True, notify=notify)  # a GRPO stage killed midway resumes at its checkpoint
    rewards = [row["reward"] for row in result.metrics if isinstance(row.get("reward"), int | float)]
    return {
        "model_dir": str(result.model_dir),
        "steps": result.global_step,
        "reward_first": rewards[0] if rewards else 0.0,
        "reward_last": rewards[-1] if rewards else 0.0,
    }


def _reward_mapping(config: RunConfig) -> dict[str, Any]:
    return config.reward.model_dump(mode="json", by_alias=True)
