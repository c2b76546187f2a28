"""Fixtures for agent tests: the toy task with its environment built once, envs over it, a tiny local model."""

from __future__ import annotations

import os

import pytest

from repogym.sandbox.runtime import TaskRuntime
from repogym.testing import make_toy_task


@pytest.fixture(scope="session")
def toy_task(tmp_path_factory: pytest.TempPathFactory):
    # One cache for every xdist worker of this run, so the environment is built once (file lock).
    os.environ["REPOGYM_CACHE"] = str(tmp_path_factory.getbasetemp().parent / "repogym-cache")
    return make_toy_task(tmp_path_factory.mktemp("toy"))


@pytest.fixture(scope="session")
def toy_runtime(toy_task) -> TaskRuntime:
    return TaskRuntime.create(toy_task, "bwrap").prepare()


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
