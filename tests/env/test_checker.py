"""check_env on the toy task: it passes on a sound env and names the check that fails on a broken task."""

from __future__ import annotations

import gymnasium
import pytest

import repogym.env
from repogym.env.checker import EnvCheckError, check_env
from repogym.testing import BUGGY_SOURCE, toy_patch

CHECKS = ["gymnasium", "reset_determinism", "step_api", "gold_resolves", "empty_submit", "reset_needed"]


@pytest.mark.parametrize(("mode", "gold", "empty"), [("agent", 1.0, 0.0), ("agentless", 2.0, -1.0)])
def test_check_env_passes_on_the_toy_task(make_env, mode, gold, empty):
    report = repogym.env.check_env(make_env(mode=mode))
    assert report.ok and [check.name for check in report.checks] == CHECKS
    assert (report.gold_reward, report.empty_reward) == (gold, empty)


def test_check_env_names_a_gold_patch_that_does_not_resolve(toy_task, toy_runtime):
    wrong = toy_task.replace(
        patch=toy_patch(toy_task, "src/calc/__init__.py", BUGGY_SOURCE.replace("a * b", "b * a"))
    )
    env = repogym.env.make(wrong.instance_id, wrong, runtime=toy_runtime)
    try:
        with pytest.raises(EnvCheckError) as caught:
            check_env(env)
        message = str(caught.value)
        assert (
            "check_env failed: gold_resolves: AssertionError: the gold patch did not resolve: UNRESOLVED"
            in message
        )
        assert "empty_submit" not in message and "step_api" not in message
    finally:
        env.close()


def test_check_env_refuses_envs_it_cannot_check():
    with pytest.raises(EnvCheckError, match=r"expects an env made by repogym\.env\.make"):
        check_env(gymnasium.make("CartPole-v1"))
