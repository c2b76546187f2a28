"""A small seccomp filter for the jail: the kernel keyring is off limits.

Every jail runs as the same unprivileged uid, and keyrings belong to a uid, not to a
namespace: without this filter, a key added in one episode could be read in another
(docker's default profile blocks the same calls). The filter is a classic BPF program
built here by hand (no libseccomp needed) and handed to bwrap with `--seccomp FD`.
On an architecture it does not know, no filter is used and bwrap.py's docstring applies.
"""

from __future__ import annotations

import functools
import platform
import struct

from repogym.sandbox.cache import cache_dir

# struct seccomp_data: int nr (offset 0), u32 arch (offset 4), ...
_LD_ABS_W, _JEQ_K, _RET_K = 0x20, 0x15, 0x06
_RET_ALLOW, _RET_EPERM = 0x7FFF0000, 0x00050000 | 1
# (AUDIT_ARCH_*, add_key, request_key, keyctl) per machine.
_ARCHES = {
    "x86_64": (0xC000003E, 248, 249, 250),
    "aarch64": (0xC00000B7, 217, 218, 219),
}


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def keyring_filter(machine: str) -> bytes | None:
    """The BPF program for `machine` (platform.machine()), or None when unknown.

    >>> len(keyring_filter("x86_64")), keyring_filter("sparc") is None
    (64, True)
    """
    if machine not in _ARCHES:
        return None
    arch, add_key, request_key, keyctl = _ARCHES[machine]
    return b"".join(
        [
            _insn(_LD_ABS_W, 0, 0, 4),  # 0: A = arch
            _insn(_JEQ_K, 0, 4, arch),  # 1: another ABI: allow (6)
            _insn(_LD_ABS_W, 0, 0, 0),  # 2: A = syscall number
            _insn(_JEQ_K, 3, 0, add_key),  # 3: -> 7
            _insn(_JEQ_K, 2, 0, request_key),  # 4: -> 7
            _insn(_JEQ_K, 1, 0, keyctl),  # 5: -> 7
            _insn(_RET_K, 0, 0, _RET_ALLOW),  # 6
            _insn(_RET_K, 0, 0, _RET_EPERM),  # 7
        ]
    )


@functools.cache
def filter_path() -> str | None:
    """A file holding this machine's filter (written once), or None when there is none."""
    program = keyring_filter(platform.machine())
    if program is None:
        return None
    path = cache_dir("seccomp") / f"keyring-{platform.machine()}.bpf"
    if not path.exists() or path.read_bytes() != program:
        path.write_bytes(program)
    return str(path)
