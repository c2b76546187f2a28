"""Fixtures for agent tests: envs over the toy task's shared runtime (tests/conftest.py builds it once)."""

from __future__ import annotations

import pytest


@pytest.fixture
def make_env(toy_task, toy_runtime):
    """Envs of the toy task over the shared runtime; closed after the test."""
    import repogym.env

    made = []

    def factory(**options):
        env = repogym.env.make(toy_task.instance_id, toy_task, runtime=toy_runtime, **options)
        made.append(env)
        return env

    yield factory
    for env in made:
        env.close()
