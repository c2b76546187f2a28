"""Real git repositories for the tests: one hermetic `git` runner, and the builders made on it.

Guarantees: `git` ignores the machine's and the user's configuration (no system file, HOME is the
repository, safe.directory=* so folders another uid owns are read), commits with one
fixed author and date (the same files make the same commit ids on every run, so environments keyed by a
commit are built once), and fails with git's own message naming the command and the folder.
Not guaranteed: `RepoBuilder` (the mining tests') keeps the caller's environment and dates its commits
an hour apart, because mining reads authors and dates.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from repogym.task import EnvSpec, Source, Task

#: Every commit made through `git` is dated here unless the caller's env says otherwise.
FIXED_DATE = "2024-01-01T00:00:00Z"


def git_env(home: str | os.PathLike[str], overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment `git` runs with: nothing from the user's or the system's git configuration."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "safe.directory",
        "GIT_CONFIG_VALUE_0": "*",
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "test@example.invalid",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "test@example.invalid",
        "GIT_AUTHOR_DATE": FIXED_DATE,
        "GIT_COMMITTER_DATE": FIXED_DATE,
        **(overrides or {}),
    }


def git_run(
    repo: str | os.PathLike[str], *args: str, stdin: str | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`git ARGS` in `repo`, whatever its exit status (for tests that read a refusal)."""
    return subprocess.run(
        ["git", *args], cwd=repo, env=git_env(repo, env), input=stdin, capture_output=True, text=True
    )


def git(
    repo: str | os.PathLike[str], *args: str, stdin: str | None = None, env: Mapping[str, str] | None = None
) -> str:
    """`git ARGS` in `repo`; its stdout, or an AssertionError with git's stderr."""
    done = git_run(repo, *args, stdin=stdin, env=env)
    if done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} in {repo} failed ({done.returncode}): {done.stderr}")
    return done.stdout


def write_files(root: Path, files: Mapping[str, str | bytes | None]) -> None:
    """Write each path's text (bytes as given), making folders; None deletes the file."""
    for name, text in files.items():
        target = root / name
        if text is None:
            target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            target.write_bytes(text)
        else:
            target.write_text(text, encoding="utf-8")


def commit_files(
    repo: Path, files: Mapping[str, str | bytes | None], message: str = "change", date: str = FIXED_DATE
) -> str:
    """Write (None: delete) `files` and commit everything (an empty commit too) as of `date`; the new
    commit's id."""
    write_files(repo, files)
    git(repo, "add", "-A")
    dated = {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    git(repo, "commit", "-q", "--allow-empty", "-m", message, env=dated)
    return head(repo)


def init_repo(repo: Path, files: Mapping[str, str | bytes | None], message: str = "initial") -> str:
    """A new repository at `repo` (branch main) whose one commit holds `files`; that commit's id."""
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    return commit_files(repo, files, message)


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def staged_diff(repo: Path, files: Mapping[str, str | bytes | None]) -> str:
    """The patch (`git diff --cached --binary`) that turns HEAD into HEAD plus `files`; the repository is
    left clean at HEAD."""
    write_files(repo, files)
    git(repo, "add", "-A")
    patch = git(repo, "diff", "--cached", "--binary")
    git(repo, "reset", "-q", "--hard", "HEAD")
    git(repo, "clean", "-q", "-fd")
    return patch


def clone(source: str | os.PathLike[str], dest: Path, *options: str) -> Path:
    """`git clone -q OPTIONS SOURCE DEST`."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    git(dest.parent, "clone", "-q", *options, str(source), str(dest))
    return dest


def apply_check(repo: Path, base: str, *patches: str) -> None:
    """Apply the patches (empty ones skipped), in order, to a fresh worktree of `repo` at `base` with
    `git apply`; fail naming git's complaint and the patch if one does not apply."""
    worktree = repo.parent / f"apply-{base[:8]}-{abs(hash(patches)) % 10**8}"
    git(repo, "worktree", "add", "-q", "--detach", str(worktree), base)
    try:
        for patch in patches:
            if patch:
                done = git_run(worktree, "apply", "--whitespace=nowarn", "-", stdin=patch)
                assert done.returncode == 0, done.stderr + "\n" + patch
    finally:
        git(repo, "worktree", "remove", "--force", str(worktree))


class GitRepo:
    """A repository made at `path` (branch main) for the sandbox tests: commits, uncommitted patches, tasks."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        return git(self.path, *args)

    def commit(self, files: Mapping[str, str], message: str = "change") -> str:
        """Write `files` (path -> text) and commit them; returns the commit's sha."""
        write_files(self.path, files)
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        return head(self.path)

    def patch(self, files: Mapping[str, str]) -> str:
        """A patch that sets `files` (path -> text) over HEAD, without committing it."""
        return staged_diff(self.path, files)

    def task(self, instance_id: str, commit: str, **fields: object) -> Task:
        values: dict[str, object] = {"patch": "", "env": EnvSpec(), **fields}
        return Task(
            instance_id=instance_id,
            repo=f"local/{self.path.name}",
            base_commit=commit,
            source=Source.SYNTHETIC,
            repo_source=str(self.path),
            **values,  # type: ignore[arg-type]
        )


class RepoBuilder:
    """The mining tests' repository: files written and committed with dates one hour apart, authors as given.

    Runs git with the caller's environment plus a per-repository user (mining reads authors and dates).
    """

    START = 1_704_067_200  # 2024-01-01T00:00:00Z

    def __init__(self, path: Path) -> None:
        self.path = path
        self.clock = self.START
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
        apply_check(self.path, base, *patches)

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
