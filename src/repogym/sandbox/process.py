"""Run a process with a wall-clock limit, capped output, and a kill that takes the whole tree.

Shared by every backend so that timeouts and output caps behave the same
under `bwrap` and `local`.

Guarantees: the result's `output` holds at most `Limits.output_bytes` (head and tail, the cut marked);
with `Limits.keep_whole_output`, a longer output is also streamed whole to a host file as it comes
(`ExecResult.whole_output`), bounded by `output_kill_bytes` like the command itself.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

from repogym.sandbox.base import Checkpoint, ExecResult, ExitReason, Limits, WholeOutput

_MARKER = "\n[... repogym: {omitted} bytes of output omitted ...]\n"


class _CappedBuffer:
    """Keeps the first and last halves of a stream of bytes; with `whole`, all of it in a file once it is
    longer than that (the file gets what came before, then every chunk as it comes)."""

    def __init__(self, keep: int, whole: bool = False) -> None:
        self.head_limit = keep // 2
        self.tail_limit = keep - self.head_limit
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.whole = whole
        self.file: IO[bytes] | None = None
        self.kept: WholeOutput | None = None
        """Made with the file, so an exception that ends the run early still deletes it (with this buffer)."""

    def add(self, chunk: bytes) -> None:
        if self.whole and self.file is None and self.total + len(chunk) > self.head_limit + self.tail_limit:
            # Nothing was dropped yet: head and tail hold every byte before this chunk.
            fd, path = tempfile.mkstemp(prefix="repogym-output-", suffix=".log")
            self.kept = WholeOutput(Path(path))
            self.file = os.fdopen(fd, "wb")
            self.file.write(bytes(self.head) + bytes(self.tail))
        if self.file is not None:
            self.file.write(chunk)
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]

    def text(self) -> tuple[str, bool]:
        kept = len(self.head) + len(self.tail)
        truncated = self.total > kept
        middle = _MARKER.format(omitted=self.total - kept).encode() if truncated else b""
        return (bytes(self.head) + middle + bytes(self.tail)).decode("utf-8", errors="replace"), truncated

    def whole_output(self) -> WholeOutput | None:
        """The file of the whole output, closed (None when the output was never longer than what is kept)."""
        if self.file is not None:
            self.file.close()
        return self.kept


class _Pause:
    """A checkpoint's side of the output: holds what comes before its marker's line, answers it once."""

    def __init__(self, checkpoint: Checkpoint, stdin: IO[bytes], keep: int) -> None:
        self.checkpoint = checkpoint
        self.line = b"\n" + checkpoint.marker.encode() + b"\n"
        self.stdin: IO[bytes] | None = stdin
        self.before = bytearray()
        self.keep = keep
        self.done = False

    def feed(self, chunk: bytes) -> bytes:
        """The part of `chunk` that belongs to the result: nothing until the marker's line has come."""
        if self.done:
            return chunk
        self.before += chunk
        at = self.before.find(self.line)
        if at < 0:
            if len(self.before) <= self.keep:
                return b""
            # No marker within what a result keeps: as if there were none (the command reads EOF and stops).
            self.close()
            return bytes(self.before)
        self.done = True
        after = bytes(self.before[at + len(self.line) :])
        answer = self.checkpoint.decide(bytes(self.before[:at]).decode("utf-8", errors="replace"))
        with contextlib.suppress(OSError):  # the command may be gone already
            assert self.stdin is not None
            self.stdin.write(answer.encode())
            self.stdin.flush()
        self.close()
        return after

    def leftover(self) -> bytes:
        """At the end: the output held back when the marker never came (the result gets all of it)."""
        held = b"" if self.done else bytes(self.before)
        self.close()
        return held

    def close(self) -> None:
        self.done = True
        if self.stdin is not None:
            with contextlib.suppress(OSError):
                self.stdin.close()
            self.stdin = None


