"""Hostile system calls against the jail's seccomp filter (sandbox/seccomp.py), each named after its attack.

Every attack runs as the jail's own code would: a command in a real bwrap episode. The controls check that
what a test suite needs (fork, threads, subprocesses) still works under the filter.
"""

from __future__ import annotations

import os
import platform
import subprocess

import pytest

from repogym.sandbox.seccomp import filter_path

# (unshare, clone, clone3, io_uring_setup, io_uring_enter, io_uring_register) per machine.
_NUMBERS = {"x86_64": (272, 56, 435, 425, 426, 427), "aarch64": (97, 220, 435, 425, 426, 427)}
_MACHINE = platform.machine()
pytestmark = pytest.mark.skipif(_MACHINE not in _NUMBERS, reason=f"no seccomp filter on {_MACHINE}")

_SYSCALL = (
    "import ctypes, errno, os, sys\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "libc.syscall.restype = ctypes.c_long\n"
    "def call(name, *args):\n"
    "    result = libc.syscall(*args)\n"
    "    if result == 0 and name.startswith('clone'):\n"
    "        os._exit(0)  # a child made by a call that should have failed: leave quietly\n"
    "    print(name, result, errno.errorcode.get(ctypes.get_errno(), '') if result < 0 else 'ok')\n"
    "UNSHARE, CLONE, CLONE3, URING_SETUP, URING_ENTER, URING_REGISTER = {numbers}\n"
    "CLONE_NEWUSER, SIGCHLD = 0x10000000, 17\n"
)


def _run_script(episode, body: str) -> str:
    episode.put_file("calls.py", _SYSCALL.format(numbers=_NUMBERS[_MACHINE]) + body)
    result = episode.run("python /opt/repogym/in/calls.py")
    assert result.exit_code == 0, result.output
    return result.output


def _results(output: str) -> dict[str, tuple[int, str]]:
    rows = [line.split() for line in output.splitlines() if len(line.split()) == 3]
    return {name: (int(value), why) for name, value, why in rows}


def test_unshare_user_namespace_in_the_jail_fails(episode):
    """Was a hole at dff2e9c: `unshare -Ur` made the jail root (with every capability) in a new user
    namespace, opening kernel code an unprivileged process never reaches."""
    result = episode.run("unshare -Ur id -u; echo rc=$?; unshare -U true; echo rc=$?")
    assert "rc=0" not in result.output, result.output
    assert "Operation not permitted" in result.output


def test_user_namespace_by_raw_unshare_and_clone_calls_fails(episode):
    """The same through the system calls themselves, as a ctypes-using test module would make them."""
    output = _run_script(
        episode,
        "call('unshare', UNSHARE, CLONE_NEWUSER)\n"
        "call('clone', CLONE, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)\n",
    )
    results = _results(output)
    assert results["unshare"] == (-1, "EPERM") and results["clone"] == (-1, "EPERM"), output


def test_clone3_is_enosys_so_libc_falls_back_to_the_checked_clone(episode):
    """clone3 takes its flags in memory that the filter cannot read: it must fail with ENOSYS (not EPERM,
    which libc would not retry), and what tests need still works through the fallback."""
    output = _run_script(
        episode,
        "args = ctypes.create_string_buffer(88)  # struct clone_args: flags 0 would be a plain fork\n"
        "call('clone3', CLONE3, args, 88)\n"
        "import subprocess, threading\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os._exit(7)\n"
        "print('fork', os.waitpid(pid, 0)[1] >> 8, 'ok')\n"
        "done = []\n"
        "thread = threading.Thread(target=done.append, args=(1,)); thread.start(); thread.join()\n"
        "print('thread', len(done), 'ok')\n"
        "print('subprocess', subprocess.run(['sh', '-c', 'exit 3']).returncode, 'ok')\n",
    )
    results = _results(output)
    assert results["clone3"] == (-1, "ENOSYS"), output
    assert (
        results["fork"] == (7, "ok") and results["thread"] == (1, "ok") and results["subprocess"] == (3, "ok")
    )


def test_io_uring_setup_in_the_jail_fails(episode):
    """Was a hole at dff2e9c: io_uring_setup worked in the jail (io_uring's operations bypass any
    per-syscall rule, and it has been a rich source of kernel exploits)."""
    output = _run_script(
        episode,
        "params = ctypes.create_string_buffer(120)  # struct io_uring_params\n"
        "call('setup', URING_SETUP, 4, params)\n"
        "call('enter', URING_ENTER, 0, 0, 0, 0, 0)\n"
        "call('register', URING_REGISTER, 0, 0, 0, 0)\n",
    )
    assert {name: value for name, value in _results(output).items()} == {
        "setup": (-1, "EPERM"),
        "enter": (-1, "EPERM"),
        "register": (-1, "EPERM"),
    }, output


@pytest.mark.skipif(_MACHINE != "x86_64", reason="the i386 and x32 ABIs exist on x86_64 only")
def test_other_abis_cannot_bypass_the_filter(episode):
    """The filter used to allow every call made through another ABI: `int 0x80` from a 64-bit process
    reaches the i386 table (unshare is 310, keyctl 288 there), and x32 numbers carry bit 30."""
    output = _run_script(
        episode,
        "import mmap\n"
        "def int80(number, arg):\n"
        "    # push rbx; mov eax, number; mov ebx, arg; int 0x80; pop rbx; ret\n"
        "    code = b'\\x53\\xb8' + number.to_bytes(4, 'little') + b'\\xbb' + arg.to_bytes(4, 'little')\n"
        "    code += b'\\xcd\\x80\\x5b\\xc3'\n"
        "    page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\n"
        "    page.write(code)\n"
        "    address = ctypes.addressof(ctypes.c_char.from_buffer(page))\n"
        "    return ctypes.CFUNCTYPE(ctypes.c_int)(address)()\n"
        "result = int80(310, CLONE_NEWUSER)\n"
        "print('i386_unshare', result, 'raw')\n"
        "result = int80(288, 0)  # keyctl(KEYCTL_GET_KEYRING_ID, ...)\n"
        "print('i386_keyctl', result, 'raw')\n"
        "call('x32_unshare', UNSHARE | 0x40000000, CLONE_NEWUSER)\n",
    )
    results = _results(output)
    enosys = -38
    assert results["i386_unshare"][0] == enosys and results["i386_keyctl"][0] == enosys, output
    assert results["x32_unshare"] == (-1, "ENOSYS"), output


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run bwrap as another, unprivileged user")
def test_unprivileged_bwrap_still_starts_under_the_filter():
    """Without root, bwrap makes its own user namespace before it applies the filter: the jail must still
    start, and the filter must hold inside it (checked as `nobody`, the way a non-root repogym runs)."""
    program = filter_path()
    assert program is not None
    fd = os.open(program, os.O_RDONLY)  # opened here: nobody may not read the cache folder
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    jail = [
        "bwrap",
        "--unshare-user",
        "--unshare-pid",
        "--ro-bind",
        "/",
        "/",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
    ]
    command = ["sh", "-c", "echo started; unshare -U true && echo NESTED"]
    try:
        result = subprocess.run(
            [*nobody, *jail, "--seccomp", str(fd), "--", *command],
            capture_output=True,
            text=True,
            timeout=30,
            pass_fds=(fd,),
        )
    finally:
        os.close(fd)
    assert "started" in result.stdout, result.stdout + result.stderr
    assert "NESTED" not in result.stdout and "Operation not permitted" in result.stderr
