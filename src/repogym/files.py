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
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike[str], mode: str = "w") -> Iterator[IO[Any]]:
    """Open a temporary file beside `path`; rename it over `path` only if the block succeeds."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        encoding = None if "b" in mode else "utf-8"
        with os.fdopen(fd, mode, encoding=encoding) as handle:
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
    """Append one record as one line, durably; a crash leaves at most a torn last line, which readers skip."""
    line = (json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def read_jsonl_records(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Records of an append-only store, skipping a torn final line left by a crash."""
    try:
        handle = open(path, encoding="utf-8")
    except FileNotFoundError:
        return
    with handle:
        for line in handle:
            if not line.endswith("\n"):
                return  # torn write: the record was never completed
            if line.strip():
                yield json.loads(line)
