"""Fixtures shared by the whole suite: the example files, the toy task and its runtime (built once per
run), the synthetic toy task of the report forgers, and the tiny model. Helpers live in tests/support/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from repogym.cli.openmp import wait_passively

from .support.tasks import make_synthetic_toy_task

wait_passively()  # as the CLI does, before any test imports torch: two workers' trainers share 2 cores

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = REPO_ROOT / "examples"


@pytest.fixture(scope="session")
def examples_dir() -> Path:
    return EXAMPLES


@pytest.fixture(scope="session")
def swebench_sample_path() -> Path:
    """A hand-written SWE-bench JSON array (four instances, multi-file patches, JSON-encoded test lists)."""
    return EXAMPLES / "swebench_sample.json"


@pytest.fixture
def swebench_rows(swebench_sample_path: Path) -> list[dict[str, Any]]:
    """The sample's rows as SWE-bench's harness reads them (a fresh copy per test)."""
    return json.loads(swebench_sample_path.read_text(encoding="utf-8"))


# -- the toy task, for everything that runs the real sandbox --------------------------------------


@pytest.fixture(scope="session")
def toy_task(tmp_path_factory: pytest.TempPathFactory):
    """A one-bug git repo and its task (repogym.testing); REPOGYM_CACHE is shared by xdist workers."""
    import os

    from repogym.testing import make_toy_task

    # One cache for every xdist worker of this run, so each environment is built once (file lock).
    os.environ["REPOGYM_CACHE"] = str(tmp_path_factory.getbasetemp().parent / "repogym-cache")
    return make_toy_task(tmp_path_factory.mktemp("toy"))


@pytest.fixture(scope="session")
def toy_runtime(toy_task):
    """The toy task's prepared runtime (mirror, pristine checkout, uv environment) under bwrap."""
    from repogym.sandbox.runtime import TaskRuntime

    return TaskRuntime.create(toy_task, "bwrap").prepare()


@pytest.fixture(scope="session")
def synthetic_task(toy_task, tmp_path_factory: pytest.TempPathFactory):
    """The toy repo with its regression test committed (no test patch): the shape of a synthetic task
    (toy_task first: it points REPOGYM_CACHE at the run's shared cache)."""
    return make_synthetic_toy_task(tmp_path_factory.mktemp("synthetic"))


@pytest.fixture(scope="session")
def synthetic_runtime(synthetic_task):
    from repogym.sandbox.runtime import TaskRuntime

    return TaskRuntime.create(synthetic_task, "bwrap").prepare()


@pytest.fixture(params=["synthetic", "test_patch"])
def task_and_runtime(request):
    """Each attack on both shapes of task: synthetic (no test patch) and one with a test patch (the toy's)."""
    if request.param == "synthetic":
        return request.getfixturevalue("synthetic_task"), request.getfixturevalue("synthetic_runtime")
    return request.getfixturevalue("toy_task"), request.getfixturevalue("toy_runtime")


@pytest.fixture
def episode(toy_runtime):
    with toy_runtime.episode() as ep:
        yield ep


@pytest.fixture
def host_secret(tmp_path: Path) -> Path:
    secret = tmp_path / "host-secret.txt"
    secret.write_text("TOP-SECRET-HOST-VALUE\n")
    return secret


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The suite's 1.4M-parameter random Llama and its BPE tokenizer, built once per test run (no download):
    one folder beside the workers' temp folders, so every xdist worker and every test directory shares it."""
    pytest.importorskip("transformers", reason="the hf backend needs the 'train' extra (torch, transformers)")
    from filelock import FileLock

    from repogym.train.tiny import build_tiny_model

    folder = tmp_path_factory.getbasetemp().parent / "repogym-tiny-model-v1"
    with FileLock(str(folder) + ".lock"):
        if not (folder / "config.json").exists():
            build_tiny_model(folder)
    return folder
