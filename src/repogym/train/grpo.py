"""`repogym train rl`: GRPO with the sandbox in the loop, on TRL's GRPOTrainer.

Where this departs from SWE-RL (arXiv 2502.18449) and DeepSWE (Agentica / Together AI, 2025):

- Group size: `rollout.num_candidates` completions per task (the seed's 16 is SWE-RL's G = 16);
  `batch_size` counts completions per optimiser step, so the seed's 32 is 2 tasks x 16, where
  SWE-RL stepped on 32 problems x 16.
- KL: `grpo.beta` 0 by default (TRL's), so no reference model is kept: DeepSWE also drops the KL
  loss; SWE-RL trains with GRPO's objective, which carries a KL term (set grpo.beta > 0 for it).
- Loss: TRL's `dapo` (token-level mean over the batch, no per-sequence length bias) with advantages
  scaled by the group's reward std (`grpo.scale_rewards: group`). DeepSWE's GRPO++ also clips higher
  (grpo.epsilon_high=0.28), does not scale by the std (grpo.scale_rewards=none) and uses
  leave-one-out baselines and compact filtering, which TRL does not offer.
- Reward: the configured components from real test runs (the seed's tests +1.0, compile -0.5,
  unnecessary diff -0.1: SWE-Gym / DeepSWE style, DeepSWE's being a sparse 1/0 on the tests), not
  SWE-RL's patch similarity, which is one more component (`patch_similarity`). In agentless mode a
  malformed answer scores -1.0 as in SWE-RL (see `repogym.train.rl_tasks.reward_for`). Tasks without tests may
  be rewarded by a learned verifier's p(YES) (`reward.verifier`, repogym.train.rl_verifier); a task with tests
  is never shown to it.
- Context: agentless prompts show whole files, as SWE-RL's do (env.options can shrink them);
  agent mode is DeepSWE's multi-turn tool use, with repogym's tools, masked from the loss.

A step reads as TRL runs it: rollout (`_generate`: sampling, and tool calls in agent mode) ->
grade (the reward functions: every completion of the batch at once in the sandbox,
`repogym.train.rl_reward`) -> advantages (group-normalised, in TRL) -> loss and update (TRL).
Two overrides of TRL: one times the first two, for the logged wall-time split; the other takes groups whose
completions all scored the same out of the loss, and makes no update on a step that has nothing else
(`grpo.zero_variance_groups`, repogym.train.rl_groups; DAPO and SkyRL resample such groups instead).
Format errors: scored -1 (`grpo.format_errors: penalty`), or left out of the advantage (`mask`).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repogym.config import RunConfig, config_to_dict
from repogym.errors import ConfigError
from repogym.files import write_json
from repogym.rewards import VERIFIER_TERM
from repogym.rollout.ray_grading import RayTasks
from repogym.train.checkpoints import resume_point as newest_complete
from repogym.train.metrics import METRICS_FILE, drop_rows_after, metrics_callback, read_metrics
from repogym.train.model import check_model_folder
from repogym.train.progress import use_rich_progress
from repogym.train.rl_checks import (
    check_env_options,
    check_grading_executor,
    check_numbers,
    load_checked_tokenizer,
)
from repogym.train.rl_groups import DropUniformGroups
from repogym.train.rl_metrics import PhaseTimer, drop_abstained, step_clock
from repogym.train.rl_ray import ray_agentless_scorer
from repogym.train.rl_reward import SandboxReward, agent_scorer, agentless_scorer
from repogym.train.rl_tasks import TaskEnvs, machine_workers, reward_for
from repogym.train.rl_tools import tool_env_class
from repogym.train.rl_verifier import VerifierScores, check_verifier_given, verifier_term

Notify = Callable[[str], None]
RUN_FILE = "run.json"
#: Settings a resumed run must share with the run it continues (total_steps may grow).
IDENTITY_KEYS = ("base_model", "env", "rollout", "batch_size", "reward", "seed")


@dataclass
class RLResult:
    """What a finished `train rl` left: the trained model folder and its metrics."""

    output_dir: Path
    global_step: int
    resumed_from: int = 0
    """The checkpoint's step this run continued from (0: a fresh start)."""
    metrics: list[dict[str, Any]] = field(default_factory=list)

    @property
    def model_dir(self) -> Path:
        """Loads with `--policy hf:PATH`, `repogym serve PATH` and as a new run's base_model."""
        return self.output_dir


