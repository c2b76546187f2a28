"""`repogym cache du|prune`: sizes counted once per file, and pruning that never removes what is in use."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from filelock import FileLock
from typer.testing import CliRunner

from repogym.cli import app
from repogym.errors import ConfigError
from repogym.sandbox.usage import disk_usage, prune

OLD = time.time() - 10 * 86400


def _age(path: Path) -> None:
    os.utime(path, (OLD, OLD), follow_symlinks=False)


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    """A cache with a checkout hardlinking one blob, an orphan blob, an old episode, a held env and a free one."""
    root = tmp_path / "cache"
    kept_blob = root / "blobs" / "ab" / "cdef"
    orphan_blob = root / "blobs" / "12" / "3456"
    for blob in (kept_blob, orphan_blob):
        blob.parent.mkdir(parents=True)
        blob.write_bytes(b"x" * 8192)
        _age(blob)
    checkout = root / "checkouts" / "k1"
    checkout.mkdir(parents=True)
    os.link(kept_blob, checkout / "module.py")
    for name in ("old-episode", "new-episode"):
        (root / "episodes" / name / "upper").mkdir(parents=True)
    _age(root / "episodes" / "old-episode")
    for key in ("held", "free"):
        env = root / "envs" / key
        (env / "bin").mkdir(parents=True)
        (env / "bin" / "python").write_bytes(b"y" * 4096)
        (root / "envs" / f"{key}.ok").touch()
        _age(env)
    return root


def test_du_counts_a_hardlinked_file_once(cache):
    usage = {area.name: area for area in disk_usage(cache)}
    assert usage["blobs"].entries == 2
    assert usage["checkouts"].bytes < 8192  # the checkout's file is the blob already counted
    assert usage["envs"].entries == 2


def test_prune_removes_only_scratch_by_default_and_keeps_linked_blobs(cache):
    results = {r.area: r for r in prune(older_than_s=86400, root=cache)}
    assert (cache / "blobs" / "ab" / "cdef").exists()  # a checkout still links it
    assert not (cache / "blobs" / "12" / "3456").exists()
    assert results["blobs"].removed == 1 and results["blobs"].freed_bytes >= 8192
    assert not (cache / "episodes" / "old-episode").exists()
    assert (cache / "episodes" / "new-episode").exists()
    assert (cache / "envs" / "free").exists()  # environments only go when named


def test_prune_skips_an_environment_whose_lock_is_held(cache):
    with FileLock(str(cache / "envs" / "held.lock")):
        results = {r.area: r for r in prune(["envs"], older_than_s=86400, root=cache)}
    assert (cache / "envs" / "held").exists() and (cache / "envs" / "held.ok").exists()
    assert not (cache / "envs" / "free").exists() and not (cache / "envs" / "free.ok").exists()
    assert (results["envs"].removed, results["envs"].skipped_in_use) == (1, 1)


def test_dry_run_removes_nothing(cache):
    results = prune(["episodes", "blobs"], older_than_s=86400, dry_run=True, root=cache)
    assert sum(r.removed for r in results) == 2
    assert (cache / "episodes" / "old-episode").exists() and (cache / "blobs" / "12" / "3456").exists()


def test_unknown_area_lists_the_known_ones(cache):
    with pytest.raises(ConfigError, match="unknown; known areas: mirrors, blobs"):
        prune(["mirros"], root=cache)


def test_cli_du_and_prune(cache, monkeypatch):
    monkeypatch.setenv("REPOGYM_CACHE", str(cache))
    runner = CliRunner()
    du = runner.invoke(app, ["cache", "du", "--json"])
    assert du.exit_code == 0, du.output
    assert f'"root": "{cache}"' in du.output
    pruned = runner.invoke(app, ["cache", "prune", "--older-than", "2d"], env={"COLUMNS": "200"})
    assert pruned.exit_code == 0, pruned.output
    assert not (cache / "episodes" / "old-episode").exists()
    bad = runner.invoke(app, ["cache", "prune", "--older-than", "soon"])
    assert bad.exit_code == 2 and "give a number and a unit" in bad.output
