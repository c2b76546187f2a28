"""Episodes discarded after `delete_discarded_detached()` (what `repogym grade --instance` calls): a detached
`rm` deletes them, so the process has no deletion thread to wait for at exit, and still nothing is left."""

from __future__ import annotations

import os
import stat
import threading
import time

import pytest

from repogym.sandbox import workspace
from repogym.sandbox.base import Limits

from ..support.sandbox import plant_undeletable_tree


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
        plant_undeletable_tree(episode, 500)
        episode.reset()  # a reset's trash inside the root, then the root itself: two rm's on one tree
        if deleter == "not root":
            monkeypatch.setattr(workspace, "is_root", lambda: False)  # from here on: only close() is left
    assert not [t for t in threading.enumerate() if t.name == "repogym-discard"]
    assert _gone(root) == []


@pytest.mark.parametrize("deleter", ["root", "not root"])
def test_link_to_a_host_file_planted_in_the_layer_is_not_followed_by_the_detached_deleter(
    toy_runtime, detached, deleter, host_secret, monkeypatch
) -> None:
    """The jail names a host file it cannot see in links inside its layer (one in a folder of its own, the
    way chmod -R would meet it): deleting the layer removes the links, never the file, nor changes its mode."""
    host_secret.chmod(0o400)  # what `chmod u+rwX` would turn into 0o600 if it followed a link
    with toy_runtime.episode() as episode:
        root = episode.layer.root
        result = episode.run(
            f"mkdir -p /tmp/d /testbed/d && ln -s {host_secret} /tmp/d/link && ln -s {host_secret} /testbed/link "
            f"&& ln -s {host_secret.parent} /tmp/d/dirlink && echo ok",
            limits=Limits(wall_s=60),
        )
        assert "ok" in result.output, result.output
        if deleter == "not root":
            monkeypatch.setattr(workspace, "is_root", lambda: False)
    assert _gone(root) == []
    assert host_secret.read_text() == "TOP-SECRET-HOST-VALUE\n"
    assert stat.S_IMODE(os.stat(host_secret).st_mode) == 0o400
