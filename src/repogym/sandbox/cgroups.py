"""A pids cgroup per running command, so that each command's process limit is its own.

Every jail runs as the same unprivileged uid, and RLIMIT_NPROC counts all the
processes of a uid on the machine: under it alone, one busy episode starves
the others. Where repogym can write a pids controller (root, with cgroup v1's
`pids` hierarchy, or cgroup v2 with pids enabled below repogym's own cgroup),
each running command holds a *slot*: a cgroup of its own with `pids.max`, that
nothing else runs in while the command does. The jail sees no cgroupfs, so it
cannot leave. Elsewhere `lease()` gives None and the sandbox falls back to
RLIMIT_NPROC, as before.

Moving a process into a cgroup waits for an RCU grace period (several ms on a
busy machine), which would be paid by every command. So with cgroup v1, where a
single thread can be moved, each slot has a launcher thread that moved itself
into the slot's cgroup once, and commands are forked from it: born inside,
never moved. With cgroup v2 (threads cannot be moved alone) the launcher shell
joins the cgroup before bwrap starts, and the move is paid per command.

A command's processes stay charged to its slot for a while after the command
returned: the kernel uncharges a task when it is released, and the tasks of a
torn-down pid namespace were measured still charged 1-2 s later (`pids.current`
above the launcher while `tasks` lists only it). A slot is leased again only
once it has drained; until then a new slot is made, so the next command's limit
is never eaten by the last one's exiting processes.

Written by hand: the few files a pids cgroup needs do not justify a dependency
(libcgroup's Python bindings want a system library).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import itertools
import os
import queue
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

#: Tasks in a slot besides the command's own: bwrap, its pid 1, and the slot's launcher thread.
LAUNCHER_PROCESSES = 3

_T = TypeVar("_T")
_counter = itertools.count()
_free: list[Slot] = []
_all: list[Slot] = []
_lock = threading.Lock()


class Slot:
    """A cgroup that one running command has to itself (see the module docstring)."""

    def __init__(self, path: Path, threaded: bool) -> None:
        self.path = path
        self.threaded = threaded
        """True: `spawn()` forks from a thread that lives in the cgroup; False: the launcher must join it."""
        self._calls: queue.SimpleQueue[tuple[Callable[[], Any], list[Any], threading.Event] | None] = (
            queue.SimpleQueue()
        )
        self._thread: threading.Thread | None = None
        if threaded:
            started, failed = threading.Event(), []
            self._thread = threading.Thread(
                target=self._serve, args=(started, failed), name=f"repogym-{path.name}", daemon=True
            )
            self._thread.start()
            started.wait()
            if failed:
                raise failed[0]

    def spawn(self, start: Callable[[], _T]) -> _T:
        """Run `start` (a Popen) on the slot's thread, so the child is born in the cgroup."""
        if self._thread is None:
            return start()
        box: list[Any] = []
        done = threading.Event()
        self._calls.put((start, box, done))
        done.wait()
        ok, value = box[0]
        if ok:
            return value
        raise value

    def charged(self) -> int:
        """Tasks charged to the cgroup besides the launcher thread (exiting ones included)."""
        try:
            current = int((self.path / "pids.current").read_text())
        except (OSError, ValueError):
            return 0
        return current - (1 if self._thread is not None else 0)

    def limit(self, processes: int) -> None:
        (self.path / "pids.max").write_text(str(processes + LAUNCHER_PROCESSES))

    def close(self) -> None:
        if self._thread is not None:
            self._calls.put(None)
            self._thread.join(timeout=5)
        with contextlib.suppress(OSError):
            self.path.rmdir()

    def _serve(self, started: threading.Event, failed: list[BaseException]) -> None:
        try:
            (self.path / "tasks").write_text(str(threading.get_native_id()))
        except OSError as exc:
            failed.append(exc)
            started.set()
            return
        started.set()
        while (item := self._calls.get()) is not None:
            start, box, done = item
            try:
                box.append((True, start()))
            except BaseException as exc:  # handed to the caller's thread
                box.append((False, exc))
            done.set()


