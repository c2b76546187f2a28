"""Hostile system calls against the jail's seccomp filter (sandbox/seccomp.py), each named after its attack.

Every attack runs as the jail's own code would: a command in a real bwrap episode. The controls check that
what a test suite needs (fork, threads, subprocesses) still works under the filter.
"""

from __future__ import annotations

import os
import platform
import subprocess

import pytest

from repogym.sandbox.layerchanges import layer_changes
from repogym.sandbox.seccomp import filter_path

# (unshare, clone, clone3, io_uring_setup, io_uring_enter, io_uring_register, setxattrat) per machine.
_NUMBERS = {"x86_64": (272, 56, 435, 425, 426, 427, 463), "aarch64": (97, 220, 435, 425, 426, 427, 463)}
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
    "UNSHARE, CLONE, CLONE3, URING_SETUP, URING_ENTER, URING_REGISTER, SETXATTRAT = {numbers}\n"
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


# Opens a socket of each (name, family, type, protocol) and prints `name errno` (0 when it opened).
_SOCKETS = (
    "import errno, socket\n"
    "def try_socket(name, family, kind, protocol=0, pair=False):\n"
    "    try:\n"
    "        made = socket.socketpair(family, kind, protocol) if pair else [socket.socket(family, kind, protocol)]\n"
    "    except OSError as exc:\n"
    "        print(name, errno.errorcode.get(exc.errno, exc.errno))\n"
    "    else:\n"
    "        print(name, 'opened')\n"
    "        for one in made:\n"
    "            one.close()\n"
)


def _socket_results(episode, calls: str) -> dict[str, str]:
    episode.put_file("sockets.py", _SOCKETS + calls)
    result = episode.run("python /opt/repogym/in/sockets.py")
    assert result.exit_code == 0, result.output
    return dict(line.split() for line in result.output.splitlines() if len(line.split()) == 2)


def test_vsock_socket_in_the_jail_fails(episode):
    """Was a hole at 385871c: the jail created AF_VSOCK sockets, the one family that reaches past its network
    namespace to the host or hypervisor (a guest's vsock device, the host's vhost-vsock)."""
    results = _socket_results(
        episode,
        "try_socket('stream', 40, socket.SOCK_STREAM)\n"
        "try_socket('dgram', 40, socket.SOCK_DGRAM)\n"
        "try_socket('pair', 40, socket.SOCK_STREAM, pair=True)\n",
    )
    assert results == {"stream": "EAFNOSUPPORT", "dgram": "EAFNOSUPPORT", "pair": "EAFNOSUPPORT"}


def test_packet_socket_in_the_jail_fails(episode):
    """Raw link-layer frames: refused by the filter, not only by the missing CAP_NET_RAW."""
    results = _socket_results(
        episode,
        "try_socket('raw', socket.AF_PACKET, socket.SOCK_RAW)\n"
        "try_socket('dgram', socket.AF_PACKET, socket.SOCK_DGRAM)\n",
    )
    assert results == {"raw": "EAFNOSUPPORT", "dgram": "EAFNOSUPPORT"}


def test_kernel_crypto_and_other_socket_families_in_the_jail_fail(episode):
    """Families of kernel code no test runs: the crypto API (AF_ALG), IPsec keys (AF_KEY), Bluetooth, CAN, TIPC,
    RDS, XDP, a number past the last family, and -1."""
    families = {
        "alg": 38,
        "key": 15,
        "bluetooth": 31,
        "can": 29,
        "tipc": 30,
        "rds": 21,
        "xdp": 44,
        "past": 63,
    }
    calls = "".join(
        f"try_socket('{name}', {number}, socket.SOCK_SEQPACKET)\n" for name, number in families.items()
    )
    # Python reads family -1 as "the default" (AF_INET): -1 goes to the system call through libc.
    minus_one = (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "made = libc.socket(-1, socket.SOCK_STREAM, 0)\n"
        "print('minus_one', errno.errorcode[ctypes.get_errno()] if made < 0 else 'opened')\n"
    )
    results = _socket_results(episode, calls + minus_one)
    assert results == {name: "EAFNOSUPPORT" for name in [*families, "minus_one"]}


def test_netlink_other_than_routing_in_the_jail_fails(episode):
    """Netlink reaches many kernel subsystems by its protocol number: only routing (what libc's getaddrinfo
    and getifaddrs use) is open; netfilter, audit, xfrm and generic netlink are refused."""
    protocols = {"netfilter": 12, "audit": 9, "xfrm": 6, "generic": 16, "uevent": 15}
    calls = "".join(
        f"try_socket('{name}', socket.AF_NETLINK, socket.SOCK_RAW, {number})\n"
        for name, number in protocols.items()
    )
    results = _socket_results(episode, calls + "try_socket('route', socket.AF_NETLINK, socket.SOCK_RAW, 0)\n")
    assert results == {**{name: "EPROTONOSUPPORT" for name in protocols}, "route": "opened"}


