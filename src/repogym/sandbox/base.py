"""The Sandbox seam: run a shell command in an episode's workspace, with limits.

A backend turns a `Mounts` description (what the command may see) plus
`Limits` into a process and returns an `ExecResult`. A command that fails is
data (`exit_code != 0`, `timed_out`, `output_truncated`), never an exception;
exceptions are for an unusable sandbox.
"""

from __future__ import annotations

import contextlib
import enum
import math
import os
import stat
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

#: Where things live inside the jail (fixed, so environments built once work in every episode).
REPO_DIR = "/testbed"
VENV_DIR = "/opt/repogym/venv"
PLUGIN_DIR = "/opt/repogym/plugins"
OUT_DIR = "/opt/repogym/out"
TMP_DIR = "/tmp"
HOME_DIR = "/tmp/home"


class Limits(BaseModel):
    """Resource limits applied to every command; each limit kills the whole process tree."""

    # No use_attribute_docstrings: pydantic would read this module's source through inspect to copy the
    # docstrings below into field descriptions (20-45 ms of every `repogym grade`'s start-up, issue 10),
    # and nothing reads Limits' descriptions; the docstrings stay where they are, as the fields' documentation.
    model_config = ConfigDict(extra="forbid", frozen=True)

    wall_s: float = Field(default=600.0, gt=0)
    """Wall-clock seconds before the command's process tree is killed."""
    cpu_s: int = Field(default=900, ge=1)
    """CPU seconds per process (RLIMIT_CPU)."""
    memory_mb: int = Field(default=4096, ge=64)
    """Address-space limit per process in MiB (RLIMIT_AS)."""
    processes: int = Field(default=512, ge=8)
    """Processes and threads of one command: stops fork bombs. Counted per command (a pids cgroup) where
    repogym can write the pids cgroup controller (root on most machines); elsewhere it is RLIMIT_NPROC of
    the sandbox uid, which sandboxes running at once share: then raise it with the number of workers."""
    file_size_mb: int = Field(default=512, ge=1)
    """Largest file a command may write, in MiB (RLIMIT_FSIZE)."""
    output_bytes: int = Field(default=256 * 1024, ge=1024)
    """Bytes of output kept (head and tail halves; the middle is replaced by a marker)."""
    keep_whole_output: bool = False
    """Also keep the whole output, up to `output_kill_bytes`, in a host file when it is longer than
    `output_bytes` (`ExecResult.whole_output`): for test runs, whose saved logs are read again by log
    parsers (SWE-bench's re-read a log for PASSED lines that a cut middle would lose)."""
    output_kill_bytes: int = Field(default=64 * 1024 * 1024, ge=1024)
    """Total output after which the command is killed as runaway."""
    open_files: int = Field(default=1024, ge=64)
    """Open file descriptors per process (RLIMIT_NOFILE)."""
    shm_mb: int = Field(default=64, ge=1)
    """Size of the command's private /dev/shm in MiB (what multiprocessing's locks, queues and shared
    memory live in; Docker's default is 64). Not counted in memory_mb."""

    @classmethod
    def for_timeout(cls, wall_s: float) -> Limits:
        """`wall_s` of wall time per command and a CPU limit per process no tighter than that: the 900 s
        default would end a long single-threaded test run before its wall limit (sympy's slowest SWE-bench
        Lite runs take over 25 minutes; SWE-bench's harness limits only the wall time)."""
        return cls().with_timeout(wall_s)

    def with_timeout(self, wall_s: float) -> Limits:
        """These limits with `wall_s` of wall time and the CPU limit raised to match where it was tighter.

        >>> limits = Limits(cpu_s=900, memory_mb=512).with_timeout(1200.5)
        >>> limits.wall_s, limits.cpu_s, limits.memory_mb
        (1200.5, 1201, 512)
        """
        return self.model_copy(update={"wall_s": float(wall_s), "cpu_s": max(self.cpu_s, math.ceil(wall_s))})


@dataclass(frozen=True)
class Bind:
    """A host path made visible in the jail."""

    host: Path
    jail: str
    writable: bool = False


@dataclass(frozen=True)
class Mounts:
    """What one command sees: the workspace at REPO_DIR, the env, extra binds, a private tmp."""

    workspace: Path
    """Host folder (or overlay upper/lower pair, see Layer) shown read-write at REPO_DIR."""
    tmp: Path
    """Host folder shown read-write at /tmp (private to the episode)."""
    venv: Path | None = None
    """Host folder shown at VENV_DIR (read-only unless `venv_writable`); see `venv_overlay`."""
    interpreter_prefix: Path | None = None
    """The Python installation the venv points at, shown read-only at the same path."""
    extra: tuple[Bind, ...] = ()
    network: bool = False
    """Environment builds get the network; agent commands never do, and a test run only when the grader opts
    in (`grade(allow_network=True)`, `repogym grade --allow-network`: imported tasks whose tests call out)."""
    overlay: OverlaySpec | None = None
    """The workspace as an overlay (its `merged` is shown at REPO_DIR); None = `workspace` itself."""
    venv_overlay: OverlaySpec | None = None
    """The venv as an overlay (its `merged` is shown at VENV_DIR instead of `venv`): per-commit install
    layers over the shared venv, and a private upper where an episode may write it."""
    venv_writable: bool = False
    """Show the venv read-write (environment builds, and the grader's re-install in its own layer)."""