@contextlib.contextmanager
def lease(processes: int) -> Iterator[Slot | None]:
    """A slot limited to `processes` processes and threads for one command; None where cgroups are not
    writable (then only RLIMIT_NPROC limits processes)."""
    slot = _take()
    if slot is not None:
        try:
            slot.limit(processes)
        except OSError:
            _discard(slot)
            slot = None
    try:
        yield slot
    finally:
        if slot is not None:
            with _lock:
                _free.append(slot)


def available() -> bool:
    return parent() is not None


@functools.cache
def parent() -> Path | None:
    """The writable cgroup folder that slots are made in, or None."""
    if os.environ.get("REPOGYM_NO_CGROUP", "") not in ("", "0") or os.geteuid() != 0:
        return None
    base = _own_pids_cgroup()
    if base is None:
        return None
    probe = base / f"repogym-probe-{os.getpid()}"
    try:
        probe.mkdir(exist_ok=True)
        (probe / "pids.max").write_text("8")
    except OSError:
        return None
    finally:
        with contextlib.suppress(OSError):
            probe.rmdir()
    _remove_stale(base)
    atexit.register(_close_all)
    return base


def _take() -> Slot | None:
    with _lock:
        for index in range(len(_free) - 1, -1, -1):
            if _free[index].charged() <= 0:
                return _free.pop(index)
    base = parent()
    if base is None:
        return None
    path = base / f"repogym-{os.getpid()}-{next(_counter)}"
    try:
        path.mkdir()
        slot = Slot(path, threaded=(path / "tasks").exists() and _threads_allowed())
    except OSError:
        with contextlib.suppress(OSError):
            path.rmdir()
        return None
    with _lock:
        _all.append(slot)
    return slot


def _threads_allowed() -> bool:
    """cgroup v1 moves single threads (its `tasks` file); REPOGYM_CGROUP_JOIN=1 forces the v2 way."""
    return os.environ.get("REPOGYM_CGROUP_JOIN", "") in ("", "0")


def _discard(slot: Slot) -> None:
    with _lock:
        if slot in _all:
            _all.remove(slot)
    slot.close()


def _close_all() -> None:
    with _lock:
        slots, _all[:], _free[:] = list(_all), [], []
    for slot in slots:
        slot.close()


def _own_pids_cgroup() -> Path | None:
    """The folder of this process's cgroup in a hierarchy with the pids controller."""
    try:
        memberships = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    v1, v2 = None, None
    for line in mounts:
        if " - " not in line:
            continue
        fields, after = line.split(" - ", 1)[0].split(), line.split(" - ", 1)[1].split()
        fstype, superopts = after[0], after[2] if len(after) > 2 else ""
        if fstype == "cgroup" and "pids" in superopts.split(","):
            v1 = (fields[3], fields[4])
        elif fstype == "cgroup2":
            v2 = (fields[3], fields[4])
    for line in memberships:
        hierarchy, controllers, path = line.split(":", 2)
        if "pids" in controllers.split(",") and v1 is not None:
            return _join(*v1, path)
        if hierarchy == "0" and v2 is not None and v1 is None:
            base = _join(*v2, path)
            if base is not None and _v2_has_pids(base):
                return base
    return None


def _join(root: str, mountpoint: str, path: str) -> Path | None:
    if not (path == root or path.startswith(root.rstrip("/") + "/")):
        return None  # our cgroup is not under the mounted part of the hierarchy
    return Path(mountpoint) / path[len(root.rstrip("/")) :].lstrip("/")


def _v2_has_pids(base: Path) -> bool:
    try:
        return "pids" in (base / "cgroup.subtree_control").read_text().split()
    except OSError:
        return False


def _remove_stale(base: Path) -> None:
    """Slots left by repogym processes that died (empty once their commands are gone)."""
    for path in base.glob("repogym-*-*"):
        owner = path.name.split("-")[1]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            with contextlib.suppress(OSError):
                path.rmdir()
