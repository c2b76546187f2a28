"""Fixtures of the sandbox tests; the helpers themselves live in sandbox_support.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from sandbox_support import HELLO_FILES, GitRepo


@pytest.fixture(scope="session")
def git_repo(tmp_path_factory: pytest.TempPathFactory, toy_task):
    """Make a GitRepo named `name` in a fresh tmp folder (toy_task: the suite's shared REPOGYM_CACHE)."""

    def make(name: str) -> GitRepo:
        return GitRepo(tmp_path_factory.mktemp(name) / name)

    return make


@pytest.fixture(scope="session")
def hello_repo(git_repo) -> tuple[GitRepo, str]:
    """The `hello` project committed once: (repo, base commit)."""
    repo = git_repo("hello")
    return repo, repo.commit(HELLO_FILES, "hello")
