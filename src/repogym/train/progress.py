"""A rich progress bar for any transformers/TRL trainer: steps done/total, steps/s, tokens/s, loss, ETA.

It replaces transformers' tqdm bar and its printed log dicts (repogym's CLI shows rich progress
everywhere); only the main process draws. Tokens/s comes from the trainer's `num_tokens` log
(TRL's SFT and GRPO log it) or from a `tokens_per_s` value a trainer logs itself.
"""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from repogym.train.callback_base import callback_class


class _RichProgress:
    """The progress bar's events (`RichProgressCallback` is this plus transformers' TrainerCallback)."""

    def __init__(self, description: str = "train", console: Console | None = None) -> None:
        self.description = description
        self.console = console or Console(stderr=True, highlight=False, emoji=False)
        self._progress: Progress | None = None
        self._bar: Any = None
        self._last = (0.0, 0, 0.0)  # (time, step, tokens) at the last log

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not state.is_world_process_zero:
            return
        self._progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"), TextColumn("loss {task.fields[loss]}"),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), console=self.console,
        )  # fmt: skip
        self._bar = self._progress.add_task(
            self.description, total=state.max_steps, completed=state.global_step, rate="", loss="-"
        )
        self._last = (time.monotonic(), state.global_step, 0.0)
        self._progress.start()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._progress is not None:
            self._progress.update(self._bar, completed=state.global_step)

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        if self._progress is None or not logs:
            return
        now, step = time.monotonic(), state.global_step
        then, then_step, then_tokens = self._last
        fields: dict[str, str] = {}
        if step > then_step and now > then:
            rate = f"{(step - then_step) / (now - then):.2f} steps/s"
            tokens = float(logs.get("num_tokens", 0.0) or 0.0)
            if "tokens_per_s" in logs:
                rate += f", {float(logs['tokens_per_s']):,.0f} tok/s"
            elif tokens > then_tokens > 0 or (tokens and then_tokens == 0 and then_step == 0):
                rate += f", {(tokens - then_tokens) / (now - then):,.0f} tok/s"
            fields["rate"] = rate
            self._last = (now, step, tokens)
        if "loss" in logs:
            fields["loss"] = f"{float(logs['loss']):.4f}"
        self._progress.update(self._bar, completed=step, **fields)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._progress is not None:
            self._progress.update(self._bar, completed=state.global_step)
            self._progress.stop()
            self._progress = None


def use_rich_progress(trainer: Any, description: str, show: bool = True) -> None:
    """Swap a trainer's tqdm bar and log printer for `RichProgressCallback` (or for nothing, with show=False)."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    trainer.remove_callback(ProgressCallback)
    trainer.remove_callback(PrinterCallback)
    if show:
        trainer.add_callback(callback_class(_RichProgress, "RichProgressCallback")(description))
