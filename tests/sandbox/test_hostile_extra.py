"""More hostile commands against the bwrap sandbox.

Each test is named after its attack. Attacks that are contained assert what a user would notice (the host
file unchanged, the other episode untouched, the command refused). An attack that works today is marked
`xfail(strict=True, reason="HOLE: ...")`: the suite stays green, the hole stays visible, and the mark must
be removed (strict) the day the hole is closed.
"""

from __future__ import annotations

import contextlib
import hashlib
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest
from sandbox_support import plant_undeletable_tree

from repogym.sandbox import cgroups
from repogym.sandbox.base import Limits
from repogym.sandbox.bwrap import SANDBOX_UID

# -- host-side reads of paths the jail can plant ----------------------------------------------------

# A git clean filter in the jail's own ~/.gitconfig (HOME=/tmp/home is the episode's tmp). Episode.diff runs
# `git add -A` with it, so the filter runs inside the diff command and replaces $DIFF_DIR/patch with a link
# to a path the host will read. The jail creates that path in its own /tmp so the diff's redirect succeeds.
_DIFF_FILTER = """#!/bin/sh
mkdir -p {parent} 2>/dev/null
ln -sf {target} /opt/repogym/diff/patch 2>/dev/null
cat
"""


def test_diff_does_not_follow_links_planted_by_a_git_filter(episode, host_secret):
    """Was a hole at 4021a70: Episode.diff read scratch/patch with read_text(), following a link a git
    filter from the jail's ~/.gitconfig planted during `git add -A` (any host file under /tmp became the patch)."""
    episode.put_file("filter.sh", _DIFF_FILTER.format(parent=host_secret.parent, target=host_secret))
    setup = (
        "cp /opt/repogym/in/filter.sh /tmp/filter.sh && chmod +x /tmp/filter.sh && "
        "printf '* filter=evil\\n' > /tmp/attrs && "
        "git config --global core.attributesFile /tmp/attrs && "
        "git config --global filter.evil.clean /tmp/filter.sh && "
        "echo 'x = 1' >> src/calc/__init__.py"
    )
    assert episode.run(setup).exit_code == 0
    patch, _ = episode.diff()
    assert "TOP-SECRET-HOST-VALUE" not in patch
    assert "+x = 1" in patch or patch == ""


def test_diff_with_a_fifo_in_the_workspace_finishes(episode):
    result = episode.run("mkfifo pipe && mkfifo src/calc/pipe.py && echo 'x = 1' >> README.md")
    assert result.exit_code == 0, result.output
    started = time.monotonic()
    patch, run = episode.diff(limits=Limits(wall_s=20))
    assert time.monotonic() - started < 15
    assert run.ok and "+x = 1" in patch


def test_file_tool_result_link_does_not_show_a_host_file(episode, toy_task, tmp_path):
    """Was a hole at 4021a70: file_op read out/fileop-N.result.json (a predictable name) with read_text(),
    so a link planted there with bash showed a host file to the agent (a FIFO there hung the step)."""
    from repogym.env.options import EnvOptions
    from repogym.env.tools import ToolContext, install_fileops, view_file

    host_json = tmp_path / "host-settings.json"
    host_json.write_text('{"ok": true, "text": "TOP-SECRET-HOST-VALUE"}')
    install_fileops(episode)
    context = ToolContext(episode, toy_task, EnvOptions(tool_timeout_s=10))
    planted = episode.run(f"ln -s {host_json} /opt/repogym/out/fileop-0.result.json")
    assert planted.exit_code == 0
    output = view_file(context, "README.md")
    assert "TOP-SECRET-HOST-VALUE" not in output.text


@pytest.mark.xfail(
    strict=True,
    reason="HOLE (low; documented in bwrap.py since e556d02): /proc/self/mountinfo shows host paths (the "
    "cache root, the episode's folder, the pristine checkout) as bind sources and overlay options, which "
    "tells a jail where to aim anything the host might later read",
)
def test_mount_table_does_not_name_host_cache_paths(episode):
    from repogym.sandbox.cache import cache_root

    table = episode.run("cat /proc/self/mountinfo /proc/self/mounts").output
    assert str(cache_root()) not in table
    assert str(episode.layer.root) not in table


# -- other episodes ---------------------------------------------------------------------------------


