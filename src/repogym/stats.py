"""Summary figures of a task set (what `repogym tasks stats` prints)."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from repogym.patches import diff_stats
from repogym.task import Task


@dataclass(frozen=True)
class Distribution:
    mean: float
    median: float
    max: int

    @classmethod
    def of(cls, values: list[int]) -> Distribution:
        if not values:
            return cls(0.0, 0.0, 0)
        return cls(statistics.fmean(values), float(statistics.median(values)), max(values))


@dataclass(frozen=True)
class TaskStats:
    count: int
    per_repo: dict[str, int]
    per_source: dict[str, int]
    patch_files: Distribution
    patch_lines: Distribution
    test_patch_lines: Distribution
    fail_to_pass: Distribution
    pass_to_pass: Distribution
    without_fail_to_pass: int

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def task_stats(tasks: Iterable[Task]) -> TaskStats:
    """Counts per repo and source, and distributions of patch sizes and test counts.

    >>> t = Task("a__b-1", "a/b", "abc", "--- a/x.py\\n+++ b/x.py\\n@@ -1 +1 @@\\n-a\\n+b\\n", FAIL_TO_PASS=["t1"])
    >>> s = task_stats([t])
    >>> (s.count, s.per_repo, s.patch_lines.max, s.fail_to_pass.mean)
    (1, {'a/b': 1}, 2, 1.0)
    """
    repos: Counter[str] = Counter()
    sources: Counter[str] = Counter()
    files, lines, test_lines, f2p, p2p = [], [], [], [], []
    for task in tasks:
        repos[task.repo] += 1
        sources[task.source.value] += 1
        code = diff_stats(task.patch)
        files.append(code.files)
        lines.append(code.lines)
        test_lines.append(diff_stats(task.test_patch).lines)
        f2p.append(len(task.FAIL_TO_PASS))
        p2p.append(len(task.PASS_TO_PASS))
    return TaskStats(
        count=len(files),
        per_repo=dict(repos.most_common()),
        per_source=dict(sources.most_common()),
        patch_files=Distribution.of(files),
        patch_lines=Distribution.of(lines),
        test_patch_lines=Distribution.of(test_lines),
        fail_to_pass=Distribution.of(f2p),
        pass_to_pass=Distribution.of(p2p),
        without_fail_to_pass=sum(1 for n in f2p if n == 0),
    )
