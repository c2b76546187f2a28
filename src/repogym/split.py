"""Train/test splits that share nothing: no function (and by file, no file; by repo, no repo) on both sides.

1. Identical diffs are deduplicated first (same repository, same functions, same removed and added lines,
   whatever the line numbers): the first in the input is kept. The function counts: the same line broken
   in two functions (toolz's `check_valid` and `check_partial` share `if num_pos_only < len(args):`) is
   two bugs, while one function's bug at two revisions is one.
2. Each task's locations come from `repogym.locate` (metadata for synthetic tasks, the gold patch's
   lines looked up with `ast` for the others: a removed line in the base file, an added line in the file
   after the patch, so a commit that adds `g()` is keyed to `g`, as the bugs later injected into `g` are).
3. `repo`, `file`, `function`: tasks that share a key (a repository; a file; a function, qualified by its
   file) are joined into groups (union-find, so a task touching two functions ties their groups); the
   groups are shuffled with the seed and given to train until it holds `ratio` of the tasks, the rest to test.
4. `time`: the oldest `ratio` (by created_at, then instance id) go to train; a later task that touches a
   function train also touches is held out of test (recorded in the manifest with the function).

The same tasks, mode, ratio and seed always give the same split; the manifest says what went where and why.
"""

from __future__ import annotations

import enum
import hashlib
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repogym.dataset import save_tasks
from repogym.errors import ConfigError
from repogym.files import write_json
from repogym.locate import task_locations
from repogym.patches import parse_patch
from repogym.task import Task


class SplitBy(enum.StrEnum):
    REPO = "repo"
    FILE = "file"
    FUNCTION = "function"
    TIME = "time"


@dataclass(frozen=True)
class Split:
    train: tuple[Task, ...]
    test: tuple[Task, ...]
    manifest: dict[str, Any]


def diff_key(task: Task, locations: Sequence[tuple[str, str]] | None = None) -> str:
    """What makes two diffs identical: the repository, the (file, function) pairs it touches (`locations`,
    looked up with `task_locations` when not given) and, per file, the removed and added lines.

    >>> a = Task("a", "o/r", "c1", "--- a/f.py\\n+++ b/f.py\\n@@ -1 +1 @@\\n-x\\n+y\\n")
    >>> diff_key(a) == diff_key(a.replace(instance_id="b", patch=a.patch.replace("-1 +1", "-7 +7")))
    True
    >>> diff_key(a, [("f.py", "g")]) == diff_key(a, [("f.py", "h")])
    False
    """
    found = task_locations(task) if locations is None else locations
    parts: list[Any] = [task.repo, sorted(list(loc) for loc in found)]
    for patched in parse_patch(task.patch) or []:
        parts.append(
            [
                patched.path,
                [(line.line_type, line.value) for hunk in patched for line in hunk if not line.is_context],
            ]
        )
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def split_tasks(
    tasks: Sequence[Task], by: SplitBy | str, ratio: float = 0.8, seed: int = 0, repos_dir: str | None = None
) -> Split:
    """Split `tasks` (see the module docstring)."""
    by = SplitBy(by)
    if not 0 < ratio < 1:
        raise ConfigError(f"--ratio {ratio}: must be between 0 and 1 (the share of tasks in train)")
    if not tasks:
        raise ConfigError("no tasks to split")
    every = {t.instance_id: task_locations(t, repos_dir) for t in tasks}
    kept, duplicates = _dedupe(tasks, every)
    locations = {t.instance_id: every[t.instance_id] for t in kept}
    if by is SplitBy.TIME:
        train, test, held_out = _by_time(kept, locations, ratio)
        groups = None
    else:
        train, test, groups = _by_groups(kept, locations, by, ratio, seed)
        held_out = []
    manifest = _manifest(tasks, by, ratio, seed, train, test, duplicates, held_out, locations, groups)
    return Split(tuple(train), tuple(test), manifest)


def _dedupe(
    tasks: Sequence[Task], locations: dict[str, list[tuple[str, str]]]
) -> tuple[list[Task], list[dict[str, str]]]:
    seen: dict[str, str] = {}
    kept, duplicates = [], []
    for task in tasks:
        key = diff_key(task, locations[task.instance_id])
        if key in seen:
            duplicates.append({"instance_id": task.instance_id, "same_diff_as": seen[key]})
            continue
        seen[key] = task.instance_id
        kept.append(task)
    return kept, duplicates


