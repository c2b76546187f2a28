"""The stages that run a policy on tasks: an evaluation (`repogym eval`) and a rollout (`repogym rollout`).

- `eval_stage`: every attempt kept, scored (pass@1 with its bootstrap interval, resolve rate) into an eval
  folder that `repogym report` shows; the folder's own summary.json is the stage's record;
- `rollout_stage`: attempts stored as trajectories (what the flywheel fine-tunes on); the record is
  FOLDER/stage.json beside the trajectory shards.

Guarantees: both resume their trajectory store (an attempt already stored is never run again), so a stage
killed midway loses at most the attempts in flight. Not guaranteed: the same completions on other hardware
(sampling is seeded, but kernels differ).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Self

from repogym.errors import ConfigError
from repogym.evaluate.run import SUMMARY_FILE, SUMMARY_KIND, EvalConfig, attempt_counter, run_eval
from repogym.pipeline.record import StageResult
from repogym.pipeline.runner import Hooks
from repogym.rollout.run import RolloutConfig, plan_rollout, run_rollout


@dataclass(frozen=True)
class EvalInput:
    config: EvalConfig

    @property
    def folder(self) -> Path:
        return self.config.root


@dataclass(frozen=True)
class EvalResult(StageResult):
    """An eval folder's headline numbers, read from its summary.json (which `repogym eval` writes last)."""

    RECORD: ClassVar[str] = SUMMARY_FILE
    pass_at_1: float
    low: float | None
    """pass@1's 95% bootstrap interval (None when the summary has none)."""
    high: float | None
    tasks: int
    resolve_rate: float
    """Resolved attempts over all attempts (pass@1 averages per task first)."""
    pass_at_k: dict[str, float] = field(default_factory=dict)
    """Every pass@k the eval reported for k > 1 ("pass@4" -> 0.25); empty for one attempt per task."""

    @classmethod
    def from_summary(cls, summary: dict[str, Any]) -> EvalResult:
        low, high = summary.get("intervals", {}).get("pass@1", (None, None))
        more = {
            f"pass@{k}": summary[f"pass@{k}"]
            for k in summary.get("ks") or ()
            if k > 1 and f"pass@{k}" in summary
        }
        return cls(pass_at_1=summary["pass@1"], low=low, high=high, tasks=summary["tasks"],
                   resolve_rate=summary["resolve_rate"], pass_at_k=more)  # fmt: skip

    @classmethod
    def find(cls, folder: Path) -> Self | None:
        path = folder / SUMMARY_FILE
        if not path.is_file():
            return None
        fix = "move it away and the eval runs again (the attempts it stored are kept)"
        try:
            summary = json.loads(path.read_text(encoding="utf-8"))  # written atomically, after every attempt
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ConfigError(f"{path}: unreadable ({type(exc).__name__}); {fix}") from None
        if not isinstance(summary, dict) or summary.get("kind") != SUMMARY_KIND or "pass@1" not in summary:
            raise ConfigError(f"{path}: not the summary of a finished `repogym eval`; {fix}")
        return cls.from_summary(summary)  # type: ignore[return-value]

    def save(self, folder: Path) -> Path:
        """Nothing to write: `finish_eval` wrote the folder's summary.json, this result's record."""
        return folder / SUMMARY_FILE

    def to_dict(self) -> dict[str, Any]:
        """Under summary.json's names."""
        return {"pass@1": self.pass_at_1, "low": self.low, "high": self.high, "tasks": self.tasks,
                "resolve_rate": self.resolve_rate, **self.pass_at_k}  # fmt: skip


def eval_stage(given: EvalInput, hooks: Hooks) -> EvalResult:
    return EvalResult.from_summary(run_eval(given.config, notify=hooks.notify, progress=hooks.progress))


@dataclass(frozen=True)
class RolloutInput:
    config: RolloutConfig

    @property
    def folder(self) -> Path:
        return Path(self.config.out)


@dataclass(frozen=True)
class RolloutResult(StageResult):
    resolve_rate: float
    attempts: int
    resolved: int


def rollout_stage(given: RolloutInput, hooks: Hooks) -> RolloutResult:
    plan = plan_rollout(given.config)
    on_result = attempt_counter(
        f"rollout {given.folder.parent.name}/{given.folder.name}", len(plan.jobs), hooks.progress
    )
    summary = run_rollout(given.config, on_result=on_result, plan=plan)
    return RolloutResult(
        resolve_rate=summary.resolve_rate, attempts=summary.attempts, resolved=summary.resolved
    )
