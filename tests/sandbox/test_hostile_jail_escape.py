"""Attempts to leave the jail: raised privileges (setuid binaries, capabilities), signals to host processes,
/proc links into the host's root, and writable device files.

Each test is named after its attack and runs in a real bwrap episode; a contained attack asserts what a user
would notice (the host process alive, the host file unread, the write refused).
"""

from __future__ import annotations

import subprocess
import time

from repogym.sandbox.bwrap import SANDBOX_UID


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
    # The reads ran: through /proc/self/root the host file's path is the jail's own, where nothing is.
    assert f"/proc/self/root{host_secret}: No such file or directory" in result.output, result.output
    assert "TOP-SECRET-HOST-VALUE" not in result.output
    assert "Permission denied" in result.output
    assert episode.run("test -e /etc/pwned && echo yes || echo no").output.strip() == "no"


def test_dev_is_not_writable_scratch_space(episode):
    # /dev/shm is writable on purpose (a private tmpfs per command): see test_hostile_env.py.
    result = episode.run("echo x > /dev/x 2>&1; mkdir /dev/mqueue/q 2>&1; ls /dev | wc -l")
    assert "Permission denied" in result.output
    assert episode.run("test -e /dev/x && echo yes || echo no").output.strip() == "no"
