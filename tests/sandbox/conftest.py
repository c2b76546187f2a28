"""Fixtures of the sandbox tests; the helpers themselves live in tests/support (git.py, sandbox.py)."""

from __future__ import annotations

import pytest

from ..support.git import GitRepo
from ..support.sandbox import HELLO_FILES


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
