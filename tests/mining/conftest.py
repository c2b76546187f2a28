"""Fixtures of the mining tests: real git repositories made in tmp_path by tests/support/git.py's RepoBuilder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ..support.git import RepoBuilder


@pytest.fixture
def repo(tmp_path: Path) -> RepoBuilder:
    """A repository with one initial commit: a package, its tests and a README."""
    builder = RepoBuilder(tmp_path / "calc")
    calc = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
    test_calc = "from pkg.calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    builder.write("pkg/__init__.py", "").write("pkg/calc.py", calc).write("tests/test_calc.py", test_calc)
    builder.write("README.md", "# calc\n").commit("Initial import")
    return builder


@pytest.fixture
def make_repo(tmp_path: Path):
    """Factory of empty repositories under tmp_path."""
    return lambda name="repo": RepoBuilder(tmp_path / name)


@pytest.fixture
def write_export(tmp_path: Path):
    """Write rows as a PR export JSONL file; returns its path."""

    def write(rows: list[dict[str, Any]], name: str = "prs.jsonl") -> Path:
        path = tmp_path / name
        path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        return path

    return write
