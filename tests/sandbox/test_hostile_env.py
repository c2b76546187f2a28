"""Attacks on what the environment mechanics added: the writable /dev/shm, the install layers shared by a
commit's episodes, and the grader's re-install of a packaging patch (candidate code run as an installer)."""

from __future__ import annotations

import hashlib
import os
import threading
import time
import uuid
from pathlib import Path

import pytest

from repogym.sandbox.base import Limits
from repogym.sandbox.runtime import TaskRuntime, reinstall_if_packaging_changed

from ..support.sandbox import HELLO_FILES

# -- /dev/shm ------------------------------------------------------------------------------------


def test_dev_shm_is_not_shared_between_episodes_or_commands(toy_runtime):
    marker = f"SHM-{uuid.uuid4().hex}"
    hold = (
        f"echo {marker} > /dev/shm/{marker} && touch /opt/repogym/out/ready && "
        "while [ ! -e /opt/repogym/out/stop ]; do sleep 0.05; done; cat /dev/shm/*"
    )
    with toy_runtime.episode() as writer, toy_runtime.episode() as reader:
        results = {}
        thread = threading.Thread(target=lambda: results.setdefault("writer", writer.run(hold)))
        thread.start()
        try:
            deadline = time.monotonic() + 20
            while not (writer.layer.out / "ready").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert (writer.layer.out / "ready").exists(), "the writer did not start"
            # While the writer's /dev/shm holds the marker: another episode, and the writer's next command.
            seen = reader.run(f"ls -A /dev/shm; grep -rs {marker} /dev/shm /tmp /testbed; echo end")
            own_next = writer.run("ls -A /dev/shm; echo end")
        finally:
            (writer.layer.out / "stop").touch()
            thread.join()
    assert marker in results["writer"].output  # the writer really had it
    assert seen.output.strip() == "end" and own_next.output.strip() == "end"
    assert not any(marker in name for name in os.listdir("/dev/shm"))  # nor did it reach the host's


def test_dev_shm_cannot_fill_the_machines_memory(episode):
    result = episode.run(
        "head -c 3000000 /dev/zero > /dev/shm/fill; echo rc=$?; du -k /dev/shm/fill | cut -f1",
        limits=Limits(shm_mb=1),
    )
    assert "No space left on device" in result.output and "rc=1" in result.output
    assert int(result.output.strip().splitlines()[-1]) <= 1024


# -- install layers and the re-install ---------------------------------------------------------------


def _fingerprint(folder: Path) -> str:
    """Every path, size and content hash under `folder` (links not followed)."""
    digest = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(folder)):
        dirs.sort()
        for name in sorted(files):
            path = Path(root, name)
            digest.update(str(path.relative_to(folder)).encode())
            if path.is_file() and not path.is_symlink():
                digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


# Runs as the installer when the grader re-installs: tries to poison the venv every episode shares,
# to phone home, and to plant a file in the commit's install layer.
_POISON_SETUP = (
    "import glob, os, socket\n"
    "site = glob.glob('/opt/repogym/venv/lib/python3*/site-packages')[0]\n"
    "open(os.path.join(site, 'zz_poison.pth'), 'w').write('import sys; print(\"POISONED\")\\n')\n"
    "try:\n"
    "    socket.create_connection(('pypi.org', 443), timeout=3)\n"
    "    open('/testbed/network.txt', 'w').write('reached')\n"
    "except OSError as exc:\n"
    "    open('/testbed/network.txt', 'w').write('blocked %s' % exc)\n"
    "open('/testbed/planted.txt', 'w').write('planted')\n" + HELLO_FILES["setup.py"]
)


@pytest.mark.slow
def test_setup_py_reinstalled_by_the_grader_cannot_poison_the_shared_venv_or_phone_home(hello_repo):
    repo, base = hello_repo
    task = repo.task("local__hello-poison", base, FAIL_TO_PASS=["tests/test_hello.py::test_greet"])
    runtime = TaskRuntime.create(task).prepare()
    layers = runtime.commit_layers()
    shared = [runtime.env.venv, *layers.repo[:-1], *layers.venv[:-1]]
    before = [_fingerprint(folder) for folder in shared]
    patch = repo.patch({"setup.py": _POISON_SETUP})
    with runtime.episode(readonly_git=True) as episode:
        path = episode.put_file("candidate.patch", patch)
        assert episode.run(f"git apply {path}").ok
        result = reinstall_if_packaging_changed(episode, patch)
        assert result is not None and result.ok, result.output if result else "no re-install"
        # The episode's own venv has the poison (the install ran), but it had no network.
        assert "POISONED" in episode.run("python -c pass").output
        assert episode.run("cat network.txt").output.startswith("blocked")
    with runtime.episode() as fresh:
        assert "POISONED" not in fresh.run("python -c pass").output
        assert fresh.run("test -e planted.txt || echo absent").output.strip() == "absent"
    assert [_fingerprint(folder) for folder in shared] == before


@pytest.mark.slow
def test_episode_writes_do_not_reach_the_commits_install_layers(hello_repo):
    repo, base = hello_repo
    second = repo.commit(
        {"README.md": "hello\n"}, "readme"
    )  # a commit with layers of its own (not the build's)
    try:
        runtime = TaskRuntime.create(repo.task("local__hello-layers", second)).prepare()
        layers = runtime.commit_layers()
        # Over the checkout: what the install wrote, and the commit's bytecode on top (sandbox/bytecode.py).
        assert [layer.name for layer in layers.repo[:-1]] == ["pyc", "repo"], layers.repo
        installed = layers.repo[-2]
        generated = sorted(p for p in installed.rglob("*") if p.is_file() and ".git" not in p.parts)
        assert generated, "the install wrote nothing in the repo"
        target = generated[0].relative_to(installed)
        before = [_fingerprint(folder) for folder in (*layers.repo[:-1], *layers.venv[:-1])]
        with runtime.episode() as episode:
            attack = episode.run(
                f"echo PWNED > '{target}' && rm -rf *.egg-info; "
                "touch /opt/repogym/venv/pwned 2>&1; "
                "rm -f /opt/repogym/venv/lib/python3*/site-packages/*hello* 2>&1; echo done"
            )
            assert "done" in attack.output and "Read-only file system" in attack.output
        with runtime.episode() as fresh:
            assert "PWNED" not in fresh.run(f"cat '{target}'").output
            assert fresh.run("python -c 'import hello; print(hello.greet())'").output.strip() == "hi"
        assert [_fingerprint(folder) for folder in (*layers.repo[:-1], *layers.venv[:-1])] == before
    finally:
        repo.git("reset", "-q", "--hard", base)