def train_rl(
    config: RunConfig,
    *,
    resume: bool = False,
    notify: Notify = lambda _: None,
    progress: bool = False,
    verifier_scores: VerifierScores | None = None,
) -> RLResult:
    """Run GRPO as configured; every configuration error is raised before the first step.

    `progress` draws a rich bar (steps, rate, ETA, reward) in place of TRL's tqdm bar and log prints.
    `verifier_scores`: the loaded `reward.verifier`'s scorer (required when the config sets one)."""
    import torch

    per_device = check_numbers(config, _num_processes())
    check_env_options(config)
    check_grading_executor(config)
    model_dir = check_model_folder(config.base_model)
    tokenizer = load_checked_tokenizer(model_dir, config.env.mode)
    reward_for(config)  # an unknown reward component fails now, not after the sandbox is set up
    check_verifier_given(config.reward.verifier, verifier_scores)
    out = Path(config.output_dir)
    checkpoint = resume_point(out, config, resume, notify)
    workers = config.grpo.grading_workers or machine_workers()
    notify(f"preparing the sandbox for the tasks of {config.env.task_set} ({workers} grading workers)")
    envs = TaskEnvs.open(config, workers)  # tasks that cannot be loaded or built fail in here
    pool = ThreadPoolExecutor(workers, thread_name_prefix="repogym-grade")
    ray_tasks = ray_grading(config)
    try:
        trainer = build_trainer(
            config, model_dir, tokenizer, envs, pool, per_device, verifier_scores, ray_tasks=ray_tasks
        )
        if progress:
            use_rich_progress(trainer, "grpo")
        _write_run_file(out, config, envs)
        notify(f"training {config.total_steps} GRPO step(s) on {len(envs.tasks)} task(s) -> {out}")
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
        trainer.save_model(str(out))  # the final policy, loadable as hf:OUTPUT_DIR
        tokenizer.save_pretrained(str(out))
        step = trainer.state.global_step
    finally:
        pool.shutdown(wait=True)
        if ray_tasks is not None:
            ray_tasks.close()
        envs.close()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    resumed_from = _checkpoint_step(checkpoint) if checkpoint else 0
    return RLResult(out, step, resumed_from, read_metrics(out))


def build_trainer(
    config: RunConfig,
    model_dir: Path,
    tokenizer: Any,
    envs: TaskEnvs,
    pool: ThreadPoolExecutor,
    per_device: int,
    verifier_scores: VerifierScores | None = None,
    ray_tasks: RayTasks | None = None,
) -> Any:
    """TRL's trainer over the tasks' prompts, with one reward function per configured component (and one for
    `reward.verifier`, scored by `verifier_scores`); agentless answers are graded on `pool`, or through
    `ray_tasks` when given (`grpo.grading_executor: ray`)."""
    from datasets import Dataset

    agent = config.env.mode == "agent"
    verifier = verifier_term(config.reward.verifier, verifier_scores, envs.tasks)
    if agent:
        tools = envs.env_options.get("tools")
        env_class = tool_env_class(envs, pool, config.rollout.async_, tuple(tools) if tools else None)
        reward = SandboxReward(envs.reward, agent_scorer(), verifier=verifier)
    else:
        env_class = None
        masked = config.grpo.format_errors == "mask"
        scorer = agentless_scorer(envs, pool) if ray_tasks is None else ray_agentless_scorer(envs, ray_tasks)
        reward = SandboxReward(envs.reward, scorer, mask_format_errors=masked, verifier=verifier)
        if masked:
            logging.getLogger("trl.trainer.grpo_trainer").addFilter(_EXPECTED_ABSTENTIONS)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is marked experimental
    return grpo_trainer_class()(
        model=str(model_dir),
        reward_funcs=reward.functions(),
        args=grpo_args(config, per_device, reward.weights),
        train_dataset=Dataset.from_list(envs.rows()),
        processing_class=tokenizer,
        environment_factory=env_class,
        metrics_dir=config.output_dir,
        zero_variance_groups=config.grpo.zero_variance_groups,
    )


