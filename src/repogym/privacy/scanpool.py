"""Secret scans of a batch of tasks, spread over worker processes.

detect-secrets keeps its settings in a process-wide singleton (one process
scans one string at a time) and spends its time in Python, so processes, not
threads, are what make a batch scan scale with cores. Tasks go to workers in
contiguous slices: neighbouring commits share context lines, which each
worker's scanner remembers. A small batch is scanned in this process, where
starting workers would cost more than they save.

Workers are forked when this process runs no other thread (cheap: nothing is
imported again, and a fork with no other thread is safe); otherwise spawned.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Literal

from repogym.privacy.patchlines import LineKind, classify_patch_lines
from repogym.privacy.pii import PiiHit, PiiKind, redact_pii, redact_pii_in_patch_comments
from repogym.privacy.secrets import SecretHit, SecretScanner

#: Below this many characters in a batch, workers cost more than they save (~0.3 s of scanning).
MIN_PARALLEL_CHARS = 1_000_000
_SLICES_PER_WORKER = 4  # a few slices each, so one slow slice does not leave the other workers idle


@dataclass(frozen=True)
class ScanField:
    """One string of a task to scan for secrets."""

    name: str
    """Where it is: 'patch', 'problem_statement', 'metadata.author', ..."""
    text: str
    kind: Literal["patch", "text", "fixed"]
    """'patch' for a unified diff (every line scanned by its kind), 'text' for free text, 'fixed' for a value
    that must never be rewritten (env commands)."""


@dataclass(frozen=True)
class TaskScan:
    """What the scan found in one task's fields."""

    secrets: list[SecretHit]
    pii: dict[str, tuple[str, list[PiiHit]]]
    """Field name -> (text with personal data redacted, what was redacted), for the fields where some was found."""


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity where the OS tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def scan_batch(
    batch: Sequence[Sequence[ScanField]],
    ignored_types: Sequence[str] = (),
    workers: int = 0,
    prefilter: bool = True,
    pii: Sequence[PiiKind] = (),
    min_parallel_chars: int = MIN_PARALLEL_CHARS,
) -> list[TaskScan]:
    """Secrets and personal data (`pii` kinds) in each task's fields, in task order.

    `workers` 0 = one per available core. Personal data is looked for in every
    field but 'fixed' ones, in patches only in comments on added Python lines
    (as `repogym.privacy.scrub` redacts it).
    """
    workers = workers or available_cores()
    size = sum(len(f.text) for fields in batch for f in fields)
    options = (tuple(ignored_types), prefilter, tuple(pii))
    if workers <= 1 or len(batch) < 2 or size < min_parallel_chars:
        return _scan_slice(batch, options)
    slices = _slices(batch, workers * _SLICES_PER_WORKER)
    context = multiprocessing.get_context("fork" if _fork_is_safe() else "spawn")
    with ProcessPoolExecutor(max_workers=min(workers, len(slices)), mp_context=context) as pool:
        parts = pool.map(_scan_slice, slices, [options] * len(slices))
        return [scan for part in parts for scan in part]


def _fork_is_safe() -> bool:
    return "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1


def _slices(batch: Sequence[Sequence[ScanField]], count: int) -> list[list[Sequence[ScanField]]]:
    """Contiguous slices of about equal text size (at most `count`), in order."""
    sizes = [sum(len(f.text) for f in fields) + 1 for fields in batch]
    target = sum(sizes) / count
    slices: list[list[Sequence[ScanField]]] = [[]]
    filled = 0
    for fields, size in zip(batch, sizes, strict=True):
        if filled >= target and len(slices) < count:
            slices.append([])
            filled = 0
        slices[-1].append(fields)
        filled += size
    return slices


def _scan_slice(
    batch: Sequence[Sequence[ScanField]], options: tuple[tuple[str, ...], bool, tuple[PiiKind, ...]]
) -> list[TaskScan]:
    ignored_types, prefilter, pii = options
    with SecretScanner(ignored_types, prefilter=prefilter) as scanner:
        return [_scan_task(scanner, fields, pii) for fields in batch]


def _scan_task(scanner: SecretScanner, fields: Sequence[ScanField], pii: tuple[PiiKind, ...]) -> TaskScan:
    secrets: list[SecretHit] = []
    personal: dict[str, tuple[str, list[PiiHit]]] = {}
    for f in fields:
        if not f.text:
            continue
        if f.kind == "patch":
            layout = classify_patch_lines(f.text.split("\n"))
            secrets += scanner.scan_patch(f.text, f.name, layout)
            redacted = redact_pii_in_patch_comments(f.text, f.name, pii, layout) if pii else (f.text, [])
        else:
            secrets += scanner.scan_text(
                f.text, f.name, LineKind.FIXED if f.kind == "fixed" else LineKind.TEXT
            )
            redacted = redact_pii(f.text, f.name, pii) if pii and f.kind == "text" else (f.text, [])
        if redacted[1] or redacted[0] != f.text:
            personal[f.name] = redacted
    return TaskScan(secrets, personal)