def run_process(
    argv: Sequence[str],
    limits: Limits,
    *,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    preexec_fn: Callable[[], None] | None = None,
    pass_fds: Sequence[int] = (),
    spawn: Callable[[Callable[[], subprocess.Popen[bytes]]], subprocess.Popen[bytes]] | None = None,
    checkpoint: Checkpoint | None = None,
) -> ExecResult:
    """Run `argv` in its own process group; kill the group on timeout or runaway output.

    `spawn`: runs the Popen where the child must be born (a cgroup slot's thread, see cgroups.py).
    `checkpoint`: stdin is a pipe answered once, when the marker's line comes (see `Checkpoint`); the
    wall-clock limit counts the time `decide` takes.
    """
    started = time.monotonic()

    # No Python code runs between fork and exec unless a backend asks for it (local's rlimits):
    # preexec_fn is unsafe with threads, and grading runs many sandboxes from a thread pool.
    # bwrap's --die-with-parent takes the jail down if repogym dies.
    def start() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE if checkpoint is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            preexec_fn=preexec_fn,  # only the local backend sets one (its rlimits)
            start_new_session=True,
            close_fds=True,
            pass_fds=tuple(pass_fds),
        )

    process = spawn(start) if spawn is not None else start()
    buffer = _CappedBuffer(limits.output_bytes, limits.keep_whole_output)
    reason = ExitReason.EXITED
    assert process.stdout is not None
    pause = _Pause(checkpoint, process.stdin, limits.output_bytes) if checkpoint and process.stdin else None
    stream = process.stdout

    def take(chunk: bytes) -> None:
        buffer.add(pause.feed(chunk) if pause is not None else chunk)

    os.set_blocking(stream.fileno(), False)
    selector = selectors.DefaultSelector()
    selector.register(stream, selectors.EVENT_READ)
    deadline = started + limits.wall_s
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                reason = ExitReason.TIMEOUT
                break
            if not selector.select(timeout=min(remaining, 0.5)):
                if process.poll() is not None and _drained(stream, take):
                    break
                continue
            chunk = stream.read(65536)
            if chunk is None:
                continue
            if not chunk:
                break  # EOF: every writer (including daemons holding the pipe) is gone
            take(chunk)
            if buffer.total > limits.output_kill_bytes:
                reason = ExitReason.OUTPUT_LIMIT
                break
    finally:
        selector.close()
        # Always: a daemon left in the group (local backend) must not outlive the command. Before the pause's
        # stdin closes: a command waiting for an answer that never came must not read EOF and go on.
        _kill_group(process)
        if pause is not None:
            buffer.add(pause.leftover())
        exit_code = process.wait()
        stream.close()
    text, truncated = buffer.text()
    notes: list[str] = []
    if reason is ExitReason.TIMEOUT:
        notes.append(f"killed after the wall-clock limit of {limits.wall_s:g}s")
        text += f"\n[repogym: killed after the wall-clock limit of {limits.wall_s:g}s]\n"
    elif reason is ExitReason.OUTPUT_LIMIT:
        notes.append(f"killed after {limits.output_kill_bytes} bytes of output")
        text += f"\n[repogym: killed after {limits.output_kill_bytes} bytes of output]\n"
    elif exit_code < 0:
        reason = ExitReason.SIGNALED
        notes.append(f"terminated by signal {signal.Signals(-exit_code).name}")
    return ExecResult(
        exit_code=None if reason in (ExitReason.TIMEOUT, ExitReason.OUTPUT_LIMIT) else exit_code,
        output=text,
        duration_s=time.monotonic() - started,
        reason=reason,
        output_truncated=truncated,
        output_total_bytes=buffer.total,
        notes=tuple(notes),
        whole_output=buffer.whole_output(),
    )


def _drained(stream, take: Callable[[bytes], None]) -> bool:
    chunk = stream.read(65536)
    if chunk:
        take(chunk)
        return False
    return True


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