def _keys(task: Task, locations: dict[str, list[tuple[str, str]]], by: SplitBy) -> list[str]:
    if by is SplitBy.REPO:
        return [f"repo:{task.repo}"]
    if by is SplitBy.FILE:
        return [f"file:{task.repo}:{path}" for path, _ in locations[task.instance_id]] or [
            f"task:{task.instance_id}"
        ]
    return [f"function:{task.repo}:{path}:{name}" for path, name in locations[task.instance_id]] or [
        f"task:{task.instance_id}"
    ]


def _by_groups(
    tasks: list[Task], locations: dict[str, list[tuple[str, str]]], by: SplitBy, ratio: float, seed: int
) -> tuple[list[Task], list[Task], dict[str, Any]]:
    parent: dict[str, str] = {}

    def find(key: str) -> str:
        while parent.setdefault(key, key) != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    task_keys = {t.instance_id: _keys(t, locations, by) for t in tasks}
    for keys in task_keys.values():
        for other in keys[1:]:
            parent[find(other)] = find(keys[0])
    groups: dict[str, list[Task]] = {}
    for task in tasks:
        groups.setdefault(find(task_keys[task.instance_id][0]), []).append(task)
    order = sorted(groups)
    random.Random(seed).shuffle(order)
    target = round(ratio * len(tasks))
    train: list[Task] = []
    test: list[Task] = []
    test_keys: set[str] = set()
    for root in order:
        members = groups[root]
        if len(train) + len(members) <= target or not train:
            train += members
        else:
            test += members
            test_keys |= {k for t in members for k in task_keys[t.instance_id]}
    info = {"groups": len(groups), "test_keys": sorted(test_keys)}
    return train, test, info


def _by_time(
    tasks: list[Task], locations: dict[str, list[tuple[str, str]]], ratio: float
) -> tuple[list[Task], list[Task], list[dict[str, str]]]:
    ordered = sorted(tasks, key=lambda t: (t.created_at, t.instance_id))
    cut = round(ratio * len(ordered))
    train, later = ordered[:cut], ordered[cut:]
    seen = {f"{t.repo}:{p}:{n}" for t in train for p, n in locations[t.instance_id]}
    test, held_out = [], []
    for task in later:
        shared = [
            f"{task.repo}:{p}:{n}" for p, n in locations[task.instance_id] if f"{task.repo}:{p}:{n}" in seen
        ]
        if shared:
            held_out.append(
                {"instance_id": task.instance_id, "why": f"its function {shared[0]} is also in train"}
            )
        else:
            test.append(task)
    return train, test, held_out


def _manifest(
    tasks: Sequence[Task],
    by: SplitBy,
    ratio: float,
    seed: int,
    train: list[Task],
    test: list[Task],
    duplicates: list[dict[str, str]],
    held_out: list[dict[str, str]],
    locations: dict[str, list[tuple[str, str]]],
    groups: dict[str, Any] | None,
) -> dict[str, Any]:
    def ids_digest(side: list[Task]) -> str:
        return hashlib.sha256("\n".join(t.instance_id for t in side).encode()).hexdigest()[:16]

    return {
        "by": by.value,
        "ratio": ratio,
        "seed": seed,
        "counts": {
            "input": len(tasks),
            "duplicates": len(duplicates),
            "train": len(train),
            "test": len(test),
            "held_out": len(held_out),
        },
        "files": {"train": "train.jsonl", "test": "test.jsonl"},
        "digests": {"train": ids_digest(train), "test": ids_digest(test)},
        "duplicates": duplicates,
        "held_out": held_out,
        **({"groups": groups["groups"], "test_keys": groups["test_keys"]} if groups else {}),
        "test_locations": {t.instance_id: [list(loc) for loc in locations[t.instance_id]] for t in test},
    }


def write_split(split: Split, out_dir: str | Path) -> Path:
    """train.jsonl, test.jsonl and manifest.json in `out_dir`; returns the manifest's path."""
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    save_tasks(list(split.train), folder / "train.jsonl")
    save_tasks(list(split.test), folder / "test.jsonl")
    write_json(folder / "manifest.json", split.manifest)
    return folder / "manifest.json"
