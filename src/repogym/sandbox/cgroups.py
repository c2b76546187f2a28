"""A pids cgroup per jailed command, so that each command's process limit is its own.

Every jail runs as the same unprivileged uid, and RLIMIT_NPROC counts all the
processes of a uid on the machine: under it alone, one busy episode starves
the others. Where repogym can write a pids controller (root with cgroup v1's
`pids` hierarchy, or cgroup v2 with pids enabled below repogym's own cgroup),
each command gets a child cgroup of its own with `pids.max`, joined by the
launcher shell before bwrap starts, so nothing in the jail runs outside it
(the jail sees no cgroupfs, so it cannot leave). Elsewhere `available()` is
False and the sandbox falls back to RLIMIT_NPROC, as before.

Written by hand: the two files and one folder a pids cgroup needs do not
justify a dependency (libcgroup's Python bindings want a system library).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import threading
import time
from pathlib import Path

#: Processes of the launcher that live in the cgroup besides the command's own: bwrap and its pid 1.
LAUNCHER_PROCESSES = 2

_counter = itertools.count()
_leftovers: list[Path] = []
_leftovers_lock = threading.Lock()


@functools.cache
def parent() -> Path | None:
    """The writable cgroup folder that per-command cgroups are made in, or None (then RLIMIT_NPROC only)."""
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
    return base


def available() -> bool:
    return parent() is not None


def create(processes: int) -> Path | None:
    """A fresh cgroup allowing `processes` processes and threads (plus the launcher's); None if it fails."""
    base = parent()
    if base is None:
        return None
    _retry_leftovers()
    path = base / f"repogym-{os.getpid()}-{next(_counter)}"
    try:
        path.mkdir()
        (path / "pids.max").write_text(str(processes + LAUNCHER_PROCESSES))
    except OSError:
        remove(path)
        return None
    return path


def remove(path: Path) -> None:
    """Delete a command's cgroup; killed processes can take a moment to be reaped, so retry briefly."""
    for _ in range(20):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.005)
    with _leftovers_lock:
        _leftovers.append(path)  # tried again before the next command


def _retry_leftovers() -> None:
    with _leftovers_lock:
        pending, _leftovers[:] = list(_leftovers), []
    for path in pending:
        try:
            path.rmdir()
        except FileNotFoundError:
            pass
        except OSError:
            with _leftovers_lock:
                _leftovers.append(path)


def _own_pids_cgroup() -> Path | None:
    """The folder of this process's cgroup in a hierarchy with the pids controller."""
    try:
        memberships = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    v1 = {}
    v2 = None
    for line in mounts:
        fields = line.split()
        if " - " not in line:
            continue
        after = line.split(" - ", 1)[1].split()
        fstype, superopts = after[0], after[2] if len(after) > 2 else ""
        root, mountpoint = fields[3], fields[4]
        if fstype == "cgroup" and "pids" in superopts.split(","):
            v1["pids"] = (root, mountpoint)
        elif fstype == "cgroup2":
            v2 = (root, mountpoint)
    for line in memberships:
        hierarchy, controllers, path = line.split(":", 2)
        if "pids" in controllers.split(",") and "pids" in v1:
            return _join(*v1["pids"], path)
        if hierarchy == "0" and v2 is not None and not v1:
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
    """Cgroups left by repogym processes that died (empty once their commands are gone)."""
    for path in base.glob("repogym-*-*"):
        owner = path.name.split("-")[1]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            with contextlib.suppress(OSError):
                path.rmdir()
