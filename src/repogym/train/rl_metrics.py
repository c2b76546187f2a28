"""What a GRPO run writes each logged step: `<output_dir>/metrics.jsonl`, and the step's wall time split.

`MetricsJsonl` appends every `on_log` of the trainer as one fsynced JSON line (`step` plus TRL's
names: `loss`, `reward`, `reward_std`, `rewards/<component>/mean|std`, `kl`, `clip_ratio/...`,
`completions/mean_length`, ...), so any tool can read a run, even one killed mid-step. On resume,
rows past the checkpoint's step are dropped first: those steps run again.

`StepClock` measures each optimiser step's wall time and splits it: `time/generate_s` (TRL's
`_generate`: sampling, and tool calls in agent mode), `time/grade_s` (the reward functions: the
sandbox), `time/update_s` (the rest: log-probs, loss, backward, optimiser) and `time/step_s`; plus
`memory/peak_rss_mb`. (h-sft's repogym.train.metrics writes SFT's rows the same way; the two meet
when both land.)
"""

from __future__ import annotations

import math
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from repogym.files import append_jsonl, read_jsonl_records, write_jsonl

METRICS_FILE = "metrics.jsonl"


class MetricsJsonl(TrainerCallback):
    """Append each log of the trainer to `<output_dir>/metrics.jsonl` (main process only)."""

    def __init__(self, output_dir: str | Path) -> None:
        self.path = Path(output_dir) / METRICS_FILE

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **_: Any
    ) -> None:
        if not state.is_world_process_zero or not logs:
            return
        row = {"step": state.global_step, **{k: _plain(v) for k, v in logs.items()}}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        append_jsonl(self.path, row)


class DropAbstained(TrainerCallback):
    """Removes None values from the logs (terms that abstained on a whole batch) for the loggers after it."""

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **_: Any
    ) -> None:
        if logs:
            for key in [key for key, value in logs.items() if value is None]:
                del logs[key]


def truncate_metrics(output_dir: str | Path, last_step: int) -> int:
    """Drop rows after `last_step` (a resumed run redoes those steps); returns how many were dropped."""
    path = Path(output_dir) / METRICS_FILE
    rows = list(read_jsonl_records(path))
    kept = [row for row in rows if int(row.get("step", 0)) <= last_step]
    if len(kept) != len(rows):
        write_jsonl(path, kept)
    return len(rows) - len(kept)


def read_metrics(output_dir: str | Path) -> list[dict[str, Any]]:
    """The rows of a run's metrics.jsonl (torn last lines skipped)."""
    return list(read_jsonl_records(Path(output_dir) / METRICS_FILE))


class PhaseTimer:
    """Seconds spent per phase since the last optimiser step (the trainer adds to it)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    def add(self, phase: str, seconds: float) -> None:
        self.seconds[phase] += seconds

    def take(self) -> dict[str, float]:
        taken, self.seconds = dict(self.seconds), defaultdict(float)
        return taken


class StepClock(TrainerCallback):
    """Puts the step's wall-time split into the trainer's metrics before TRL logs them."""

    def __init__(self, phases: PhaseTimer, metrics: Any) -> None:
        self.phases = phases
        self.metrics = metrics  # the trainer's _metrics["train"]: name -> values averaged at each log
        self._started = time.perf_counter()

    def on_step_begin(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        self._started = time.perf_counter()

    def on_step_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        step_s = time.perf_counter() - self._started
        phases = self.phases.take()
        generate_s, grade_s = phases.get("generate", 0.0), phases.get("grade", 0.0)
        self.metrics["time/step_s"].append(step_s)
        self.metrics["time/generate_s"].append(generate_s)
        self.metrics["time/grade_s"].append(grade_s)
        self.metrics["time/update_s"].append(max(0.0, step_s - generate_s - grade_s))
        self.metrics["memory/peak_rss_mb"].append(peak_rss_mb())


def peak_rss_mb() -> float:
    """This process's peak resident set size in MiB (ru_maxrss is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def _plain(value: Any) -> Any:
    """JSON-safe log values (tensors and numpy scalars as floats; NaN as None)."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
