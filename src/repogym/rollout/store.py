"""The trajectory store: append-only JSONL shards that survive being killed at any moment.

Layout of a rollout folder DIR:

- `trajectories-00000.jsonl`, `-00001`, ...: one `Trajectory.to_dict()` row per finished attempt
  (with `--keep resolved`, only resolved ones). Each run opens a new shard and rotates after
  `shard_records` rows, so a crash can only ever tear the last line of one shard.
- `.ledger`: one short row per finished attempt, kept or not (instance_id, attempt, outcome,
  reward, ...): what a restarted run skips, and what its summary counts.
- `.lock`: held while a run writes; a second run on the same folder is refused.

A row is finished once its line is written and fsynced (`repogym.files.append_jsonl`). On open,
a torn last line (a write cut by SIGKILL) is cut off, so `datasets.load_dataset("json",
data_files="DIR/*.jsonl")` reads every shard, and the attempt it belonged to runs again.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from repogym.agent.trajectory import Trajectory, record_key
from repogym.errors import ConfigError
from repogym.files import append_jsonl, read_jsonl_records

SHARD_PATTERN = re.compile(r"^trajectories-(\d{5,})\.jsonl$")
LEDGER = ".ledger"


class TrajectoryStore:
    """One rollout folder: which attempts are done, and where the next rows go."""

    def __init__(self, out_dir: str | os.PathLike[str], shard_records: int = 1000) -> None:
        self.root = Path(out_dir)
        self.shard_records = shard_records
        self.done: set[tuple[str, int]] = set()
        self._lock: FileLock | None = None
        self._shard: Path | None = None
        self._shard_rows = 0

    def __enter__(self) -> TrajectoryStore:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> TrajectoryStore:
        """Take the folder's lock, repair torn tails, and learn which attempts are already done."""
        if self.root.exists() and not self.root.is_dir():
            raise ConfigError(f"--out {self.root}: exists and is not a folder")
        self.root.mkdir(parents=True, exist_ok=True)
        lock = FileLock(self.root / ".lock")
        try:
            lock.acquire(timeout=0)
        except Timeout:
            raise ConfigError(
                f"--out {self.root}: another rollout is writing there (its .lock is held)"
            ) from None
        self._lock = lock
        for path in [*self.shards(), self.root / LEDGER]:
            cut_torn_tail(path)
        self.done = {key for row in self.ledger_rows() if (key := record_key(row))}
        self.done |= {key for row in self.rows() if (key := record_key(row))}
        return self

    def close(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def shards(self) -> list[Path]:
        return sorted(p for p in self.root.glob("trajectories-*.jsonl") if SHARD_PATTERN.match(p.name))

    def append(self, trajectory: Trajectory, keep: bool = True) -> None:
        """Record a finished attempt (its row only if `keep`), durably, exactly once."""
        if self._lock is None:
            raise RuntimeError("TrajectoryStore.append() before open()")
        if trajectory.key in self.done:
            return  # a resumed run never writes an attempt twice
        if keep:
            append_jsonl(self._current_shard(), trajectory.to_dict())
            self._shard_rows += 1
        append_jsonl(self.root / LEDGER, ledger_row(trajectory, keep))
        self.done.add(trajectory.key)

    def _current_shard(self) -> Path:
        if self._shard is None or self._shard_rows >= self.shard_records:
            numbers = [int(m.group(1)) for p in self.shards() if (m := SHARD_PATTERN.match(p.name))]
            self._shard = self.root / f"trajectories-{max(numbers, default=-1) + 1:05d}.jsonl"
            self._shard_rows = 0
        return self._shard

    def rows(self) -> Iterator[dict[str, Any]]:
        """Every stored trajectory row, shard by shard."""
        for shard in self.shards():
            yield from read_jsonl_records(shard)

    def ledger_rows(self) -> Iterator[dict[str, Any]]:
        yield from read_jsonl_records(self.root / LEDGER)


def ledger_row(trajectory: Trajectory, kept: bool) -> dict[str, Any]:
    """The short record the summary and resumption read."""
    errors: dict[str, int] = {}
    for step in trajectory.steps:
        for error in step.format_errors:
            kind = error.split(":", 1)[0]
            errors[kind] = errors.get(kind, 0) + 1
    return {
        "instance_id": trajectory.instance_id,
        "attempt": trajectory.attempt,
        "outcome": trajectory.outcome.value,
        "grade_outcome": trajectory.grade_outcome,
        "resolved": trajectory.resolved,
        "reward": trajectory.reward,
        "components": dict(trajectory.reward_breakdown.get("components", {})),
        "steps": len(trajectory.steps),
        "prompt_tokens": trajectory.prompt_tokens,
        "completion_tokens": trajectory.completion_tokens,
        "format_errors": errors,
        "total_s": trajectory.timings.get("total_s", 0.0),
        "kept": kept,
    }


def cut_torn_tail(path: Path) -> int:
    """Drop an unfinished last line (no newline: its write was cut); returns the bytes removed."""
    try:
        with open(path, "rb+") as handle:
            size = handle.seek(0, os.SEEK_END)
            if size == 0:
                return 0
            handle.seek(size - 1)
            if handle.read(1) == b"\n":
                return 0
            keep = _last_newline_end(handle, size)
            handle.truncate(keep)
            handle.flush()
            os.fsync(handle.fileno())
            return size - keep
    except FileNotFoundError:
        return 0


def _last_newline_end(handle: Any, size: int, chunk: int = 1 << 16) -> int:
    position = size
    while position > 0:
        start = max(0, position - chunk)
        handle.seek(start)
        block = handle.read(position - start)
        index = block.rfind(b"\n")
        if index != -1:
            return start + index + 1
        position = start
    return 0


def load_trajectories(out_dir: str | os.PathLike[str]) -> list[Trajectory]:
    """Every trajectory stored under `out_dir`, as Trajectory objects."""
    root = Path(out_dir)
    found = []
    for shard in sorted(root.glob("trajectories-*.jsonl")):
        for number, row in enumerate(read_jsonl_records(shard), start=1):
            found.append(Trajectory.from_dict(row, where=f"{shard}:{number}"))
    return found
