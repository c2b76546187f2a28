"""What the pipeline tests' shared data stage left on disk (tests/pipeline/conftest.py runs it once)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from repogym.pipeline.data import DataResult


@dataclass(frozen=True)
class SampleData:
    """The data stage's folder and its result."""

    out: Path
    result: DataResult

    @property
    def tasks_file(self) -> Path:
        return self.out / "tasks.jsonl"