def ray_grading(config: RunConfig) -> RayTasks | None:
    """`grpo.grading_executor: ray`: the Ray tasks agentless answers are graded through (train/rl_ray.py)."""
    grpo = config.grpo
    if grpo.grading_executor != "ray":
        return None
    return RayTasks(grpo.ray_address, grpo.ray_max_in_flight, grpo.grading_workers or machine_workers())


def grpo_args(config: RunConfig, per_device: int, reward_weights: list[float]) -> Any:
    """The run config as TRL's GRPOConfig (the seed's keys: num_candidates -> num_generations, ...)."""
    import torch
    from trl import GRPOConfig

    settings = config.grpo
    on_cpu = not torch.cuda.is_available()
    return GRPOConfig(
        output_dir=config.output_dir,
        max_steps=config.total_steps,
        learning_rate=config.learning_rate,
        per_device_train_batch_size=per_device,
        gradient_accumulation_steps=settings.gradient_accumulation_steps,
        num_generations=config.rollout.num_candidates,
        max_completion_length=settings.max_completion_length,
        max_tool_calling_iterations=config.rollout.max_steps if config.env.mode == "agent" else None,
        temperature=settings.temperature,
        top_p=settings.top_p,
        loss_type=settings.loss_type,
        beta=settings.beta,
        epsilon=settings.epsilon,
        epsilon_high=settings.epsilon_high,
        scale_rewards=settings.scale_rewards,
        num_iterations=settings.num_iterations,
        reward_weights=reward_weights,
        lr_scheduler_type=settings.lr_scheduler_type,
        max_grad_norm=settings.max_grad_norm,
        gradient_checkpointing=settings.gradient_checkpointing,
        use_cpu=on_cpu,  # TRL's bf16 default would fail on a CPU
        bf16=not on_cpu and torch.cuda.is_bf16_supported(),
        save_strategy="steps",
        save_steps=settings.save_steps,
        save_total_limit=settings.save_total_limit,
        logging_steps=settings.logging_steps,
        report_to=list(settings.report_to),
        use_vllm=settings.use_vllm,
        vllm_mode=settings.vllm_mode,
        seed=config.seed,
    )


class _ExpectedAbstentions(logging.Filter):
    """Under `grpo.format_errors: mask` every term abstains on a format error on purpose; TRL warns about the first
    such completion of every batch with its whole prompt, which would bury the training log."""

    def filter(self, record: logging.LogRecord) -> bool:
        # `in`, not startswith: accelerate's logger puts "[RANK 0] " before TRL's message.
        return "All reward functions returned None" not in record.getMessage()


_EXPECTED_ABSTENTIONS = _ExpectedAbstentions()


class _PhaseTiming:
    """TRL's GRPOTrainer, timing its rollout and grading phases for the step split (nothing else changes).

    It also puts metrics.jsonl first among the callbacks: the writer sees every value (None: a term
    that abstained on the whole batch), while the loggers after it (TensorBoard, W&B), which warn
    about each None, get the numbers only.
    """

    def __init__(self, *args: Any, metrics_dir: str, **kwargs: Any) -> None:
        self.phases = PhaseTimer()
        super().__init__(*args, **kwargs)
        self.add_callback(step_clock(self.phases, self._metrics["train"]))
        metrics = metrics_callback(Path(metrics_dir) / METRICS_FILE)
        self.callback_handler.callbacks[:0] = [metrics, drop_abstained()]

    def _generate(self, prompts: list[Any]) -> Any:
        started = time.perf_counter()
        try:
            return super()._generate(prompts)
        finally:
            self.phases.add("generate", time.perf_counter() - started)

    def _calculate_rewards(self, *args: Any) -> Any:
        started = time.perf_counter()
        try:
            return super()._calculate_rewards(*args)
        finally:
            self.phases.add("grade", time.perf_counter() - started)


