"""`repogym train flywheel`: the seed's iterative refinement, SFT -> RL -> SFT ..., one round at a time.

Before round 0 the base model is evaluated on the held-out tasks (`flywheel.eval_task_set`) ->
output_dir/baseline-eval/. Then round k, with policy P (the base model in round 0, the previous round's
GRPO result after), in output_dir/round-k/:

1. rollout: P on the train tasks (`env.task_set`), `flywheel.attempts` sampled attempts each, in env.mode
   -> rollout/;
2. SFT data (`repogym data sft`): the resolved attempts (rejection sampling; duplicates dropped), plus in
   round 0 the gold demonstrations (agentless: SWE-RL answers in env.options' context; agent: the
   `scripted:gold` policy's tool calls) -> sft.jsonl;
3. SFT (`repogym train sft`): P -> sft/;
4. GRPO (`repogym train rl`, flywheel.grpo_steps steps): sft/ -> grpo/;
5. eval: grpo/ on the held-out tasks -> eval/, the round's resolve rate.

These are the quickstart's stage functions, run through the same `Runner`: each stage's result is recorded
in its own folder the moment it finishes, so the same command after a kill at any point skips finished
stages, and the unfinished one picks up its own partial work (rollouts and evaluations from their trajectory
stores, GRPO from its last checkpoint; an unfinished SFT, minutes, starts over). output_dir/flywheel.json
holds the per-round table so far.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from repogym.agent.loop import AgentLimits
from repogym.agent.policies import PolicyConfig, SamplingParams
from repogym.config import RunConfig
from repogym.dataset import load_tasks
from repogym.errors import ConfigError
from repogym.evaluate.run import EvalConfig
from repogym.files import write_json
from repogym.pipeline.evaluate import EvalInput, RolloutInput, eval_stage, rollout_stage
from repogym.pipeline.grpo import GRPOInput, grpo_stage
from repogym.pipeline.record import LAYOUT, read_record
from repogym.pipeline.runner import SILENT, Hooks, Runner
from repogym.pipeline.sft import SFTDataInput, SFTInput, sft_data_stage, sft_stage
from repogym.rollout.run import RolloutConfig
from repogym.train.model import check_model_folder
from repogym.train.rl_checks import check_env_options, check_numbers
from repogym.train.rl_tasks import load_task_set, machine_workers, reward_for
from repogym.train.sft_config import SFTRunConfig
from repogym.train.sft_data import SFTDataOptions

STATE_FILE = "flywheel.json"
STATE_KIND = "repogym.flywheel"


@dataclass(frozen=True)
class RoundRow:
    """One line of the per-round table."""

    round: int
    rollout_resolve_rate: float
    sft_rows: int
    grpo_reward_first: float
    grpo_reward_last: float
    """GRPO's mean reward at its first and last logged step (0.0 when none was logged)."""
    eval_resolve_rate: float
    baseline_resolve_rate: float
    """The base model's held-out resolve rate (the same on every row)."""
    policy: str
    """The model folder this round produced."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_flywheel(config: RunConfig, rounds: int, hooks: Hooks = SILENT) -> list[RoundRow]:
    """Run (or finish) `rounds` rounds; returns the per-round table."""
    check_flywheel(config, rounds)
    out = Path(config.output_dir)
    _record_table(out, [])
    run = Runner(hooks)
    baseline_eval = held_out_eval(config, config.base_model, out / "baseline-eval", "baseline")
    baseline = run("baseline", eval_stage, baseline_eval)
    policy, table = config.base_model, []
    for k in range(rounds):
        row = _round(run, config, k, policy, baseline.resolve_rate)
        table.append(row)
        _record_table(out, table)
        policy = row.policy
    return table


def _record_table(out: Path, table: list[RoundRow]) -> None:
    """output_dir/flywheel.json: the rounds finished so far (refusing the single ledger of an older repogym)."""
    path = out / STATE_FILE
    if not table and path.is_file():
        read_record(
            path, STATE_KIND, "give a new output_dir, or finish that run with the repogym that started it"
        )
    write_json(path, {"kind": STATE_KIND, "layout": LAYOUT, "rounds": [row.to_dict() for row in table]})


def _round(run: Runner, config: RunConfig, k: int, policy: str, baseline: float) -> RoundRow:
    """Round k's five stages (each skipped when its folder holds its result)."""
    folder = Path(config.output_dir) / f"round-{k}"
    rollout = run(f"round-{k}/rollout", rollout_stage, rollout_input(config, policy, folder / "rollout", k))
    rows = run(f"round-{k}/sft_data", sft_data_stage, sft_data_input(config, folder, with_gold=k == 0))
    sft = run(f"round-{k}/sft", sft_stage, sft_input(config, policy, folder, k))
    grpo = run(f"round-{k}/grpo", grpo_stage, grpo_input(config, sft.model_dir, folder / "grpo"))
    score = run(
        f"round-{k}/eval", eval_stage, held_out_eval(config, grpo.model_dir, folder / "eval", f"round{k}")
    )
    return RoundRow(
        round=k, rollout_resolve_rate=rollout.resolve_rate, sft_rows=rows.rows,
        grpo_reward_first=_or_zero(grpo.reward_first), grpo_reward_last=_or_zero(grpo.reward_last),
        eval_resolve_rate=score.resolve_rate, baseline_resolve_rate=baseline, policy=grpo.model_dir,
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


def rollout_input(config: RunConfig, policy: str, out: Path, round_index: int) -> RolloutInput:
    settings = config.flywheel
    return RolloutInput(RolloutConfig(
        tasks=config.env.task_set, policy=PolicyConfig(spec=f"hf:{policy}"), out=str(out), n=settings.attempts,
        jobs=max(2, machine_workers()),
        settings_sampling=SamplingParams(
            temperature=config.grpo.temperature, max_tokens=settings.max_reply_tokens, seed=config.seed + round_index
        ),
        limits=AgentLimits(max_steps=config.rollout.max_steps), sandbox=config.env.sandbox,
        reward=_reward_mapping(config), env_options=dict(config.env.options), mode=config.env.mode,
    ))  # fmt: skip


def sft_data_input(config: RunConfig, folder: Path, with_gold: bool) -> SFTDataInput:
    """The round's resolved attempts (+ the train tasks' gold demonstrations in round 0) -> folder/sft.jsonl."""
    options = config.env.options
    data_options = SFTDataOptions(
        gold=config.env.mode, context=options.get("context", "files"), window_lines=options.get("window_lines", 3),
        localize=options.get("localize", "oracle"), sandbox=config.env.sandbox, jobs=max(2, machine_workers()),
    )  # fmt: skip
    return SFTDataInput(
        sources=(folder / "rollout", *([Path(config.env.task_set)] if with_gold else [])), options=data_options,
        rows_file=folder / "sft.jsonl",
        empty_message=f"{folder}: no resolved attempt to fine-tune on (the policy resolved nothing and there are "
        "no gold demonstrations after round 0); raise flywheel.attempts or start from a stronger base_model",
    )  # fmt: skip


def sft_input(config: RunConfig, policy: str, folder: Path, round_index: int) -> SFTInput:
    """SFT of the round's policy on folder/sft.jsonl, from scratch each time (a killed one starts over)."""
    settings = config.flywheel
    return SFTInput(SFTRunConfig(
        base_model=policy, data=str(folder / "sft.jsonl"), output_dir=str(folder / "sft"),
        max_steps=settings.sft_steps, learning_rate=settings.sft_learning_rate, seed=config.seed + round_index,
        save_steps=settings.sft_steps,
    ), resume=False)  # fmt: skip


def grpo_input(config: RunConfig, base_model: str, out: Path) -> GRPOInput:
    steps = config.flywheel.grpo_steps or config.total_steps
    return GRPOInput(
        config.model_copy(update={"base_model": base_model, "output_dir": str(out), "total_steps": steps})
    )


def held_out_eval(config: RunConfig, model_dir: str, out: Path, stage: str) -> EvalInput:
    """`repogym eval` of `model_dir` on flywheel.eval_task_set: greedy with one attempt, T=1 with more."""
    settings = config.flywheel
    attempts = settings.eval_attempts
    return EvalInput(EvalConfig(
        tasks=settings.eval_task_set, policy=PolicyConfig(spec=f"hf:{model_dir}"), out=str(out), n=attempts,
        stage=stage, split="heldout", mode=config.env.mode, env_options=dict(config.env.options),
        sampling=SamplingParams(temperature=0.0 if attempts == 1 else 1.0, max_tokens=settings.max_reply_tokens,
                                seed=config.seed),
        limits=AgentLimits(max_steps=config.rollout.max_steps), sandbox=config.env.sandbox,
        reward=_reward_mapping(config),
    ))  # fmt: skip


def _reward_mapping(config: RunConfig) -> dict[str, Any]:
    return config.reward.model_dump(mode="json", by_alias=True)


def _or_zero(value: float | None) -> float:
    return 0.0 if value is None else value