@dataclass(frozen=True)
class OverlaySpec:
    """An overlayfs mount: `lowers` read-only and shared (top first), `upper`/`work` private to the episode.

    Without `upper` the mount is read-only (overlayfs then needs two lowers or more).
    """

    lowers: tuple[Path, ...]
    upper: Path | None
    work: Path | None
    merged: Path

    def options(self) -> str:
        """The `mount -o` string.

        >>> OverlaySpec((Path("/c/a"), Path("/c/b")), None, None, Path("/m")).options()
        'lowerdir=/c/a:/c/b'
        """
        text = "lowerdir=" + ":".join(str(path) for path in self.lowers)
        if self.upper is not None and self.work is not None:
            text += f",upperdir={self.upper},workdir={self.work}"
        return text


@dataclass(frozen=True)
class Checkpoint:
    """A pause inside one command, for a decision the host makes between two of its steps.

    The command's stdin is then a pipe from the host that holds nothing until the command prints `marker` on
    a line of its own (preceded by a newline); the output before that line is handed to `decide`, and what
    `decide` returns is written to the command's stdin, which is then closed. The command reads it (e.g.
    `read -r answer`) and goes on or stops. The `ExecResult` of such a command holds only what came after
    the marker's line; the output before it reaches the host through `decide` alone. When the marker never
    comes, `decide` is never called and the result holds the whole output.

    What it is for: one sandbox start where a grade needs two (apply and check, then test), with the check
    made by the host while nothing of the candidate has run yet. The marker must be unguessable by what
    runs before it, and whatever runs after it must not be trusted to print anything the host reads.
    """

    marker: str
    decide: Callable[[str], str]


class ExitReason(enum.StrEnum):
    EXITED = "exited"
    TIMEOUT = "timeout"
    OUTPUT_LIMIT = "output_limit"
    SIGNALED = "signaled"


class WholeOutput:
    """A host file holding a command's whole output (`Limits.keep_whole_output`), deleted once nothing
    refers to this object any more (every result that holds it is gone, or the process ends)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        weakref.finalize(self, _remove_file, str(path))

    def read_bytes(self) -> bytes:
        return self.path.read_bytes()

    def __repr__(self) -> str:
        return f"WholeOutput({str(self.path)!r})"


def _remove_file(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


@dataclass(frozen=True)
class ExecResult:
    """What a command produced."""

    exit_code: int | None
    """None when the process was killed by repogym (timeout, output limit)."""
    output: str
    """stdout and stderr interleaved, capped at Limits.output_bytes with a truncation marker."""
    duration_s: float
    reason: ExitReason = ExitReason.EXITED
    output_truncated: bool = False
    output_total_bytes: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)
    whole_output: WholeOutput | None = None
    """When `output` was cut and `Limits.keep_whole_output` was set: all of it (up to the kill limit), in a
    host file that lives as long as this result; copy it to keep it. None when `output` is whole."""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @property
    def timed_out(self) -> bool:
        return self.reason is ExitReason.TIMEOUT


class Sandbox(Protocol):
    """A backend that runs commands under `Mounts` and `Limits`."""

    name: str
    isolated: bool
    """False for backends that protect nothing (local)."""
    supports_overlay: bool
    """True when the backend mounts `Mounts.overlay` itself; else episodes get a private copy."""

    def run(
        self,
        command: str,
        mounts: Mounts,
        limits: Limits,
        *,
        cwd: str = REPO_DIR,
        env: dict[str, str] | None = None,
        checkpoint: Checkpoint | None = None,
    ) -> ExecResult:
        """Run `command` with `sh -c`; `env` adds variables to the clean environment; `checkpoint` pauses
        it for a decision of the host (see `Checkpoint`; stdin is /dev/null without one)."""
        ...


def read_jail_file(path: Path, max_bytes: int = 64 * 1024 * 1024) -> str | None:
    """Read a file the jail could have written, as repogym on the host: never through a link, never
    from a FIFO or device, never more than `max_bytes`. None when it is missing or not a plain file.

    Every host-side read of a jail-writable folder (out/, the diff scratch folder) goes through here:
    a plain `read_text()` would follow a link the jail planted to any host file.
    """

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:  # missing, a link (ELOOP), or unreadable
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        return None
    return data.decode("utf-8", errors="replace")


def plugin_binds(plugin_dir: Path | None) -> tuple[Bind, ...]:
    """The read-only bind that shows a folder of test-runner plugins at PLUGIN_DIR (none for None).

    The caller that runs a test command hands these to `Episode.run(binds=...)`; the sandbox itself
    knows nothing of test frameworks.
    """
    return () if plugin_dir is None else (Bind(plugin_dir, PLUGIN_DIR),)
