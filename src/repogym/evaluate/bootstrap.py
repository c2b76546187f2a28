"""Percentile bootstrap intervals over tasks (the unit that was sampled), with a fixed seed.

An eval's uncertainty is mostly which tasks were drawn, not the attempts on each, so the resample
unit is the task: draw len(values) task scores with replacement, take the mean, repeat `resamples`
times, and report the (1 - confidence) / 2 and (1 + confidence) / 2 percentiles of those means.
A paired comparison resamples per-task differences the same way (both runs keep the same tasks in
each draw). Written with numpy rather than scipy.stats.bootstrap: the percentile method over a
mean is a few lines, and scipy would be a large dependency for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from repogym.errors import ConfigError

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 0
DEFAULT_CONFIDENCE = 0.95
_CHUNK_CELLS = 4_000_000  # resample in blocks of about this many drawn indices (bounded memory)


@dataclass(frozen=True)
class BootstrapSettings:
    """How intervals are computed; written into every summary so a reader knows."""

    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    confidence: float = DEFAULT_CONFIDENCE

    def __post_init__(self) -> None:
        if self.resamples < 1:
            raise ConfigError(f"--bootstrap: resamples must be >= 1, got {self.resamples}")
        if not 0.0 < self.confidence < 1.0:
            raise ConfigError(f"confidence must be between 0 and 1, got {self.confidence}")

    def to_dict(self) -> dict[str, object]:
        return {"resamples": self.resamples, "seed": self.seed, "confidence": self.confidence,
                "unit": "task", "method": "percentile"}  # fmt: skip


def bootstrap_interval(
    values: Sequence[float], settings: BootstrapSettings | None = None
) -> tuple[float, float]:
    """The percentile interval of the mean of `values` under resampling with replacement.

    A single value (or identical values) gives a zero-width interval; no values is an error.

    >>> bootstrap_interval([1.0, 1.0, 1.0])
    (1.0, 1.0)
    >>> low, high = bootstrap_interval([0.0, 1.0] * 50)
    >>> 0.38 < low < 0.5 < high < 0.62
    True
    """
    settings = settings or BootstrapSettings()
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        raise ConfigError("bootstrap: no values to resample")
    rng = np.random.default_rng(settings.seed)
    rows = max(1, _CHUNK_CELLS // data.size)
    means: list[np.ndarray] = []
    left = settings.resamples
    while left > 0:
        block = min(rows, left)
        means.append(data[rng.integers(0, data.size, size=(block, data.size))].mean(axis=1))
        left -= block
    return percentile_bounds(np.concatenate(means), settings)


def percentile_bounds(
    statistics: Sequence[float] | np.ndarray, settings: BootstrapSettings
) -> tuple[float, float]:
    """The percentile interval of resampled statistics at `settings.confidence` (any statistic: a mean here,
    an AUC in repogym.verifier.metrics).

    >>> percentile_bounds([0.0, 0.5, 1.0], BootstrapSettings(confidence=0.5))
    (0.25, 0.75)
    """
    tail = (1.0 - settings.confidence) / 2 * 100
    low, high = np.percentile(np.asarray(statistics, dtype=float), [tail, 100 - tail])
    # Rounding off float noise keeps identical inputs at exactly equal bounds (a zero delta is 0.0).
    return float(round(low, 12)), float(round(high, 12))
