"""The jail's seccomp filter file, written into a fresh cache by many graders at once.

Seen on a fresh GPU machine: 4 tasks graded at once by threads of one process; one grade failed with
`No such file or directory: '.../seccomp/jail-x86_64.bpf.596.tmp' -> '.../jail-x86_64.bpf'` (the aside
file was named by pid, so two threads shared it and one renamed the other's away).
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from repogym.sandbox import seccomp


def write_at_once(writers: int) -> tuple[list[str | None], list[BaseException]]:
    """`filter_path()` from `writers` threads released together: the paths they got, what they raised."""
    start = threading.Barrier(writers)
    paths: list[str | None] = []
    failures: list[BaseException] = []

    def write() -> None:
        start.wait()
        try:
            paths.append(seccomp.filter_path())
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=write) for _ in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return paths, failures


def test_threads_writing_the_filter_into_a_fresh_cache_at_once_all_get_the_whole_program(
    tmp_path, monkeypatch
):
    program = seccomp._program(seccomp.platform.machine())
    if program is None:
        pytest.skip("no seccomp filter for this machine's architecture")
    for round_ in range(30):
        monkeypatch.setenv("REPOGYM_CACHE", str(tmp_path / f"cache-{round_}"))
        paths, failures = write_at_once(8)
        assert not failures, failures[0]
        (path,) = set(paths)
        assert path is not None and Path(path).read_bytes() == program
        assert [p.name for p in Path(path).parent.iterdir()] == [Path(path).name]  # no aside file left
