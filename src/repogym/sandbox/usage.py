"""What repogym's cache holds, how much disk it takes, and how to shrink it safely.

The cache (`repogym.sandbox.cache.cache_root`) has one folder per kind of thing repogym builds once
and reuses. Pruning never removes what a running command holds: entries with a held `.lock`
beside them are skipped, and blobs still hardlinked from a checkout (link count > 1) are kept.
Everything pruned is rebuilt on demand, so pruning costs time later, never correctness.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import uv
from filelock import FileLock, Timeout

from repogym.errors import ConfigError
from repogym.sandbox.cache import cache_root

#: Areas and what they hold, in the order `repogym cache du` lists them.
AREAS: dict[str, str] = {
    "mirrors": "bare git mirrors of task repositories",
    "blobs": "content-addressed file store that checkouts hardlink",
    "checkouts": "pristine checkouts, one per (repository, commit)",
    "history": "git history packs per mirror, hard-linked into checkouts' .git (sandbox/history.py)",
    "envs": "Python environments, one per environment key",
    "installs": "what an environment's install step wrote, per (environment, commit): episodes' lower layers",
    "envs-local": "environments built by the local backend (host paths inside; never used by jails)",
    "uv-cache": "uv's download and wheel cache (shared by environment builds)",
    "uv-cache-local": "uv's cache for the local backend's builds",
    "uv-cache-wheels": "uv's caches of offline builds, one per content of $REPOGYM_WHEELS",
    "episodes": "writable layers of running episodes (leftovers of killed runs)",
    "logs": "test logs of grading and validation",
}
#: What `prune` touches when no area is named: what is only ever scratch.
DEFAULT_PRUNE = ("episodes", "logs", "blobs")


@dataclass(frozen=True)
class AreaUsage:
    name: str
    path: Path
    entries: int
    bytes: int
    description: str


def disk_usage(root: Path | None = None) -> list[AreaUsage]:
    """Bytes and entries per area; a file hardlinked from several places is counted once overall."""
    root = root or cache_root()
    seen: set[tuple[int, int]] = set()
    others = (
        sorted(p.name for p in root.iterdir() if p.is_dir() and p.name not in AREAS) if root.exists() else []
    )
    usage = []
    for name in [*AREAS, *others]:
        path = root / name
        if not path.is_dir():
            continue
        children = [c for c in path.iterdir() if not c.name.endswith((".lock", ".ok", ".complete", ".log"))]
        if name == "blobs":  # sharded by the first two hex digits: count the blobs, not the shards
            children = [blob for shard in children if shard.is_dir() for blob in shard.iterdir()]
        entries = len(children)
        usage.append(AreaUsage(name, path, entries, _tree_bytes(path, seen), AREAS.get(name, "")))
    return usage


def _tree_bytes(top: Path, seen: set[tuple[int, int]]) -> int:
    total = 0
    for folder, dirs, files in os.walk(top):
        for name in (*dirs, *files):
            try:
                info = os.lstat(os.path.join(folder, name))
            except OSError:
                continue
            key = (info.st_dev, info.st_ino)
            if key in seen:
                continue
            seen.add(key)
            total += info.st_blocks * 512
    return total


@dataclass(frozen=True)
class Pruned:
    area: str
    removed: int
    freed_bytes: int
    skipped_in_use: int


def prune(
    areas: Iterable[str] = DEFAULT_PRUNE,
    older_than_s: float = 86400.0,
    *,
    dry_run: bool = False,
    root: Path | None = None,
) -> list[Pruned]:
    """Remove entries of `areas` not modified for `older_than_s` seconds (uv-cache: `uv cache prune`)."""
    root = root or cache_root()
    unknown = sorted(set(areas) - set(AREAS))
    if unknown:
        raise ConfigError(f"--area {', '.join(unknown)}: unknown; known areas: {', '.join(AREAS)}")
    cutoff = time.time() - older_than_s
    results = []
    for area in areas:
        folder = root / area
        if not folder.is_dir():
            continue
        if area in ("uv-cache", "uv-cache-local"):
            results.append(_prune_uv(folder, dry_run, area))
            continue
        removed = freed = in_use = 0
        for entry in _stale_entries(area, folder, cutoff):
            if _held(entry):
                in_use += 1
                continue
            size = _tree_bytes(entry, set()) if entry.is_dir() else entry.lstat().st_size
            if not dry_run:
                _remove(entry)
            removed, freed = removed + 1, freed + size
        results.append(Pruned(area, removed, freed, in_use))
    return results


def _stale_entries(area: str, folder: Path, cutoff: float) -> Iterator[Path]:
    if area == "blobs":
        # A blob is in use while some checkout hardlinks it: its link count is above one.
        for shard in folder.iterdir():
            for blob in shard.iterdir() if shard.is_dir() else ():
                info = blob.lstat()
                if info.st_nlink == 1 and info.st_mtime < cutoff:
                    yield blob
        return
    for entry in folder.iterdir():
        if entry.name.endswith((".lock", ".ok", ".complete", ".log")) or entry.name.startswith(".discarded"):
            continue
        if entry.lstat().st_mtime < cutoff:
            yield entry


def _held(entry: Path) -> bool:
    """True when a running repogym holds the entry's lock file (checkouts and envs are built under one)."""
    lock_path = entry.with_name(entry.name + ".lock")
    if not lock_path.exists():
        return False
    lock = FileLock(str(lock_path))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return True
    lock.release()
    return False


def _remove(entry: Path) -> None:
    for marker in (".ok", ".complete", ".log"):
        entry.with_name(entry.name + marker).unlink(missing_ok=True)
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry, ignore_errors=True)
    else:
        entry.unlink(missing_ok=True)


def _prune_uv(folder: Path, dry_run: bool, area: str = "uv-cache") -> Pruned:
    before = _tree_bytes(folder, set())
    if not dry_run:
        subprocess.run(
            [uv.find_uv_bin(), "cache", "prune", "--cache-dir", str(folder)], capture_output=True, check=False
        )
    return Pruned(area, 0, max(before - _tree_bytes(folder, set()), 0), 0)


def parse_age(text: str) -> float:
    """'30m', '12h', '7d', '2w' (or plain seconds) as seconds.

    >>> parse_age("7d"), parse_age("90")
    (604800.0, 90.0)
    """
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
    value, unit = (text[:-1], text[-1]) if text and text[-1] in units else (text, "s")
    try:
        return float(value) * units[unit]
    except ValueError:
        raise ConfigError(f"--older-than {text!r}: give a number and a unit, e.g. 30m, 12h, 7d, 2w") from None
