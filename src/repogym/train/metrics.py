"""`<output_dir>/metrics.jsonl`: one JSON row per logging step of any transformers/TRL trainer.

`MetricsJsonlCallback` (`metrics_callback()`) is a `transformers.TrainerCallback`; every trainer repogym runs (SFT,
pretraining, GRPO) adds it, so one file format serves every stage and any tool can read it
(`pandas.read_json(path, lines=True)`, `datasets`, `jq`). A row is what the trainer logged
(SFT: `loss`, `grad_norm`, `learning_rate`, `epoch`, ...; GRPO: its `reward...` terms) plus:

- `step`: the trainer's global step when it logged;
- `wall_s`: seconds since this process started training (it restarts at 0 on `--resume`).

Crash safety: each row is appended and fsynced as it is logged (`repogym.files.append_jsonl`),
so a SIGKILL loses at most the row being written. On resume, rows logged after the checkpoint
the run restarts from (steps that will be trained again) are dropped first, so the file reads
as one run with each step once.

Only the main process writes (under `accelerate launch` every rank logs the same values).
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

from repogym.files import METRICS_FILE, append_jsonl, atomic_writer, read_jsonl_records
from repogym.train.callback_base import callback_class


class _MetricsJsonl:
    """Append every `on_log` payload to `<output_dir>/metrics.jsonl` (or `path`), durably."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path: Path | None = Path(path) if path is not None else None
        self._started = time.monotonic()

    def _file(self, args: Any) -> Path:
        return self.path if self.path is not None else Path(args.output_dir) / METRICS_FILE

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._started = time.monotonic()
        if state.is_world_process_zero:
            path = self._file(args)
            path.parent.mkdir(parents=True, exist_ok=True)
            drop_rows_after(path, state.global_step)

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        if not state.is_world_process_zero or not logs:
            return
        row = {"step": state.global_step, "wall_s": round(time.monotonic() - self._started, 3)}
        row.update({key: _plain(value) for key, value in logs.items()})
        append_jsonl(self._file(args), row)


def metrics_callback(path: str | os.PathLike[str] | None = None) -> Any:
    """A `MetricsJsonlCallback` writing to `path` (default: the trainer's `<output_dir>/metrics.jsonl`)."""
    return callback_class(_MetricsJsonl, "MetricsJsonlCallback")(path)


def __getattr__(name: str) -> Any:
    """`MetricsJsonlCallback`, the TrainerCallback class itself, made on first use (it imports transformers)."""
    if name == "MetricsJsonlCallback":
        return callback_class(_MetricsJsonl, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def drop_rows_after(path: Path, step: int) -> int:
    """Remove rows whose `step` is past `step` (they are about to be trained again); returns how many."""
    if not path.exists():
        return 0
    rows = list(read_jsonl_records(path))
    kept = [row for row in rows if int(row.get("step", 0)) <= step]
    if len(kept) == len(rows) and path.read_bytes().endswith(b"\n"):
        return 0
    with atomic_writer(path) as handle:
        for row in kept:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return len(rows) - len(kept)


def read_metrics(output_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every row of `<output_dir>/metrics.jsonl`, in order."""
    return list(read_jsonl_records(Path(output_dir) / METRICS_FILE))


def _plain(value: Any) -> Any:
    """JSON-safe scalars: tensors and numpy numbers become floats, NaN/inf become None."""
    if hasattr(value, "item") and callable(value.item):
        try:
            value = value.item()
        except (ValueError, RuntimeError):  # a tensor of many elements: keep it as a list
            value = value.tolist()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, str | int | float | bool | list | dict) or value is None:
        return value
    return str(value)
