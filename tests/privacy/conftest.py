"""Fixtures of the privacy tests; the helpers themselves live in tests/support/privacy.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ..support.privacy import init_repo


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[..., tuple[Path, str]]:
    """make_repo({"LICENSE": text, ...}, name="r") -> (path, head commit)."""
    counter = iter(range(1000))

    def make(files: dict[str, str | None], name: str = "") -> tuple[Path, str]:
        return init_repo(tmp_path / (name or f"repo{next(counter)}"), files)

    return make
