"""Training to a wall-clock budget: a speed calibration that fixes max_steps, and a callback that enforces it.

The budget counts training time only, summed over resumed runs: each checkpoint carries the
seconds spent so far (`repogym_budget.json`), and a resumed run starts its clock from there.
The callback also logs `tokens_per_s` (per logging interval), which the progress bar shows.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from repogym.train.callback_base import callback_class

BUDGET_FILE = "repogym_budget.json"


def calibrate_step_s(
    model_dir: Path, batch_size: int, seq_len: int, steps: int = 3, bf16: bool = False
) -> float:
    """Seconds per optimizer step of this model and batch on this machine (one warm-up step, then `steps`),
    on the device and in the precision the trainer will use (the GPU when there is one; `bf16`: autocast)."""
    import torch
    from transformers import AutoModelForCausalLM

    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).to(device)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    batch = torch.randint(0, model.config.vocab_size, (batch_size, seq_len), device=device)
    timings = []
    for _ in range(steps + 1):
        started = time.perf_counter()
        with torch.autocast(device, dtype=torch.bfloat16, enabled=bf16):
            loss = model(input_ids=batch, labels=batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if device == "cuda":
            torch.cuda.synchronize()  # kernels run asynchronously: the step ends when they do
        timings.append(time.perf_counter() - started)
    # The trainer adds data loading, logging and checkpoints on top of the bare step.
    return 1.1 * sorted(timings[1:])[len(timings[1:]) // 2]


class _TimeBudget:
    """Stop (and checkpoint) once `budget_s` seconds of training have passed, counting resumed runs."""

    def __init__(self, budget_s: float, tokens_per_step: int, start_from: Path | None = None) -> None:
        self.budget_s = budget_s
        self.tokens_per_step = tokens_per_step
        self.before = _spent(start_from)
        self._started = time.monotonic()
        self._last = (self._started, 0)

    def elapsed(self) -> float:
        return self.before + time.monotonic() - self._started

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._started = time.monotonic()
        self._last = (self._started, state.global_step)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.elapsed() >= self.budget_s and state.global_step < state.max_steps:
            control.should_training_stop = True
            control.should_save = True

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        if logs is None or "loss" not in logs:
            return
        now = time.monotonic()
        then, then_step = self._last
        if state.global_step > then_step and now > then:
            world = max(1, getattr(args, "world_size", 1))
            tokens = (
                (state.global_step - then_step)
                * self.tokens_per_step
                * args.gradient_accumulation_steps
                * world
            )
            logs["tokens_per_s"] = round(tokens / (now - then), 1)
        logs["budget_elapsed_s"] = round(self.elapsed(), 1)
        self._last = (now, state.global_step)

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        checkpoint = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if state.is_world_process_zero and checkpoint.is_dir():
            (checkpoint / BUDGET_FILE).write_text(json.dumps({"elapsed_s": self.elapsed()}))


def time_budget_callback(budget_s: float, tokens_per_step: int, start_from: Path | None = None) -> Any:
    """A `TimeBudgetCallback` (a TrainerCallback): stops and checkpoints after `budget_s` seconds of training."""
    return callback_class(_TimeBudget, "TimeBudgetCallback")(budget_s, tokens_per_step, start_from)


def _spent(checkpoint: Path | None) -> float:
    if checkpoint is None:
        return 0.0
    try:
        return float(json.loads((checkpoint / BUDGET_FILE).read_text())["elapsed_s"])
    except (OSError, ValueError, KeyError):
        return 0.0
