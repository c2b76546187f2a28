"""Episodes discarded after `delete_discarded_detached()` (what `repogym grade --instance` calls): a detached
`rm` deletes them, so the process has no deletion thread to wait for at exit, and still nothing is left."""

from __future__ import annotations

import threading
import time

import pytest

from repogym.sandbox import workspace
from repogym.sandbox.base import Limits


@pytest.fixture
def detached(monkeypatch):
    monkeypatch.setattr(workspace, "_detached_deletion", False)
    workspace.delete_discarded_detached()
    yield
    for remover in workspace._removers:
        remover.wait(timeout=60)


def _gone(root, timeout_s: float = 30.0) -> list:
    """What is left of an episode's folder (and its trash) once the deleter had `timeout_s` to finish."""
    deadline = time.monotonic() + timeout_s
    while True:
        leftovers = [p for p in (root, *root.parent.glob(f".discarded-*/{root.name}")) if p.exists()]
        if not leftovers or time.monotonic() > deadline:
            return leftovers
        time.sleep(0.1)


@pytest.mark.parametrize("deleter", ["root", "not root"])
def test_locked_folders_left_by_jailed_code_are_removed_by_the_detached_deleter(
    toy_runtime, detached, deleter, monkeypatch
) -> None:
    """With "not root", the deleter a user without root gets (chmod first), tried on the same layer."""
    with toy_runtime.episode() as episode:
        root = episode.layer.root
        result = episode.run(
            'python -c "import os\n'
            "for d in ('/tmp/many', '/testbed/many', '/opt/repogym/out/many'):\n"
            "    os.makedirs(d)\n"
            "    for i in range(500): open(os.path.join(d, str(i)), 'w').close()\n\"; "
            "mkdir -p /tmp/locked/inner /testbed/locked/inner && "
            "touch /tmp/locked/inner/f /testbed/locked/inner/f && "
            "chmod 000 /tmp/locked/inner /tmp/locked /testbed/locked/inner /testbed/locked /opt/repogym/out && "
            "echo ok",
            limits=Limits(wall_s=60),
        )
        assert "ok" in result.output, result.output
        episode.reset()  # a reset's trash inside the root, then the root itself: two rm's on one tree
        if deleter == "not root":
            monkeypatch.setattr(workspace, "is_root", lambda: False)  # from here on: only close() is left
    assert not [t for t in threading.enumerate() if t.name == "repogym-discard"]
    assert _gone(root) == []
