"""pass@k against hand-computed fractions and the binomial formula; bootstrap intervals' contract."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from repogym.errors import ConfigError
from repogym.evaluate.bootstrap import BootstrapSettings, bootstrap_interval
from repogym.evaluate.groups import TaskGroups
from repogym.evaluate.passk import mean_pass_at_k, pass_at_k, pass_at_k_exact
from repogym.evaluate.scores import TaskCounts, check_ks, eval_scores

# n=5 attempts, c=2 resolved: 1 - C(3, k) / C(5, k), worked by hand:
# k=1: 1 - 3/5 = 2/5; k=2: 1 - 3/10 = 7/10; k=3: 1 - 1/10 = 9/10; k=4, 5: C(3, k) = 0 -> 1.
HAND_N5_C2 = {1: Fraction(2, 5), 2: Fraction(7, 10), 3: Fraction(9, 10), 4: Fraction(1), 5: Fraction(1)}


@pytest.mark.parametrize("k", sorted(HAND_N5_C2))
def test_pass_at_k_matches_hand_computed_fractions_n5_c2(k):
    assert pass_at_k_exact(5, 2, k) == HAND_N5_C2[k]
    assert pass_at_k(5, 2, k) == pytest.approx(float(HAND_N5_C2[k]), abs=1e-12)


def test_more_hand_cases():
    # n=10, c=3, k=2: 1 - C(7,2)/C(10,2) = 1 - 21/45 = 8/15; n=4, c=1, k=2: 1 - C(3,2)/C(4,2) = 1/2.
    assert pass_at_k_exact(10, 3, 2) == Fraction(8, 15)
    assert pass_at_k(10, 3, 2) == pytest.approx(8 / 15, abs=1e-12)
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5, abs=1e-12)
    assert pass_at_k(1, 1, 1) == 1.0 and pass_at_k(1, 0, 1) == 0.0
    assert pass_at_k(7, 0, 7) == 0.0  # no success: never 1, whatever k


def test_stable_form_equals_binomials_everywhere_up_to_n20():
    for n in range(1, 21):
        for c in range(n + 1):
            for k in range(1, n + 1):
                exact = 1 - math.comb(n - c, k) / math.comb(n, k)
                assert pass_at_k(n, c, k) == pytest.approx(exact, abs=1e-9), (n, c, k)


def test_pass_at_k_refuses_impossible_counts():
    with pytest.raises(ConfigError, match="k must be between 1 and"):
        pass_at_k(3, 1, 4)
    with pytest.raises(ConfigError, match="resolved count"):
        pass_at_k(3, 4, 1)
    with pytest.raises(ConfigError, match="no tasks"):
        mean_pass_at_k([], 1)
    with pytest.raises(ConfigError, match="--k 5"):
        check_ks([5], 4)


def test_mean_over_tasks_is_the_average_of_each_tasks_estimate():
    # tasks (n=5): c=2 -> 7/10 at k=2, c=0 -> 0, c=5 -> 1; mean 17/30.
    assert mean_pass_at_k([(5, 2), (5, 0), (5, 5)], 2) == pytest.approx(17 / 30, abs=1e-12)


def test_bootstrap_is_seeded_bounded_and_zero_width_on_constants():
    values = [0.0, 0.2, 1.0, 1.0, 0.4, 0.0, 0.6]
    settings = BootstrapSettings(resamples=500, seed=3)
    first, again = bootstrap_interval(values, settings), bootstrap_interval(values, settings)
    assert first == again
    assert bootstrap_interval(values, BootstrapSettings(resamples=500, seed=4)) != first
    low, high = first
    assert 0.0 <= low < sum(values) / len(values) < high <= 1.0
    assert bootstrap_interval([0.25] * 9, settings) == (0.25, 0.25)
    with pytest.raises(ConfigError, match="resamples"):
        BootstrapSettings(resamples=0)


def test_eval_scores_break_down_by_group_with_intervals():
    def task(iid, c, repo, method, split=""):
        return TaskCounts(iid, 4, c, TaskGroups(repo, method, "patch 1-2 lines", split))

    counts = [
        task("a", 4, "r1", "op_flip", "heldout"),
        task("b", 0, "r1", "mined"),
        task("c", 2, "r2", "op_flip"),
    ]
    scores = eval_scores(counts, [1, 2, 4], BootstrapSettings(resamples=200))
    assert scores["pass@1"] == pytest.approx((1 + 0 + 0.5) / 3)
    # c=2 of n=4 at k=2: 1 - C(2,2)/C(4,2) = 5/6
    assert scores["pass@2"] == pytest.approx((1 + 0 + 5 / 6) / 3)
    assert scores["pass@4"] == pytest.approx(2 / 3)
    assert set(scores["breakdown"]["method"]) == {"op_flip", "mined"}
    assert scores["breakdown"]["method"]["op_flip"]["pass@1"] == pytest.approx(0.75)
    assert scores["breakdown"]["repo"]["r2"]["intervals"]["pass@1"] == [0.5, 0.5]
    assert list(scores["breakdown"]["split"]) == ["heldout"]  # tasks without a split are in no split group
    assert scores["per_task"]["c"]["pass@2"] == pytest.approx(5 / 6)
    assert scores["bootstrap"]["resamples"] == 200 and scores["bootstrap"]["unit"] == "task"
