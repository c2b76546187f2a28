"""Attacks from one episode on another: files and kernel state (the keyring) one jail leaves for the next or
for a concurrent one, which could carry a grading episode's hidden tests to the agent's.

Each test is named after its attack and runs two real bwrap episodes of the toy task.
"""

from __future__ import annotations

import platform
import uuid

import pytest

from repogym.sandbox.base import Limits


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
        assert "cat: /tmp/m: No such file or directory" in look.output, look.output  # the look ran
        assert marker not in look.output
        assert first.run("cat /tmp/m").output.strip() == marker


# add_key and keyctl, per machine (sandbox/seccomp.py's table): a wrong number would fail with another errno.
_KEY_CALLS = {"x86_64": (248, 250), "aarch64": (217, 219)}
_MACHINE = platform.machine()
_KEYS = (
    "import ctypes, errno, sys\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "libc.syscall.restype = ctypes.c_long\n"
    "ADD_KEY, KEYCTL = {numbers}\n"
    "USER_KEYRING = -4\n"
    "def call(label, *args):\n"
    "    result = libc.syscall(*args)\n"
    "    print(label, result, errno.errorcode.get(ctypes.get_errno(), '') if result < 0 else 'ok')\n"
    "    return result\n"
    "name = sys.argv[2].encode()\n"
    "if sys.argv[1] == 'put':\n"
    "    data = b'hidden-tests-of-the-grading-episode'\n"
    "    call('add_key', ADD_KEY, b'user', name, data, len(data), USER_KEYRING)\n"
    "else:\n"
    "    key = call('search', KEYCTL, 10, USER_KEYRING, b'user', name, 0)  # KEYCTL_SEARCH\n"
    "    if key > 0:\n"
    "        buf = ctypes.create_string_buffer(256)\n"
    "        size = libc.syscall(KEYCTL, 11, key, buf, 256)  # KEYCTL_READ\n"
    "        print('read', buf.raw[: max(size, 0)])\n"
    "        libc.syscall(KEYCTL, 3, key)  # KEYCTL_REVOKE: leave nothing on the machine\n"
)


@pytest.mark.skipif(
    _MACHINE not in _KEY_CALLS, reason=f"no seccomp filter on {_MACHINE} (see sandbox/bwrap.py)"
)
def test_user_keyring_is_not_shared_between_episodes(toy_runtime):
    """Was a hole at e556d02: every jail runs as one uid and keyrings are per uid, so a key added in one
    episode was read in the next. Closed by the seccomp filter in sandbox/seccomp.py: the writer's add_key
    and the reader's keyctl fail with EPERM (the filter's answer; a wrong call number would fail otherwise),
    so no key is ever added, and none is read."""
    name = f"repogym-{uuid.uuid4().hex[:12]}"
    script = _KEYS.format(numbers=_KEY_CALLS[_MACHINE])
    with toy_runtime.episode() as writer:
        writer.put_file("keys.py", script)
        added = writer.run(f"python /opt/repogym/in/keys.py put {name}")
    with toy_runtime.episode() as reader:
        reader.put_file("keys.py", script)
        seen = reader.run(f"python /opt/repogym/in/keys.py get {name}")
    assert added.ok and added.output.split() == ["add_key", "-1", "EPERM"], added.output
    assert seen.ok and seen.output.split() == ["search", "-1", "EPERM"], seen.output
    assert "hidden-tests-of-the-grading-episode" not in seen.output
