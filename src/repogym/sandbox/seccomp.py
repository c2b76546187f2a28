"""The jail's seccomp filter: the few kernel interfaces a test run never needs and an attacker wants.

Guarantees (each has a hostile test in tests/sandbox/test_hostile_*.py), on x86_64 and aarch64:

- No kernel keyring: add_key, request_key and keyctl fail with EPERM. Every jail runs as the same
  unprivileged uid, and keyrings belong to a uid, not to a namespace: without this, a key added in
  one episode could be read in another (docker's default profile blocks the same calls).
- No new user namespace: unshare() and clone() with CLONE_NEWUSER fail with EPERM. Inside one, a
  process is root with every capability, which opens kernel code (mounts, netfilter, ...) that an
  unprivileged jail never reaches. clone3() passes its flags in memory, which a classic BPF filter
  cannot read, so it fails with ENOSYS: libc then falls back to clone(), which is checked (docker does
  the same).
- No io_uring: io_uring_setup, io_uring_enter and io_uring_register fail with EPERM (a large attack
  surface, and its operations bypass any per-syscall rule).
- Only the socket families a test run needs: socket() and socketpair() accept AF_UNIX, AF_INET, AF_INET6,
  and AF_NETLINK with protocol NETLINK_ROUTE (libc's getaddrinfo and getifaddrs ask the kernel's routing
  tables through it). Every other family fails with EAFNOSUPPORT, as on a kernel built without it; another
  netlink protocol with EPROTONOSUPPORT. Closed so: AF_VSOCK, which reaches the host or hypervisor past the
  jail's network namespace; AF_PACKET (raw frames; the jail also lacks CAP_NET_RAW, and no test needs a
  link layer); AF_ALG, AF_KEY, AF_XDP, AF_BLUETOOTH, AF_CAN, AF_TIPC, AF_RDS and the rest, kernel code no
  test runs; the netfilter, audit, xfrm and generic netlink protocols.
- No extended attributes set: setxattr, lsetxattr, fsetxattr and setxattrat fail with ENOTSUP, as on a
  filesystem without them (copy tools and shutil.copystat ignore that error). The jail could otherwise set
  `user.overlay.*` attributes on files of its overlay layer, which overlayfs reads on `userxattr` mounts;
  repogym's are not, and layerchanges.py believes only `trusted.overlay.*`, but no test needs the call.
- No other system-call ABI: a call through another ABI of the same machine (i386 via `int 0x80`, or
  x32, on x86_64) fails with ENOSYS, so the rules above cannot be bypassed by renumbering.

Not guaranteed: anything else docker's default profile refuses (bpf, perf_event_open, userfaultfd, ...)
is left to the jail's missing capabilities; on another architecture no filter is used (bwrap.py says so).
Reading extended attributes (getxattr, listxattr) and removing them stay allowed.

bwrap applies the filter last, after it has set up its own namespaces (as the unprivileged user, it
creates a user namespace itself), right before it runs the command; so the jail starts, and nothing in
it can undo the filter (filters are inherited and cannot be removed). The program is classic BPF built
here by hand: libseccomp would be a C dependency for about forty instructions.
"""

from __future__ import annotations

import errno
import functools
import platform
import struct
from dataclasses import dataclass

from repogym.files import atomic_writer
from repogym.sandbox.cache import cache_dir

# BPF opcodes: BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, BPF_JMP|BPF_JGE|BPF_K, BPF_JMP|BPF_JSET|BPF_K,
# BPF_RET|BPF_K.
_LD_ABS_W, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
# struct seccomp_data: int nr (offset 0), u32 arch (4), u64 instruction_pointer (8), u64 args[6] (16).
# Little-endian on both machines: the low word of an argument comes first; socket's are ints (the low word).
_NR, _ARCH, _ARG0_LOW, _ARG2_LOW = 0, 4, 16, 32
CLONE_NEWUSER = 0x10000000
_X32_SYSCALL_BIT = 0x40000000
#: socket() families a test run gets: AF_UNIX, AF_INET, AF_INET6 (AF_NETLINK is checked on its own).
ALLOWED_FAMILIES = (1, 2, 10)
AF_NETLINK, NETLINK_ROUTE = 16, 0
_SETXATTRAT = 463  # Linux 6.13; the same number on both machines (new calls share one table)


