"""Fixtures for the sample-repo tests: a pool of forking pytest servers that run a generated repo's own suite
(tests/support/pytest_servers.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from ..support.pytest_servers import PytestServers


@pytest.fixture(scope="session")
def suite_runner() -> Iterator[PytestServers]:
    servers = PytestServers(size=min(4, os.cpu_count() or 1))
    yield servers
    servers.close()
