"""How good a verifier's scores are: AUC (does it rank resolved attempts above unresolved ones), ECE (do its
probabilities mean what they say), and bootstrap intervals for both that resample tasks.

Written here with numpy rather than taken from scikit-learn, which is not a dependency of repogym: AUC by the
rank (Mann-Whitney) formula and ECE over equal-width bins are a few lines each, and scikit-learn would be a
large install for them. The interval follows repogym.evaluate.bootstrap: the task is the resample unit (an
attempt's neighbours on the same task are not independent draws), a fixed seed, the percentile method.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from repogym.errors import ConfigError
from repogym.evaluate.bootstrap import BootstrapSettings, percentile_bounds

DEFAULT_BINS = 10


def auc(scores: Sequence[float], labels: Sequence[bool]) -> float | None:
    """The probability that a random resolved attempt scores above a random unresolved one (ties count half);
    None when one of the two kinds is missing, as nothing can be ranked then.

    >>> auc([0.9, 0.8, 0.3, 0.1], [True, True, False, False])
    1.0
    >>> auc([0.5, 0.5], [True, False])
    0.5
    >>> auc([0.2, 0.7, 0.4], [True, False, False])
    0.0
    >>> auc([0.2], [True]) is None
    True
    """
    values = np.asarray(scores, dtype=float)
    positive = np.asarray(labels, dtype=bool)
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    if n_pos == 0 or n_neg == 0:
        return None
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values))
    sorted_values = values[order]
    start = 0
    while start < len(values):  # tied scores share the mean of their ranks
        end = start
        while end + 1 < len(values) and sorted_values[end + 1] == sorted_values[start]:
            end += 1
        ranks[order[start : end + 1]] = (start + end) / 2 + 1
        start = end + 1
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


@dataclass(frozen=True)
class CalibrationBin:
    """One bar of a reliability diagram: the attempts whose score fell in [low, high)."""

    low: float
    high: float
    count: int
    mean_score: float | None
    resolved_rate: float | None

    @property
    def gap(self) -> float:
        """|mean score - share resolved|; 0 for an empty bin (it weighs nothing)."""
        if self.mean_score is None or self.resolved_rate is None:
            return 0.0
        return abs(self.mean_score - self.resolved_rate)

    def to_dict(self) -> dict[str, float | int | None]:
        return {"low": self.low, "high": self.high, "count": self.count, "mean_score": self.mean_score,
                "resolved_rate": self.resolved_rate}  # fmt: skip


def calibration_bins(
    scores: Sequence[float], labels: Sequence[bool], bins: int = DEFAULT_BINS
) -> list[CalibrationBin]:
    """Equal-width bins over [0, 1] (a score of exactly 1 goes to the last one)."""
    if bins < 1:
        raise ConfigError(f"--bins {bins}: must be at least 1")
    values = np.asarray(scores, dtype=float)
    truth = np.asarray(labels, dtype=float)
    index = np.minimum((values * bins).astype(int), bins - 1)
    found = []
    for number in range(bins):
        inside = index == number
        count = int(inside.sum())
        found.append(CalibrationBin(
            low=number / bins, high=(number + 1) / bins, count=count,
            mean_score=float(values[inside].mean()) if count else None,
            resolved_rate=float(truth[inside].mean()) if count else None,
        ))  # fmt: skip
    return found


def ece(scores: Sequence[float], labels: Sequence[bool], bins: int = DEFAULT_BINS) -> float:
    """Expected calibration error: over equal-width bins, the gap between the mean score and the share resolved,
    weighted by the bin's share of attempts.

    >>> ece([0.8, 0.8, 0.8, 0.8, 0.8], [True, True, True, True, False])
    0.0
    >>> round(ece([0.9, 0.1], [False, True]), 6)
    0.9
    """
    if not len(scores):
        raise ConfigError("ece: no scores")
    return float(sum(b.count / len(scores) * b.gap for b in calibration_bins(scores, labels, bins)))


Statistic = Callable[[Sequence[float], Sequence[bool]], float | None]


def task_bootstrap(
    statistic: Statistic, scores: Sequence[float], labels: Sequence[bool], tasks: Sequence[str],
    settings: BootstrapSettings,
) -> tuple[float, float] | None:  # fmt: skip
    """The percentile interval of `statistic` over resamples of the tasks (each drawn task brings all its
    attempts); resamples where the statistic is undefined (an AUC without both kinds) are left out, and None
    when every one is."""
    values = np.asarray(scores, dtype=float)
    truth = np.asarray(labels, dtype=bool)
    names = sorted(set(tasks))
    members = [np.flatnonzero(np.asarray(tasks) == name) for name in names]
    rng = np.random.default_rng(settings.seed)
    found = []
    for _ in range(settings.resamples):
        drawn = np.concatenate([members[i] for i in rng.integers(0, len(names), size=len(names))])
        value = statistic(values[drawn].tolist(), truth[drawn].tolist())
        if value is not None:
            found.append(value)
    return percentile_bounds(found, settings) if found else None
