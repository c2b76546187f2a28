"""What a GRPO step adds to its metrics.jsonl row (written by repogym.train.metrics.MetricsJsonlCallback).

TRL logs `loss`, `reward`, `reward_std`, `rewards/<component>/mean|std`, `kl` (beta > 0),
`clip_ratio/...`, `completions/mean_length`, `entropy`, ...; the reward functions add
`resolve_rate`, `format_error_rate` and `submit_rate` (repogym.train.rl_reward). `StepClock` measures each optimiser step's wall time and splits it: `time/generate_s` (TRL's
`_generate`: sampling, and tool calls in agent mode), `time/grade_s` (the reward functions: the
sandbox), `time/update_s` (the rest: log-probs, loss, backward, optimiser), `time/step_s`, and
`time/step_cpu_s` (this process's CPU seconds, steadier than wall time on a shared machine); plus
`memory/peak_rss_mb`. `DropAbstained` keeps None values (a term that abstained on the whole batch)
in metrics.jsonl but away from TensorBoard and W&B, which warn on them.
"""

from __future__ import annotations

import resource
import sys
import time
from collections import defaultdict
from typing import Any

from repogym.train.callback_base import callback_class


class _DropAbstained:
    """Removes None values from the logs (terms that abstained on a whole batch) for the loggers after it."""

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **_: Any
    ) -> None:
        if logs:
            for key in [key for key, value in logs.items() if value is None]:
                del logs[key]


class PhaseTimer:
    """Seconds spent per phase since the last optimiser step (the trainer adds to it)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    def add(self, phase: str, seconds: float) -> None:
        self.seconds[phase] += seconds

    def take(self) -> dict[str, float]:
        taken, self.seconds = dict(self.seconds), defaultdict(float)
        return taken


class _StepClock:
    """Puts the step's wall-time split into the trainer's metrics before TRL logs them."""

    def __init__(self, phases: PhaseTimer, metrics: Any) -> None:
        self.phases = phases
        self.metrics = metrics  # the trainer's _metrics["train"]: name -> values averaged at each log
        self._started = time.perf_counter()
        self._cpu_started = time.process_time()

    def on_step_begin(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        self._started = time.perf_counter()
        self._cpu_started = time.process_time()

    def on_step_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        step_s = time.perf_counter() - self._started
        # CPU seconds of this process (all its threads; not the sandbox's child processes): on a
        # shared machine wall time swings with the load, this much less.
        self.metrics["time/step_cpu_s"].append(time.process_time() - self._cpu_started)
        phases = self.phases.take()
        generate_s, grade_s = phases.get("generate", 0.0), phases.get("grade", 0.0)
        self.metrics["time/step_s"].append(step_s)
        self.metrics["time/generate_s"].append(generate_s)
        self.metrics["time/grade_s"].append(grade_s)
        self.metrics["time/update_s"].append(max(0.0, step_s - generate_s - grade_s))
        self.metrics["memory/peak_rss_mb"].append(peak_rss_mb())


def drop_abstained() -> Any:
    """A `DropAbstained` TrainerCallback (put it after the metrics.jsonl writer, before the loggers)."""
    return callback_class(_DropAbstained, "DropAbstained")()


def step_clock(phases: PhaseTimer, metrics: Any) -> Any:
    """A `StepClock` TrainerCallback adding the step's time split to the trainer's `metrics`."""
    return callback_class(_StepClock, "StepClock")(phases, metrics)


def peak_rss_mb() -> float:
    """This process's peak resident set size in MiB (ru_maxrss is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024
