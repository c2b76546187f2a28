"""Fixtures for grading tests: one toy task whose environment is built once per test run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from repogym.sandbox.runtime import TaskRuntime
from repogym.testing import make_toy_task


@pytest.fixture(scope="session")
def toy_task(tmp_path_factory: pytest.TempPathFactory):
    # One cache for every xdist worker of this run, so the environment is built once (file lock).
    cache = tmp_path_factory.getbasetemp().parent / "repogym-cache"
    os.environ["REPOGYM_CACHE"] = str(cache)
    return make_toy_task(tmp_path_factory.mktemp("toy"))


@pytest.fixture(scope="session")
def toy_runtime(toy_task) -> TaskRuntime:
    return TaskRuntime.create(toy_task, "bwrap").prepare()


@pytest.fixture
def episode(toy_runtime):
    with toy_runtime.episode() as ep:
        yield ep


@pytest.fixture
def host_secret(tmp_path: Path) -> Path:
    secret = tmp_path / "host-secret.txt"
    secret.write_text("TOP-SECRET-HOST-VALUE\n")
    return secret
