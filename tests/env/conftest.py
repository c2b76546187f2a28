"""Fixtures for the gym's tests: envs over the shared toy runtime (built once per test run, see tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import repogym.env


@pytest.fixture
def make_env(toy_task, toy_runtime) -> Iterator[Callable[..., Any]]:
    """A factory of toy-task envs sharing the prepared runtime; every env made is closed afterwards."""
    made: list[Any] = []

    def factory(**kwargs: Any) -> Any:
        env = repogym.env.make(toy_task.instance_id, toy_task, runtime=toy_runtime, **kwargs)
        made.append(env)
        return env

    yield factory
    for env in made:
        env.close()


@pytest.fixture
def env(make_env) -> Any:
    """An agent-mode toy env, reset."""
    made = make_env()
    made.reset()
    return made


@pytest.fixture
def step_ok() -> Callable[[Any, Any], str]:
    """Step and return the observation, failing the test on a format or tool error or an episode end."""

    def step(env: Any, action: Any) -> str:
        observation, reward, terminated, truncated, info = env.step(action)
        assert not info["format_error"] and not info["tool_error"], observation
        assert (reward, terminated, truncated) == (0.0, False, False)
        return observation

    return step
