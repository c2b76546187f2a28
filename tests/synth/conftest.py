"""Fixtures for synth tests: a small real library with a pytest suite (tests/support/shapes.py), its
synthetic candidates, and one shared validation run of a sample of them (real git, real bwrap sandbox, real
environment build)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from repogym.synth.config import SynthConfig
from repogym.synth.synth import SynthResult, synthesize
from repogym.task import Task
from repogym.validate import ValidateConfig, validate_candidates

from ..support.shapes import REPO_NAME, Validated, make_shapes_repo, shapes_files


@pytest.fixture(scope="session")
def synth_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # One cache for every xdist worker of this run (the root conftest's convention), so the shared
    # environment is built once.
    cache = tmp_path_factory.getbasetemp().parent / "repogym-cache"
    os.environ["REPOGYM_CACHE"] = str(cache)
    return cache


@pytest.fixture(scope="session")
def shapes_repo(tmp_path_factory, synth_cache) -> Path:
    return make_shapes_repo(tmp_path_factory.mktemp("shapes") / "shapes", shapes_files())


@pytest.fixture(scope="session")
def shapes_synth(shapes_repo, tmp_path_factory) -> SynthResult:
    """Every method's candidates, up to six per function, for the shapes library."""
    config = SynthConfig(repo_name=REPO_NAME, per_function=6, seed=0)
    return synthesize(shapes_repo, config, tmp_path_factory.mktemp("store"))


@pytest.fixture(scope="session")
def shapes_validated(shapes_synth, tmp_path_factory) -> Validated:
    """One validation run of two candidates per method (at most), shared by the tests that read outcomes."""
    picked: dict[str, list[Task]] = {}
    for task in shapes_synth.tasks:
        chosen = picked.setdefault(task.metadata["method"], [])
        if len(chosen) < 2:
            chosen.append(task)
    candidates = tuple(task for tasks in picked.values() for task in tasks)
    out = tmp_path_factory.mktemp("validated") / "tasks.jsonl"
    run = validate_candidates(list(candidates), out, ValidateConfig(workers=2))
    return Validated(run, candidates, out)