def test_other_episode_files_are_invisible(toy_runtime):
    marker = f"MARKER-{uuid.uuid4().hex}"
    with toy_runtime.episode() as first, toy_runtime.episode() as second:
        wrote = first.run(
            f"echo {marker} > /tmp/m && echo {marker} > /testbed/m && echo {marker} > /opt/repogym/out/m"
        )
        assert wrote.exit_code == 0
        look = second.run(
            f"cat /tmp/m /testbed/m /opt/repogym/out/m {first.layer.root}/tmp/m {first.layer.root}/out/m; "
            f"ls {first.layer.root}; grep -rs {marker} /tmp /testbed /opt /root /etc | head -3",
            limits=Limits(wall_s=60),
        )
        assert marker not in look.output
        assert first.run("cat /tmp/m").output.strip() == marker


def test_user_keyring_is_not_shared_between_episodes(toy_runtime):
    """Was a hole at e556d02: every jail runs as one uid and keyrings are per uid, so a key added in one
    episode was read in the next. Closed by the seccomp filter in sandbox/seccomp.py."""
    name = f"repogym-{uuid.uuid4().hex[:12]}"
    script = (
        "import ctypes, sys\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "libc.syscall.restype = ctypes.c_long\n"
        "USER_KEYRING, ADD_KEY, KEYCTL = -4, 248, 250\n"
        "name = sys.argv[2].encode()\n"
        "if sys.argv[1] == 'put':\n"
        "    data = b'hidden-tests-of-the-grading-episode'\n"
        "    print('added', libc.syscall(ADD_KEY, b'user', name, data, len(data), USER_KEYRING))\n"
        "else:\n"
        "    key = libc.syscall(KEYCTL, 10, USER_KEYRING, b'user', name, 0)  # KEYCTL_SEARCH\n"
        "    buf = ctypes.create_string_buffer(256)\n"
        "    size = libc.syscall(KEYCTL, 11, key, buf, 256) if key > 0 else -1  # KEYCTL_READ\n"
        "    print('read', buf.raw[: max(size, 0)])\n"
        "    if key > 0 and sys.argv[1] == 'drop':\n"
        "        libc.syscall(KEYCTL, 3, key)  # KEYCTL_REVOKE: leave nothing on the machine\n"
    )
    with toy_runtime.episode() as writer:
        writer.put_file("keys.py", script)
        writer.run(f"python /opt/repogym/in/keys.py put {name}")
    with toy_runtime.episode() as reader:
        reader.put_file("keys.py", script)
        seen = reader.run(f"python /opt/repogym/in/keys.py get {name}").output
        reader.run(f"python /opt/repogym/in/keys.py drop {name}")
    assert "hidden-tests-of-the-grading-episode" not in seen


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


# -- the blob store under the pristine checkout -----------------------------------------------------


def _fingerprint(path: Path) -> tuple[str, int, int, int]:
    info = path.stat()
    return hashlib.sha256(path.read_bytes()).hexdigest(), info.st_mode, info.st_nlink, info.st_mtime_ns


_BLOB_ATTACKS = (
    "python -c \"import os; fd = os.open('src/calc/__init__.py', os.O_RDWR); os.write(fd, b'PWNED'); os.close(fd)\"; "
    "chmod 4777 src/calc/__init__.py; touch -d 2001-01-01 README.md; truncate -s 0 README.md; "
    "ln src/calc/__init__.py /testbed/hardlink.py && echo pwned >> /testbed/hardlink.py; "
    "ln src/calc/__init__.py /tmp/escape 2>&1; ln src/calc/__init__.py /opt/repogym/out/escape 2>&1; "
    "ln /opt/repogym/venv/bin/python /tmp/venv-link 2>&1; "
    "cp -a /opt/repogym/pristine-git /tmp 2>/dev/null; echo done"
)


def _assert_blob_attacks_contained(episode, pristine: Path) -> None:
    watched = [pristine / "src" / "calc" / "__init__.py", pristine / "README.md"]
    before = [_fingerprint(path) for path in watched]
    result = episode.run(_BLOB_ATTACKS)
    assert "done" in result.output
    assert result.output.count("Invalid cross-device link") >= 3, result.output
    assert [_fingerprint(path) for path in watched] == before
    assert "PWNED" in episode.run("cat src/calc/__init__.py").output  # the episode's own copy changed
    episode.reset()
    assert episode.run("cat src/calc/__init__.py").output.startswith("def add")


