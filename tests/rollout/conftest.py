"""Fixtures for rollout tests: sample-library tasks, and a task whose environment cannot be built (the toy
task itself is tests/conftest.py's)."""

from __future__ import annotations

import pytest

from repogym.task import EnvSpec

from ..support.tasks import sample_library_tasks


@pytest.fixture(scope="session")
def sample_tasks(tmp_path_factory: pytest.TempPathFactory):
    """The planted fixes of a generated sample library, as tasks (gold patch = the fix's code change)."""
    return sample_library_tasks(tmp_path_factory.mktemp("sample"), seed=1, n_bug_fixes=3)


@pytest.fixture(scope="session")
def broken_env_task(toy_task):
    """The toy task under another id, with an install step that fails: its environment cannot be built."""
    return toy_task.replace(instance_id="toy__calc-broken", env=EnvSpec(install=("exit 3",)))
