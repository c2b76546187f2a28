"""A tiny builder of real git repositories for the mining tests (the git CLI, in tmp_path)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

START = 1_704_067_200  # 2024-01-01T00:00:00Z


class RepoBuilder:
    """Writes files and commits them with deterministic dates, one hour apart."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.clock = START
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")
        self.git("config", "user.name", "Dev One")
        self.git("config", "user.email", "dev.one@corp.example")
        self.git("config", "commit.gpgsign", "false")

    def git(self, *args: str, env: dict[str, str] | None = None, check: bool = True) -> str:
        result = subprocess.run(
            ["git", *args], cwd=self.path, capture_output=True, text=True, env={**os.environ, **(env or {})}
        )
        if check and result.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed: {result.stderr}")
        return result.stdout.strip()

    def write(self, path: str, text: str | bytes) -> RepoBuilder:
        file = self.path / path
        file.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            file.write_bytes(text)
        else:
            file.write_text(text, encoding="utf-8")
        return self

    def delete(self, path: str) -> RepoBuilder:
        (self.path / path).unlink()
        return self

    def _dates(self, author: str, email: str) -> dict[str, str]:
        self.clock += 3600
        stamp = f"{self.clock} +0000"
        return {
            "GIT_AUTHOR_DATE": stamp,
            "GIT_COMMITTER_DATE": stamp,
            "GIT_AUTHOR_NAME": author,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_COMMITTER_NAME": author,
            "GIT_COMMITTER_EMAIL": email,
        }

    def commit(self, message: str, author: str = "Dev One", email: str = "dev.one@corp.example") -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message, env=self._dates(author, email))
        return self.head()

    def merge(self, branch: str, message: str, *, resolve: dict[str, str] | None = None) -> str:
        """`git merge --no-ff`; with `resolve`, conflicts are expected and resolved with these contents."""
        env = self._dates("Dev One", "dev.one@corp.example")
        result = subprocess.run(
            ["git", "merge", "-q", "--no-ff", branch, "-m", message],
            cwd=self.path, capture_output=True, text=True, env={**os.environ, **env},
        )  # fmt: skip
        if result.returncode != 0:
            if resolve is None:
                raise AssertionError(f"merge of {branch} failed: {result.stdout}{result.stderr}")
            for path, text in resolve.items():
                self.write(path, text)
            self.git("add", "-A")
            self.git("commit", "-q", "--no-edit", env=env)
        return self.head()

    def checkout(self, branch: str, create: bool = False, start: str = "") -> RepoBuilder:
        self.git("checkout", "-q", *(["-b", branch] if create else [branch]), *([start] if start else []))
        return self

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")

    def apply_check(self, base: str, *patches: str) -> None:
        """Apply the patches, in order, to a fresh worktree at `base` with `git apply`; fail if any does not apply."""
        worktree = self.path.parent / f"apply-{base[:8]}-{abs(hash(patches)) % 10**8}"
        self.git("worktree", "add", "-q", "--detach", str(worktree), base)
        try:
            for patch in patches:
                if not patch:
                    continue
                result = subprocess.run(
                    ["git", "apply", "--whitespace=nowarn", "-"], cwd=worktree, input=patch.encode(),
                    capture_output=True,
                )  # fmt: skip
                assert result.returncode == 0, result.stderr.decode() + "\n" + patch
        finally:
            self.git("worktree", "remove", "--force", str(worktree))

    def tree_after(self, base: str, *patches: str) -> dict[str, bytes]:
        """Files of `base` with the patches applied (binary-safe), as {path: bytes}."""
        worktree = self.path.parent / f"tree-{base[:8]}-{abs(hash(patches)) % 10**8}"
        self.git("worktree", "add", "-q", "--detach", str(worktree), base)
        try:
            for patch in patches:
                if patch:
                    subprocess.run(["git", "apply", "-"], cwd=worktree, input=patch.encode(), check=True)
            return {
                str(file.relative_to(worktree)): file.read_bytes()
                for file in sorted(worktree.rglob("*"))
                if file.is_file() and ".git" not in file.relative_to(worktree).parts
            }
        finally:
            self.git("worktree", "remove", "--force", str(worktree))


CALC = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
TEST_CALC = "from pkg.calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"


@pytest.fixture
def repo(tmp_path: Path) -> RepoBuilder:
    """A repository with one initial commit: a package, its tests and a README."""
    builder = RepoBuilder(tmp_path / "calc")
    builder.write("pkg/__init__.py", "").write("pkg/calc.py", CALC).write("tests/test_calc.py", TEST_CALC)
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
