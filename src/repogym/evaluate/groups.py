"""What an eval breaks its numbers down by: each task's repo, synth method, difficulty and split.

- repo: `Task.repo`.
- method: a synthetic task's `metadata["method"]` (set by `repogym synth`); tasks without one are
  grouped under their source (`mined`, `synthetic`, `imported`).
- difficulty: `metadata["difficulty"]` (or a top-level `difficulty`, as SWE-bench Verified has) when it is
  a label; otherwise (absent, or `repogym synth`'s record `{"lines_changed": ...}`) the gold patch's size in
  changed lines, bucketed (`PATCH_BUCKETS`).
- split: `metadata["split"]` when the task file carries one; tasks without it get no split group.
"""

from __future__ import annotations

from dataclasses import dataclass

from repogym.patches import diff_stats
from repogym.task import Task

#: Gold-patch sizes (added + removed lines) used as difficulty when a task states none: (upper bound, label).
PATCH_BUCKETS: tuple[tuple[int, str], ...] = (
    (2, "patch 1-2 lines"),
    (10, "patch 3-10 lines"),
    (50, "patch 11-50 lines"),
)
PATCH_LARGEST = "patch 51+ lines"

#: The breakdowns every eval summary carries, in this order.
GROUP_KEYS: tuple[str, ...] = ("repo", "method", "difficulty", "split")


@dataclass(frozen=True)
class TaskGroups:
    """The labels of one task in each breakdown ('' = not in that breakdown)."""

    repo: str
    method: str
    difficulty: str
    split: str

    def get(self, key: str) -> str:
        return str(getattr(self, key))

    def to_dict(self) -> dict[str, str]:
        return {key: self.get(key) for key in GROUP_KEYS}


def patch_bucket(patch: str) -> str:
    """The difficulty label of a gold patch by its size.

    >>> patch_bucket("--- a/x.py\\n+++ b/x.py\\n@@ -1 +1 @@\\n-a = 1\\n+a = 2\\n")
    'patch 1-2 lines'
    """
    stats = diff_stats(patch)
    changed = stats.added + stats.removed
    for upper, label in PATCH_BUCKETS:
        if changed <= upper:
            return label
    return PATCH_LARGEST


def task_groups(task: Task) -> TaskGroups:
    """Where `task` falls in each breakdown."""
    metadata = task.metadata if isinstance(task.metadata, dict) else {}
    method = metadata.get("method") or task.source.value
    difficulty = metadata.get("difficulty") or task.extra.get("difficulty")
    if not isinstance(difficulty, (str, int, float)) or isinstance(difficulty, bool):
        difficulty = patch_bucket(task.patch)
    split = metadata.get("split") or ""
    return TaskGroups(repo=task.repo, method=str(method), difficulty=str(difficulty), split=str(split))
