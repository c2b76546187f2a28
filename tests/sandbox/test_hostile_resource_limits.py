"""Attacks on the jail's resource limits: processes, threads and CPU time one command may use, limits one
episode could take from another, and what a command leaves that its episode's deletion must still remove.

Each test is named after its attack and runs in a real bwrap episode. An attack that works today is marked
`xfail(strict=True, reason="HOLE: ...")`: the suite stays green, the hole stays visible, and the mark must
be removed (strict) the day the hole is closed.
"""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

import pytest

from repogym.sandbox import cgroups
from repogym.sandbox.base import Limits
from repogym.sandbox.bwrap import SANDBOX_UID

from ..support.sandbox import plant_undeletable_tree


def _sandbox_processes() -> int:
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                count += entry.stat().st_uid == SANDBOX_UID
    return count


@pytest.mark.xfail(
    not cgroups.available(),
    strict=True,
    reason="HOLE where no pids cgroup can be written (not root, or no pids controller): RLIMIT_NPROC counts "
    "every process of SANDBOX_UID on the machine, shared by all concurrent jails: an episode within its own "
    "limit starves another of processes (wrong grades under -j N)",
)
def test_process_limit_is_per_episode(toy_runtime):
    limits = Limits(processes=64, wall_s=20)
    # 56 sleeping children, within the hog's own limit of 64; they live until the host drops out/stop.
    hog = (
        "import os, time\n"
        "for _ in range(56):\n"
        "    try:\n"
        "        pid = os.fork()\n"
        "    except OSError:\n"
        "        break\n"
        "    if pid == 0:\n"
        "        time.sleep(30)\n"
        "        os._exit(0)\n"
        "while not os.path.exists('/opt/repogym/out/stop'):\n"
        "    time.sleep(0.05)\n"
    )
    with toy_runtime.episode() as greedy, toy_runtime.episode() as victim:
        greedy.put_file("hog.py", hog)
        thread = threading.Thread(
            target=greedy.run, args=("python /opt/repogym/in/hog.py",), kwargs={"limits": limits}
        )
        thread.start()
        try:
            deadline = time.monotonic() + 10
            while _sandbox_processes() < 56 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert _sandbox_processes() >= 56, "the hog did not start its processes"
            # Nine processes at once: far inside the victim's own limit of 64.
            result = victim.run(
                "for i in 1 2 3 4 5 6 7 8; do sleep 0.3 & done; wait; echo done", limits=limits
            )
        finally:
            (greedy.layer.out / "stop").touch()
            thread.join()
    assert result.exit_code == 0 and "done" in result.output, result.output


@pytest.mark.skipif(not cgroups.available(), reason="no writable pids cgroup: RLIMIT_NPROC is the only limit")
def test_exiting_processes_of_the_last_command_do_not_shrink_the_next_commands_limit(toy_runtime):
    """A fork bomb that exits: its processes stay charged to their cgroup for a second or two after the
    command returned, and a command leased that cgroup straight after could fork fewer than its limit."""
    forks = (
        "import os, time\n"
        "n = 0\n"
        "for _ in range(40):\n"
        "    try:\n"
        "        pid = os.fork()\n"
        "    except OSError:\n"
        "        break\n"
        "    if pid == 0:\n"
        "        time.sleep(10)\n"
        "        os._exit(0)\n"
        "    n += 1\n"
        "print('forked', n)\n"
    )
    limits = Limits(processes=16, wall_s=20)
    with toy_runtime.episode() as episode:
        episode.put_file("forks.py", forks)
        time.sleep(3)  # every slot drained: the first count is the limit's full share
        counts = [episode.run("python /opt/repogym/in/forks.py", limits=limits).output for _ in range(3)]
    assert "forked" in counts[0] and 8 <= int(counts[0].split()[-1]) < 16, counts
    assert counts[1] == counts[2] == counts[0], counts


def test_threads_do_not_bypass_cpu_and_process_limits(episode):
    busy = (
        "import threading\n"
        "def spin():\n"
        "    while True: pass\n"
        "for _ in range(4): threading.Thread(target=spin, daemon=True).start()\n"
        "spin()\n"
    )
    episode.put_file("busy.py", busy)
    started = time.monotonic()
    result = episode.run("python /opt/repogym/in/busy.py", limits=Limits(cpu_s=1, wall_s=30))
    assert time.monotonic() - started < 10  # CPU time of all threads counts against one RLIMIT_CPU
    assert result.exit_code != 0 and not result.timed_out
    bomb = (
        "import threading, time\nn = 0\ntry:\n    for _ in range(2000):\n"
        "        threading.Thread(target=time.sleep, args=(5,), daemon=True).start(); n += 1\n"
        "except RuntimeError as exc:\n    print('stopped at', n, exc)\n"
    )
    episode.put_file("threads.py", bomb)
    result = episode.run("python /opt/repogym/in/threads.py", limits=Limits(processes=64, wall_s=30))
    assert "stopped at" in result.output, result.output
    assert int(result.output.split("stopped at")[1].split()[0]) < 64


def test_many_files_and_locked_folders_are_removed_on_close(toy_runtime):
    with toy_runtime.episode() as episode:
        root = episode.layer.root
        plant_undeletable_tree(episode, 3000)
    deadline = time.monotonic() + 20
    leftovers = [root]
    while leftovers and time.monotonic() < deadline:
        time.sleep(0.1)
        # close() renames the episode into a .discarded-* folder and deletes that in the background.
        leftovers = [root, *root.parent.glob(f".discarded-*/{root.name}")]
        leftovers = [p for p in leftovers if p.exists()]
    assert not leftovers
