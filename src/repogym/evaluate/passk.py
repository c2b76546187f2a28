"""The unbiased pass@k estimator of Chen et al. 2021 ("Evaluating Large Language Models Trained on Code").

With n attempts on a task of which c resolved, the chance that k attempts drawn without replacement
include at least one success is 1 - C(n-c, k) / C(n, k). Averaged over tasks it estimates pass@k
without the bias of "any of the first k". The product form below is the paper's numerically stable
one (no huge binomials); `pass_at_k_exact` is the same quantity as a Fraction, for tests and doctests.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from repogym.errors import ConfigError


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ConfigError(f"pass@k: resolved count c={c} must be between 0 and the attempts n={n}")
    if not 1 <= k <= n:
        raise ConfigError(
            f"pass@{k}: k must be between 1 and the attempts per task n={n} (run with -n >= {k})"
        )


def pass_at_k(n: int, c: int, k: int) -> float:
    """1 - C(n-c, k) / C(n, k), computed as 1 - prod(1 - k / arange(n - c + 1, n + 1)).

    >>> [round(pass_at_k(5, 2, k), 12) for k in range(1, 6)]  # 1 - C(3,k)/C(5,k)
    [0.4, 0.7, 0.9, 1.0, 1.0]
    >>> pass_at_k(5, 0, 3), pass_at_k(5, 5, 1)
    (0.0, 1.0)
    """
    _check(n, c, k)
    if n - c < k:  # every draw of k attempts holds a success
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def pass_at_k_exact(n: int, c: int, k: int) -> Fraction:
    """The same estimator as an exact fraction (math.comb), for checking `pass_at_k`.

    >>> [str(pass_at_k_exact(5, 2, k)) for k in range(1, 6)]
    ['2/5', '7/10', '9/10', '1', '1']
    """
    _check(n, c, k)
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def mean_pass_at_k(counts: list[tuple[int, int]], k: int) -> float:
    """pass@k over tasks: the mean of each task's estimate; `counts` holds (n, c) per task.

    >>> mean_pass_at_k([(4, 0), (4, 4), (4, 2)], 1)
    0.5
    """
    if not counts:
        raise ConfigError("pass@k: no tasks to average over")
    return sum(pass_at_k(n, c, k) for n, c in counts) / len(counts)