@dataclass(frozen=True)
class _Machine:
    arch: int
    """AUDIT_ARCH_* of the native ABI."""
    denied: tuple[int, ...]
    """Calls refused outright (EPERM): the keyring and io_uring."""
    clone_like: tuple[int, ...]
    """Calls refused with EPERM when their first argument has CLONE_NEWUSER: unshare, clone."""
    clone3: int
    socket_like: tuple[int, ...]
    """Calls whose first argument is a socket family: socket, socketpair."""
    set_xattr: tuple[int, ...]
    """Calls refused with ENOTSUP: setxattr, lsetxattr, fsetxattr, setxattrat."""
    x32: bool = False
    """Whether numbers with the x32 bit set reach the same arch (x86_64)."""


_IO_URING = (425, 426, 427)  # io_uring_setup, io_uring_enter, io_uring_register (same numbers on both)
_MACHINES = {
    # add_key, request_key, keyctl; unshare, clone; clone3; socket, socketpair; setxattr, lsetxattr, fsetxattr.
    "x86_64": _Machine(
        0xC000003E,
        (248, 249, 250, *_IO_URING),
        (272, 56),
        435,
        (41, 53),
        (188, 189, 190, _SETXATTRAT),
        x32=True,
    ),
    "aarch64": _Machine(
        0xC00000B7, (217, 218, 219, *_IO_URING), (97, 220), 435, (198, 199), (5, 6, 7, _SETXATTRAT)
    ),
}


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def jail_filter(machine: str) -> bytes | None:
    """The BPF program for `machine` (platform.machine()), or None when unknown.

    >>> len(jail_filter("x86_64")) // 8, len(jail_filter("aarch64")) // 8, jail_filter("sparc") is None
    (35, 34, True)
    """
    spec = _MACHINES.get(machine)
    if spec is None:
        return None
    # Instructions as (code, true-label, false-label, k); labels are resolved to relative jumps below.
    body: list[tuple[int, str | None, str | None, int]] = [
        (_LD_ABS_W, None, None, _ARCH),
        (_JEQ_K, None, "enosys", spec.arch),
        (_LD_ABS_W, None, None, _NR),
    ]
    if spec.x32:
        body.append((_JGE_K, "enosys", None, _X32_SYSCALL_BIT))
    body += [(_JEQ_K, "eperm", None, nr) for nr in spec.denied]
    body.append((_JEQ_K, "enosys", None, spec.clone3))
    body += [(_JEQ_K, "enotsup", None, nr) for nr in spec.set_xattr]
    body += [(_JEQ_K, "flags", None, nr) for nr in spec.clone_like]
    body += [(_JEQ_K, "family", None, nr) for nr in spec.socket_like]
    body.append((_RET_K, None, None, _RET_ALLOW))
    labels = {"flags": len(body)}
    body += [(_LD_ABS_W, None, None, _ARG0_LOW), (_JSET_K, "eperm", "allow", CLONE_NEWUSER)]
    labels["family"] = len(body)
    body.append((_LD_ABS_W, None, None, _ARG0_LOW))
    body += [(_JEQ_K, "allow", None, family) for family in ALLOWED_FAMILIES]
    body += [(_JEQ_K, None, "eafnosupport", AF_NETLINK), (_LD_ABS_W, None, None, _ARG2_LOW)]
    body.append((_JEQ_K, "allow", "eprotonosupport", NETLINK_ROUTE))
    for label, error in (
        ("eperm", errno.EPERM),
        ("enosys", errno.ENOSYS),
        ("enotsup", errno.ENOTSUP),
        ("eafnosupport", errno.EAFNOSUPPORT),
        ("eprotonosupport", errno.EPROTONOSUPPORT),
    ):
        labels[label] = len(body)
        body.append((_RET_K, None, None, _RET_ERRNO | error))
    labels["allow"] = len(body)  # last: classic BPF jumps forward only
    body.append((_RET_K, None, None, _RET_ALLOW))

    def jump(at: int, label: str | None) -> int:
        return 0 if label is None else labels[label] - at - 1

    return b"".join(_insn(code, jump(i, jt), jump(i, jf), k) for i, (code, jt, jf, k) in enumerate(body))


@functools.cache
def _program(machine: str) -> bytes | None:
    return jail_filter(machine)


def filter_path() -> str | None:
    """A file in the current cache holding this machine's filter (written when missing), or None when
    there is none. Not cached itself: REPOGYM_CACHE may change within a process (benchmarks, tests)."""
    machine = platform.machine()
    program = _program(machine)
    if program is None:
        return None
    path = cache_dir("seccomp") / f"jail-{machine}.bpf"
    if not path.exists() or path.read_bytes() != program:
        # Written aside and renamed: a concurrent jail never reads half a program. The aside file is
        # unique per call (mkstemp), not per process: threads of one process grading their first tasks
        # at once each write the filter, and a name shared by pid let one rename the other's file away.
        with atomic_writer(path, "wb") as handle:
            handle.write(program)
    return str(path)
