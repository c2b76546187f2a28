"""git on the host: how every repogym module runs git outside a jail, with the environment rules stated once.

Used on repogym's own caches (mirrors, checkouts, task stores) and on the user's repositories that
repogym reads (mining, synth, privacy). git inside a jail is the sandbox's business, not this module's.

Environment of every call (`git_environment`):

- the caller's environment without its ``GIT_*`` variables: a GIT_DIR, GIT_INDEX_FILE or GIT_WORK_TREE
  left by a hook or a shell would point git at another repository or index;
- ``GIT_CONFIG_NOSYSTEM=1``: the machine's /etc/gitconfig is not read (it may name credential helpers
  or hooks no repogym command asked for); the user's own ~/.gitconfig is (their credentials for a
  private source, their safe.directory), with every setting that changes what git prints pinned
  on the command line (`GIT_CONFIG`), so the same history gives the same patches on every machine;
- ``GIT_TERMINAL_PROMPT=0`` (a missing credential fails instead of waiting for a person),
  ``GIT_NO_REPLACE_OBJECTS=1`` (replace refs cannot change what history says), ``GIT_PAGER=cat``,
  ``LC_ALL=C`` (messages and sort orders the same everywhere);
- then the call's own `env` (a scratch index, a bare repository's GIT_DIR, the fixed identity and
  dates of a generated commit, ``GIT_CONFIG_GLOBAL=/dev/null`` where not even the user's
  configuration may touch the result).

Errors: `git` and `git_bytes` raise RepoSourceError naming the folder, the command and git's own
words; `run_git` returns git's status for callers to whom failing is an answer.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping

from repogym.errors import RepoSourceError

#: Settings that would change what git prints, pinned for every command.
GIT_CONFIG = (
    "-c", "color.ui=never", "-c", "core.quotePath=false", "-c", "diff.noprefix=false",
    "-c", "diff.mnemonicPrefix=false", "-c", "diff.relative=false", "-c", "log.showSignature=false",
    "-c", "diff.renames=false", "-c", "diff.suppressBlankEmpty=false", "-c", "diff.submodule=short",
    "-c", "diff.algorithm=myers", "-c", "diff.context=3", "-c", "diff.interHunkContext=0",
    "-c", "core.pager=cat",
)  # fmt: skip
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_PAGER": "cat",
    "LC_ALL": "C",
}
Folder = str | os.PathLike[str] | None


def git_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment git runs with (see the module docstring), plus `env`.

    >>> os.environ["GIT_DIR"] = "/elsewhere"
    >>> environment = git_environment({"GIT_INDEX_FILE": "/tmp/index"})
    >>> "GIT_DIR" in environment, environment["GIT_INDEX_FILE"], environment["GIT_CONFIG_NOSYSTEM"]
    (False, '/tmp/index', '1')
    >>> del os.environ["GIT_DIR"]
    """
    clean = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    return {**clean, **GIT_ENV, **(env or {})}


def run_git(
    cwd: Folder, *args: str, input: bytes | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """git `args` in `cwd` (None: the current folder), output captured as bytes; never raises for git's status."""
    return subprocess.run(
        ["git", *GIT_CONFIG, *args], cwd=cwd, input=input, capture_output=True, env=git_environment(env),
        check=False,
    )  # fmt: skip


def git_bytes(
    cwd: Folder,
    *args: str,
    input: bytes | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
) -> bytes:
    """git's stdout as bytes; a failure raises RepoSourceError with git's words (unless `check` is False)."""
    result = run_git(cwd, *args, input=input, env=env)
    if check and result.returncode != 0:
        where = f"{cwd}: " if cwd is not None else ""
        message = result.stderr.decode("utf-8", errors="replace").strip()[:500]
        raise RepoSourceError(f"{where}git {' '.join(args[:3])} failed: {message}")
    return result.stdout


def git(
    cwd: Folder, *args: str, input: str | bytes | None = None, env: Mapping[str, str] | None = None
) -> str:
    """git's stdout as text, read as Python's text mode reads it (UTF-8, undecodable bytes kept as surrogates,
    \\r\\n and \\r turned into \\n; `git_bytes` keeps the bytes); RepoSourceError on failure."""
    data = input.encode("utf-8", errors="surrogateescape") if isinstance(input, str) else input
    text = git_bytes(cwd, *args, input=data, env=env).decode("utf-8", errors="surrogateescape")
    return text.replace("\r\n", "\n").replace("\r", "\n")
