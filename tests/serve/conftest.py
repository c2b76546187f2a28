"""Fixtures for serve tests: the toy task (environment built once per run) and a tiny local model."""

from __future__ import annotations

import os

import pytest

from repogym.testing import make_toy_task


@pytest.fixture(scope="session")
def toy_task(tmp_path_factory: pytest.TempPathFactory):
    # One cache for every xdist worker of this run, so the environment is built once (file lock).
    os.environ["REPOGYM_CACHE"] = str(tmp_path_factory.getbasetemp().parent / "repogym-cache")
    return make_toy_task(tmp_path_factory.mktemp("toy"))
