"""git in the background for mining (`GitJob`), and the revision and remote questions mining asks.

Every command runs as `repogym.hostgit` runs git (its environment and the settings pinned so the
same history gives the same patches on every machine). Author e-mails are never requested from git.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

from repogym.errors import RepoSourceError
from repogym.hostgit import GIT_CONFIG, git, git_environment


def resolve_revision(repo: str | os.PathLike[str], rev: str) -> str:
    """The commit sha a branch, tag or sha names; an unknown name raises RepoSourceError naming it."""
    if not Path(repo, ".git").exists() and not Path(repo, "HEAD").is_file():
        raise RepoSourceError(f"{repo}: not a git repository (no .git)")
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").strip()
    except RepoSourceError:
        raise RepoSourceError(
            f"{repo}: no commit named {rev!r} (try a branch name, a tag or a sha)"
        ) from None


class GitJob:
    """One git process, started now, writing to temporary files; `output()` waits for it.

    No pipes to drain and no reader threads: git runs beside the caller's Python
    work without competing with it for the GIL (a reader thread slows a busy
    main thread a lot). With `feed=True`, stdin is a pipe the caller writes to;
    `follow()` reads stdout while git is still writing it.
    """

    def __init__(
        self,
        repo: str | os.PathLike[str],
        args: Sequence[str],
        stdin: bytes | None = None,
        feed: bool = False,
    ) -> None:
        self.repo, self.args = repo, tuple(args)
        # Named, so `follow` can open its own read position; git keeps writing at its own.
        self._stdout = tempfile.NamedTemporaryFile(prefix="repogym-git-")  # noqa: SIM115 - closed by close()
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        source: int | IO[bytes] | None = subprocess.PIPE if feed else None
        if stdin is not None:
            source = tempfile.TemporaryFile()  # noqa: SIM115 - closed right after git has it
            source.write(stdin)
            source.seek(0)
        self.process = subprocess.Popen(
            ["git", *GIT_CONFIG, *self.args], cwd=repo, stdin=source, stdout=self._stdout,
            stderr=self._stderr, env=git_environment(),
        )  # fmt: skip
        if stdin is not None and not isinstance(source, int) and source is not None:
            source.close()
        if feed and self.process.stdin is not None:
            _widen_pipe(self.process.stdin.fileno())

    def output(self, ok: Sequence[int] = (0,)) -> tuple[int, bytes]:
        """Wait for git; (exit status, stdout). A status outside `ok` raises RepoSourceError with git's words."""
        self._close_stdin()
        status = self.process.wait()
        self._stdout.seek(0)
        out = self._stdout.read()
        self._check(status, ok)
        return status, out

    def follow(self, chunk_size: int = 1 << 20) -> Iterator[bytes]:
        """stdout in chunks as git writes it (stdin is closed first); then the exit status is checked."""
        self._close_stdin()
        with open(self._stdout.name, "rb") as reader:
            while True:
                chunk = reader.read(chunk_size)
                if chunk:
                    yield chunk
                elif self.process.poll() is not None:
                    if rest := reader.read():
                        yield rest
                    break
                else:
                    time.sleep(0.001)  # caught up with git: let it write
        self._check(self.process.wait(), (0,))

    def _close_stdin(self) -> None:
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()

    def _check(self, status: int, ok: Sequence[int]) -> None:
        if status not in ok:
            self._stderr.seek(0)
            message = self._stderr.read().decode("utf-8", "replace").strip()[:500]
            self.close()
            raise RepoSourceError(f"{self.repo}: git {' '.join(self.args[:2])} failed: {message}")
        self.close()

    def close(self) -> None:
        """Stop git if it still runs (an error elsewhere) and release the files."""
        with contextlib.suppress(OSError):
            self._close_stdin()
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._stdout.close()
        self._stderr.close()

    def __enter__(self) -> GitJob:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _widen_pipe(fd: int) -> None:
    """Grow a pipe to 1 MiB where Linux allows it, so a writer rarely waits for git to catch up.

    With the default 64 KiB, feeding git a few thousand lines blocks the feeder
    whenever git falls behind, which serialises the two.
    """
    with contextlib.suppress(AttributeError, OSError):
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, 1 << 20)


def remote_url(repo: str | os.PathLike[str], remote: str = "origin") -> str:
    """The URL of a remote, or "" when there is none."""
    try:
        return git(repo, "config", "--get", f"remote.{remote}.url").strip()
    except RepoSourceError:
        return ""
