"""Fixtures for the pipeline's tests: validated tasks of one generated sample repository, made by the
pipeline's own data stage (through the Runner, so its record is on disk as a quickstart leaves it)."""

from __future__ import annotations

import pytest

from repogym.pipeline.data import DataInput, data_stage
from repogym.pipeline.runner import SILENT, Runner

from ..support.pipeline import SampleData


@pytest.fixture(scope="session")
def sample_data(toy_task, tmp_path_factory: pytest.TempPathFactory) -> SampleData:
    """`repogym quickstart`'s data stage on one sample repository (toy_task shares the run's env cache)."""
    out = tmp_path_factory.mktemp("pipeline-data") / "qs"
    result = Runner(SILENT)("data", data_stage, DataInput(out, repos=1, workers=2))
    assert result.tasks, "the sample repository yielded no validated task"
    return SampleData(out, result)
