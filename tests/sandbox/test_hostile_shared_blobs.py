"""Attacks on the blob store under the pristine checkout: an episode's files are hard links to blobs every
checkout of the repository shares (or copies of them, without overlayfs), so writing one in place, changing
its mode or times, or linking it elsewhere must change the episode's copy only.

Each test is named after its attack and runs in a real bwrap episode.
"""

from __future__ import annotations

import hashlib
from pathlib import Path


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