def test_in_place_writes_and_hardlinks_leave_blobs_intact_overlay(episode, toy_runtime):
    assert episode.layer.uses_overlay
    _assert_blob_attacks_contained(episode, toy_runtime.pristine)


def test_in_place_writes_and_hardlinks_leave_blobs_intact_copy_mode(toy_task, toy_runtime, monkeypatch):
    from repogym.sandbox.bwrap import BwrapSandbox
    from repogym.sandbox.runtime import TaskRuntime

    monkeypatch.setenv("REPOGYM_NO_OVERLAY", "1")
    runtime = TaskRuntime.create(toy_task, BwrapSandbox()).prepare()
    assert runtime.pristine == toy_runtime.pristine
    with runtime.episode() as episode:
        assert not episode.layer.uses_overlay
        assert episode.run("stat -c %h src/calc/__init__.py").output.strip() == "1"  # a copy, not a link
        _assert_blob_attacks_contained(episode, runtime.pristine)


# -- privileges, processes and devices --------------------------------------------------------------


def test_setuid_binaries_do_not_raise_privileges(episode):
    result = episode.run(
        "grep -E '^(NoNewPrivs|CapEff|CapBnd|CapPrm)' /proc/self/status; "
        "for b in /usr/bin/su /usr/bin/mount /usr/bin/newgrp /usr/bin/passwd; do "
        '  [ -u "$b" ] && echo "setuid: $b"; done; '
        "su root -c 'echo ROOT-SHELL' </dev/null 2>&1; "
        "python -c 'import os; os.setuid(0)' 2>&1 | tail -1; "
        "mount -t tmpfs none /testbed 2>&1 | head -1; "
        "cp /usr/bin/mount /tmp/m && chmod u+s /tmp/m && /tmp/m -t tmpfs x /testbed 2>&1 | head -1; id -u"
    )
    status = dict(line.split(":\t", 1) for line in result.output.splitlines() if ":\t" in line)
    assert status["NoNewPrivs"].strip() == "1"
    assert {status[k].strip() for k in ("CapEff", "CapBnd", "CapPrm")} == {"0000000000000000"}
    assert "ROOT-SHELL" not in result.output
    assert "PermissionError" in result.output
    assert result.output.strip().splitlines()[-1] == str(SANDBOX_UID)
    assert "tmpfs" not in episode.run("grep ' /testbed ' /proc/self/mounts").output


def test_signals_cannot_reach_host_processes(episode):
    victim = subprocess.Popen(["sleep", "30"])
    try:
        result = episode.run(
            f"kill -9 {victim.pid} 2>&1; kill -STOP {victim.pid} 2>&1; ls /proc | grep -c '^[0-9]'; "
            f"test -e /proc/{victim.pid} && echo VISIBLE"
        )
        time.sleep(0.2)
        assert victim.poll() is None  # still running, not stopped by the jail
        assert "VISIBLE" not in result.output
        assert int(result.output.split()[-1]) < 10  # only the jail's own few processes are visible
    finally:
        victim.kill()
        victim.wait()


def test_proc_links_of_pid1_and_self_root_do_not_reach_host(episode, host_secret):
    result = episode.run(
        f"for p in /proc/[0-9]*; do cat $p/root{host_secret} $p/cwd/../../{host_secret} 2>/dev/null; "
        f"ls $p/root/ 2>/dev/null | grep -c testbed; done; "
        f"cat /proc/self/root{host_secret} 2>&1; echo pwned > /proc/self/root/etc/pwned 2>&1; "
        "echo pwned > /proc/1/root/testbed/pwned 2>&1; ls /proc/1/cwd/ 2>&1 | head -1"
    )
    assert "TOP-SECRET-HOST-VALUE" not in result.output
    assert "Permission denied" in result.output
    assert episode.run("test -e /etc/pwned && echo yes || echo no").output.strip() == "no"


def test_dev_is_not_writable_scratch_space(episode):
    # /dev/shm is writable on purpose (a private tmpfs per command): see test_hostile_env.py.
    result = episode.run("echo x > /dev/x 2>&1; mkdir /dev/mqueue/q 2>&1; ls /dev | wc -l")
    assert "Permission denied" in result.output
    assert episode.run("test -e /dev/x && echo yes || echo no").output.strip() == "no"


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
