"""The GRPO stage (`repogym train rl`): TRL's GRPOTrainer against the sandbox -> the config's output_dir.

Guarantees: a run killed midway resumes at its last checkpoint (`resume=True` in `train_rl`), and one whose
settings changed is refused there (run.json); the record (output_dir/stage.json) is written once the final
model is saved. Not guaranteed: that a reward was logged (a run shorter than its logging interval has none:
`reward_first` and `reward_last` are then None).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from repogym.config import RunConfig
from repogym.pipeline.record import StageResult
from repogym.pipeline.runner import Hooks
from repogym.train.grpo import train_rl  # torch, transformers and TRL: only when a stage trains


@dataclass(frozen=True)
class GRPOInput:
    config: RunConfig

    @property
    def folder(self) -> Path:
        return Path(self.config.output_dir)


@dataclass(frozen=True)
class GRPOResult(StageResult):
    model_dir: str
    steps: int
    reward_first: float | None
    """The mean reward of the first logged step (None: none was logged)."""
    reward_last: float | None


def grpo_stage(given: GRPOInput, hooks: Hooks) -> GRPOResult:
    result = train_rl(given.config, resume=True, notify=hooks.notify, progress=hooks.trainer_bars)
    rewards = [row["reward"] for row in result.metrics if isinstance(row.get("reward"), int | float)]
    return GRPOResult(
        model_dir=str(result.model_dir), steps=result.global_step,
        reward_first=rewards[0] if rewards else None, reward_last=rewards[-1] if rewards else None,
    )  # fmt: skip
