"""Fixtures shared by the whole suite: where the example files live."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

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
