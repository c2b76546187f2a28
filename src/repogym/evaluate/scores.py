"""Scores of an eval from per-task counts: pass@1 and pass@k (and best@n where a selection picked an attempt
per task) overall and per group, with intervals.

Pure functions over `TaskCounts` (n attempts, c resolved, the task's groups); `repogym.evaluate.run`
gathers the counts from a rollout folder and writes what `eval_scores` returns as summary.json.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from repogym.errors import ConfigError
from repogym.evaluate.bootstrap import BootstrapSettings, bootstrap_interval
from repogym.evaluate.groups import GROUP_KEYS, TaskGroups
from repogym.evaluate.passk import pass_at_k


@dataclass(frozen=True)
class TaskCounts:
    """One task's attempts: how many ran, how many resolved, and how each ended."""

    instance_id: str
    n: int
    c: int
    groups: TaskGroups
    outcomes: tuple[str, ...] = ()
    """Per attempt, in attempt order: the grade outcome (RESOLVED, UNRESOLVED, ...) or the attempt's
    own outcome when nothing was graded (env_build_failed, policy_unreachable, ...)."""
    best: bool | None = None
    """Whether the attempt a best-of-n selection picked resolved (None: no selection)."""

    def score(self, k: int) -> float:
        return pass_at_k(self.n, self.c, k)

    def to_dict(self, ks: Sequence[int]) -> dict[str, Any]:
        return {
            **self.groups.to_dict(), "n": self.n, "c": self.c, "resolve_rate": self.c / self.n,
            **{f"pass@{k}": self.score(k) for k in ks}, **_best(self), "outcomes": list(self.outcomes),
        }  # fmt: skip


def best_key(n: int) -> str:
    """The summary key of best-of-n over n attempts, spelled like pass@k's: best@4."""
    return f"best@{n}"


def _best(task: TaskCounts) -> dict[str, float]:
    return {} if task.best is None else {best_key(task.n): float(task.best)}


@dataclass(frozen=True)
class ScoreBlock:
    """pass@k for one set of tasks (all of them, or one group), each with its bootstrap interval."""

    tasks: int
    attempts: int
    resolved_attempts: int
    scores: dict[str, float]
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "tasks": self.tasks, "attempts": self.attempts, "resolved_attempts": self.resolved_attempts,
            **self.scores, "intervals": {name: list(bounds) for name, bounds in self.intervals.items()},
        }  # fmt: skip


def check_ks(ks: Sequence[int], n: int) -> list[int]:
    """The k values to report: 1 and n always, plus any asked for; each must be in 1..n.

    >>> check_ks([2], 4)
    [1, 2, 4]
    """
    for k in ks:
        if not 1 <= k <= n:
            raise ConfigError(f"--k {k}: pass@k needs 1 <= k <= n (attempts per task, -n {n})")
    return sorted({1, n, *ks})


def score_block(counts: Sequence[TaskCounts], ks: Sequence[int], settings: BootstrapSettings) -> ScoreBlock:
    """Mean pass@k over `counts` for each k, and best@n where every task has a picked attempt, each with the
    interval from resampling those tasks."""
    if not counts:
        raise ConfigError("eval: no tasks to score")
    per_name = {f"pass@{k}": [task.score(k) for task in counts] for k in ks}
    if all(task.best is not None for task in counts):
        per_name[best_key(counts[0].n)] = [float(bool(task.best)) for task in counts]
    scores: dict[str, float] = {}
    intervals: dict[str, tuple[float, float]] = {}
    for name, per_task in per_name.items():
        scores[name] = sum(per_task) / len(per_task)
        intervals[name] = bootstrap_interval(per_task, settings)
    return ScoreBlock(
        tasks=len(counts), attempts=sum(t.n for t in counts), resolved_attempts=sum(t.c for t in counts),
        scores=scores, intervals=intervals,
    )  # fmt: skip


def eval_scores(
    counts: Sequence[TaskCounts], ks: Sequence[int], settings: BootstrapSettings
) -> dict[str, Any]:
    """The scores part of summary.json: overall keys at the top, `breakdown[group][label]`, `per_task`."""
    overall = score_block(counts, ks, settings)
    breakdown: dict[str, dict[str, Any]] = {}
    for key in GROUP_KEYS:
        labels = sorted({task.groups.get(key) for task in counts} - {""})
        breakdown[key] = {
            label: score_block([t for t in counts if t.groups.get(key) == label], ks, settings).to_dict()
            for label in labels
        }
    return {
        **overall.to_dict(),
        "resolve_rate": overall.resolved_attempts / overall.attempts if overall.attempts else 0.0,
        "ks": list(ks),
        "bootstrap": settings.to_dict(),
        "breakdown": breakdown,
        "per_task": {
            task.instance_id: task.to_dict(ks) for task in sorted(counts, key=lambda t: t.instance_id)
        },
    }


def score_names(summary: dict[str, Any]) -> list[str]:
    """The scores of an eval summary in the order to show them: pass@1, best@n where a selection ran, then
    the other pass@k (so pass@1, best@n and pass@n stand side by side).

    >>> score_names({"ks": [1, 2, 4], "n": 4, "best@4": 0.5})
    ['pass@1', 'best@4', 'pass@2', 'pass@4']
    """
    names = [f"pass@{k}" for k in summary.get("ks") or [1] if isinstance(k, int)]
    best = best_key(summary["n"]) if isinstance(summary.get("n"), int) else ""
    return names[:1] + ([best] if best in summary else []) + names[1:]
