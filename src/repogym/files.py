"""Small file helpers shared by every stage: atomic writes and JSONL records.

Nothing repogym writes is ever left half-written: whole files go to a
temporary sibling and are renamed into place; append-only JSONL stores write
one complete line per record with a single `write` and fsync.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

#: Every training run's per-step curve (SFT, GRPO, pretraining) in its output folder: written by
#: `repogym.train.metrics`, read by `repogym report` (named here so neither imports the other).
METRICS_FILE = "metrics.jsonl"


def _umask() -> int:
    # Read without changing it where Linux allows (os.umask alone is a set-and-restore race).
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    current = os.umask(0o022)
    os.umask(current)
    return current


def _final_mode(target: Path) -> int:
    """Mode for the renamed file: the old file's, else what open() would have given."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        return 0o666 & ~_umask()


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike[str], mode: str = "w") -> Iterator[IO[Any]]:
    """Open a temporary file beside `path`; rename it over `path` only if the block succeeds."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        encoding = None if "b" in mode else "utf-8"
        with os.fdopen(fd, mode, encoding=encoding) as handle:
            # mkstemp makes 0600 files; a task file others cannot read would surprise whoever shares it.
            os.fchmod(handle.fileno(), _final_mode(target))
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise


def write_json(path: str | os.PathLike[str], data: Any) -> None:
    with atomic_writer(path) as handle:
        json.dump(data, handle, indent=2, ensure_ascii=False)
        handle.write("\n")


def write_jsonl(path: str | os.PathLike[str], rows: Iterable[dict[str, Any]]) -> int:
    count = 0
    with atomic_writer(path) as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    return count


def append_jsonl(path: str | os.PathLike[str], row: dict[str, Any]) -> None:
    """Append one record as one line, durably; a crash leaves at most a torn line, which readers skip."""
    line = (json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8")
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    except (
        FileNotFoundError
    ):  # the first record of a file whose folder does not exist yet (as atomic writes do)
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        if _ends_torn(fd):
            # Close the torn record left by a crash, or this record would be glued onto it.
            line = b"\n" + line
        view = memoryview(line)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)


def _ends_torn(fd: int) -> bool:
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def read_jsonl_records(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Records of an append-only store, skipping (with a warning) torn lines left by a crash."""
    try:
        handle = open(path, encoding="utf-8", errors="replace")  # noqa: SIM115 - a missing store is empty
    except FileNotFoundError:
        return
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.endswith("\n"):
                return  # the last record is torn, or still being written
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                record = None
            if not isinstance(record, dict):
                warnings.warn(f"{path}:{number}: skipped a torn or malformed record", stacklevel=2)
                continue
            yield record