@functools.cache
def grpo_trainer_class() -> type:
    """`RepogymGRPOTrainer`: `_PhaseTiming` and `DropUniformGroups` over TRL's GRPOTrainer, made on first use
    (it imports TRL)."""
    from trl import GRPOTrainer

    namespace = {
        "__module__": __name__,
        "__qualname__": "RepogymGRPOTrainer",
        "__doc__": _PhaseTiming.__doc__,
    }
    return type("RepogymGRPOTrainer", (_PhaseTiming, DropUniformGroups, GRPOTrainer), namespace)


# -- checkpoints and resuming -----------------------------------------------------------------------


def resume_point(out: Path, config: RunConfig, resume: bool, notify: Notify) -> Path | None:
    """The checkpoint to continue from (None: start at step 0); refuses to mix two runs in one folder.

    `repogym.train.checkpoints` (shared with SFT) finds the newest complete checkpoint and clears
    those a kill cut short; a resumed run must also keep the settings that define it.
    """

    if resume:
        _check_same_run(out, config)
    latest = newest_complete(out, resume) if out.is_dir() else None
    if not resume:
        return None  # the metrics callback starts metrics.jsonl afresh at step 0
    if latest is None:
        notify(f"--resume: no finished checkpoint in {out} yet; starting at step 0")
        return None
    dropped = drop_rows_after(out / METRICS_FILE, _checkpoint_step(latest))
    notify(
        f"resuming from {latest.name} (step {_checkpoint_step(latest)}; {dropped} later metrics row(s) dropped)"
    )
    return latest


def _check_same_run(out: Path, config: RunConfig) -> None:
    path = out / RUN_FILE
    if not path.is_file():
        return
    try:
        before = json.loads(path.read_text(encoding="utf-8")).get("config", {})
    except (OSError, ValueError, AttributeError):
        return
    now = config_to_dict(config)
    changed = [key for key in IDENTITY_KEYS if key in before and not _same_setting(before[key], now[key])]
    if changed:
        raise ConfigError(
            f"--resume: {out} holds a run with other settings for {', '.join(changed)}; resume with the same "
            "config and overrides (only total_steps and logging may change), or use a new output_dir"
        )


def _same_setting(before: Any, now: Any) -> bool:
    """Equal, a key that a run recorded before it existed counting as its default None (reward.verifier).

    >>> _same_setting({"weight": 1}, {"weight": 1, "verifier": None}), _same_setting({"a": 1}, {"a": 2})
    (True, False)
    """
    if isinstance(before, dict) and isinstance(now, dict):
        keys = set(before) | {key for key, value in now.items() if value is not None}
        return all(_same_setting(before.get(key), now.get(key)) for key in keys)
    return bool(before == now)


def _write_run_file(out: Path, config: RunConfig, envs: TaskEnvs) -> None:
    out.mkdir(parents=True, exist_ok=True)
    components = [
        {"name": c.name, "weight": c.weight, "fn": c.fn_name, "kwargs": c.options}
        for c in envs.reward.components
    ]
    if config.reward.verifier is not None:
        settings = config.reward.verifier
        components.append({"name": VERIFIER_TERM, "weight": settings.weight, "verifier": settings.path})
    write_json(
        out / RUN_FILE,
        {"config": config_to_dict(config), "reward_components": components, "tasks": envs.tasks.ids()},
    )


def _checkpoint_step(path: Path | str) -> int:
    return int(Path(path).name.removeprefix("checkpoint-"))


def _num_processes() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))  # accelerate launch / torchrun set it