def test_the_sockets_a_test_run_needs_still_work_in_the_jail(episode):
    """Control: Unix sockets, TCP and UDP over both loopbacks, name resolution (AI_ADDRCONFIG asks netlink)
    and the interface list."""
    script = (
        "try_socket('unix_stream', socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "try_socket('unix_dgram', socket.AF_UNIX, socket.SOCK_DGRAM)\n"
        "try_socket('unix_pair', socket.AF_UNIX, socket.SOCK_STREAM, pair=True)\n"
        "for name, family, host in (('tcp4', socket.AF_INET, '127.0.0.1'), ('tcp6', socket.AF_INET6, '::1')):\n"
        "    server = socket.socket(family, socket.SOCK_STREAM)\n"
        "    server.bind((host, 0)); server.listen()\n"
        "    client = socket.create_connection(server.getsockname()[:2]); peer, _ = server.accept()\n"
        "    client.sendall(b'ping'); print(name, peer.recv(4).decode())\n"
        "udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); udp.bind(('127.0.0.1', 0))\n"
        "socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'pong', udp.getsockname())\n"
        "print('udp', udp.recv(4).decode())\n"
        "found = socket.getaddrinfo('127.0.0.1', 80, flags=socket.AI_ADDRCONFIG)\n"
        "print('resolve', 'ok' if found else 'empty')\n"
        "print('interfaces', ','.join(name for _, name in socket.if_nameindex()))\n"
    )
    results = _socket_results(episode, script)
    assert {name: results.get(name) for name in ("unix_stream", "unix_dgram", "unix_pair")} == dict.fromkeys(
        ("unix_stream", "unix_dgram", "unix_pair"), "opened"
    )
    assert results["tcp4"] == results["tcp6"] == "ping" and results["udp"] == "pong", results
    assert results["resolve"] == "ok" and "lo" in results["interfaces"].split(","), results


def test_user_overlay_attributes_set_by_the_jail_fail(episode):
    """Was a hole at 385871c: the jail set `user.overlay.redirect` on files of its layer, which made the
    grader's reading of that layer give up and pay for a whole-tree git diff instead. Every call that sets
    an extended attribute now fails with ENOTSUP (layerchanges.py also ignores `user.overlay.*`)."""
    output = _run_script(
        episode,
        "os.mkdir('moved'); open('moved/a.py', 'w').close(); os.symlink('a.py', 'moved/link')\n"
        "for name, target, options in (('path', 'moved', {}), ('nofollow', 'moved/link', {'follow_symlinks': False}),\n"
        "                               ('fd', os.open('moved/a.py', os.O_RDONLY), {})):\n"
        "    try:\n"
        "        os.setxattr(target, 'user.overlay.redirect', b'/src', **options)\n"
        "        print(name, 0, 'ok')\n"
        "    except OSError as exc:\n"
        "        print(name, -1, errno.errorcode[exc.errno])\n"
        "value = ctypes.c_char_p(b'/src')\n"
        "call('setxattrat', SETXATTRAT, -100, b'moved', 0, b'user.overlay.redirect', ctypes.byref(ctypes.c_ulong(0)), 0)\n"
        "print('list', len(os.listxattr('moved')), 'ok')\n",
    )
    results = _results(output)
    assert {name: results[name] for name in ("path", "nofollow", "fd")} == dict.fromkeys(
        ("path", "nofollow", "fd"), (-1, "ENOTSUP")
    ), output
    assert results["setxattrat"] == (-1, "ENOTSUP") and results["list"] == (0, "ok"), output
    overlay = episode.layer.overlay()
    if overlay is not None and overlay.upper is not None:
        changes = layer_changes(overlay.upper, overlay.lowers)
        assert changes is not None and {c.path for c in changes} >= {"moved/a.py", "moved/link"}


def test_copying_files_with_their_attributes_still_works_in_the_jail(episode):
    """Control: `cp -a`, shutil.copy2 and shutil.copytree copy what they can and ignore ENOTSUP."""
    result = episode.run(
        'cp -a README.md /tmp/a && cp -a src /tmp/src && python -c "import shutil; '
        "shutil.copy2('README.md', '/tmp/b'); shutil.copytree('src', '/tmp/tree')\" && echo copied"
    )
    assert result.ok and "copied" in result.output, result.output


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
