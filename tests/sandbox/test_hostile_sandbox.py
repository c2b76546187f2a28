"""Hostile commands against the bwrap sandbox: each is contained and the host is unchanged afterwards.

Each test is named after the attack it stops.
"""

from __future__ import annotations

import hashlib
import http.server
import os
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

from repogym.sandbox.base import Limits


def _tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode())
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.fixture
def host_server():
    """A real HTTP server on the host's loopback that records every request it gets."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"host-data")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], hits
    server.shutdown()


def test_connect_to_host_loopback_server_fails(episode, host_server):
    port, hits = host_server
    code = (
        "import urllib.request\n"
        f"print(urllib.request.urlopen('http://127.0.0.1:{port}/leak', timeout=3).read())\n"
    )
    result = episode.run(f'python -c "{code}"')
    assert result.exit_code != 0
    assert "host-data" not in result.output
    assert hits == []
    # The same request from the host works: the server was really there.
    import urllib.request

    assert urllib.request.urlopen(f"http://127.0.0.1:{port}/ok", timeout=3).read() == b"host-data"


_SERVE_ON_LOCALHOST = """
import http.server, socket, threading, urllib.request
server = http.server.HTTPServer(("localhost", 0), http.server.SimpleHTTPRequestHandler)
threading.Thread(target=server.serve_forever, daemon=True).start()
print("served", urllib.request.urlopen(f"http://localhost:{server.server_port}/", timeout=5).status)
try:
    print("resolved", socket.gethostbyname("pypi.org"))
except OSError as exc:
    print("unresolved", exc)
"""


def test_localhost_is_the_jails_own_loopback_and_no_other_name_resolves(episode, host_server):
    """Tests that serve on `localhost` (sphinx's linkcheck) run as in SWE-bench's containers: the name is the
    jail's loopback, which reaches nothing of the host's, and no other name resolves."""
    port, hits = host_server
    result = episode.run(f"python {episode.put_file('serve.py', _SERVE_ON_LOCALHOST)}")
    assert "served 200" in result.output, result.output
    assert "unresolved" in result.output and "resolved " not in result.output.replace("unresolved", "")
    leak = episode.run(
        f"python -c \"import urllib.request; urllib.request.urlopen('http://localhost:{port}/', timeout=3)\""
    )
    assert leak.exit_code != 0 and hits == []


def test_connect_to_private_range_address_fails_fast(episode):
    started = time.monotonic()
    code = "import socket; socket.create_connection(('10.255.255.1', 80), timeout=5)"
    result = episode.run(f'python -c "{code}"')
    assert result.exit_code != 0
    assert "unreachable" in result.output.lower() or "errno" in result.output.lower()
    assert time.monotonic() - started < 5  # no route at all, not a timeout


def test_write_to_host_home_fails(episode):
    marker = Path.home() / f"repogym-hostile-{uuid.uuid4().hex}"
    result = episode.run(f"echo pwned > {marker}; echo pwned > ~/x; ls -d {Path.home()}")
    assert not marker.exists()
    assert "pwned" not in result.output


def test_write_to_host_tmp_fails(episode, tmp_path):
    target = tmp_path / "dropped-by-sandbox"
    result = episode.run(f"mkdir -p {tmp_path}; echo pwned > {target}; cat {target}")
    assert not target.exists()  # the jail's /tmp is the episode's own folder
    assert result.exit_code == 0  # it wrote into its private /tmp instead


def test_write_to_environment_cache_fails(episode, toy_runtime):
    venv = toy_runtime.env.venv
    before = _tree_digest(venv / "bin")
    result = episode.run(
        f"echo pwned > /opt/repogym/venv/bin/python3; touch /opt/repogym/venv/evil; touch {venv}/evil2"
    )
    assert "Read-only file system" in result.output
    assert _tree_digest(venv / "bin") == before
    assert not (venv / "evil").exists() and not (venv / "evil2").exists()


def test_write_to_bare_mirror_or_shared_history_packs_fails(episode, toy_runtime):
    """The mirror is not in the jail at all (it was bound read-only: its objects hold every later commit),
    and the checkout's packs, hard links shared with every checkout of the repo through the history store
    (sandbox/history.py), change only in the episode's own layer, however the jail rewrites them."""
    mirror, packs = toy_runtime.mirror_path, toy_runtime.pristine / ".git" / "objects" / "pack"
    before = (_tree_digest(mirror), _tree_digest(packs))
    result = episode.run(
        "touch /opt/repogym/mirror/objects/evil 2>&1; ls /opt/repogym; "
        "for pack in .git/objects/pack/*; do chmod u+w $pack; echo evil >> $pack; done; "
        "git gc --prune=now 2>&1; git repack -ad 2>&1"
    )
    assert (_tree_digest(mirror), _tree_digest(packs)) == before
    assert "No such file or directory" in result.output and "mirror" not in result.output.split("\n", 1)[1]
    assert os.stat(next(packs.glob("*.pack"))).st_uid == os.getuid()  # the store's, not the sandbox uid's
    episode.reset()
    assert episode.run("git fsck --full 2>&1 && git log --oneline").ok


def test_write_to_pristine_checkout_through_workspace_leaves_it_intact(episode, toy_runtime):
    before = _tree_digest(toy_runtime.pristine)
    result = episode.run(
        "echo 'import os' > src/calc/__init__.py; rm -rf tests; git add -A; git commit -qm x"
    )
    assert result.exit_code == 0, result.output
    assert _tree_digest(toy_runtime.pristine) == before
    episode.reset()
    assert episode.run("cat src/calc/__init__.py").output.startswith("def add")


def test_read_host_environment_secret_fails(episode, monkeypatch):
    monkeypatch.setenv("REPOGYM_HOSTILE_SECRET", "env-secret-value")
    result = episode.run("env; cat /proc/1/environ | tr '\\0' '\\n'")
    assert "HOME=/tmp/home" in result.output, (
        result.output
    )  # `env` ran and printed the jail's own environment
    assert "env-secret-value" not in result.output
    assert "REPOGYM_HOSTILE_SECRET" not in result.output


def test_read_host_file_secret_fails(episode, host_secret):
    result = episode.run(
        f"cat {host_secret}; cat /root/.bash_history; ls /root; grep -rs TOP-SECRET /etc /opt /root /tmp | head",
        limits=Limits(wall_s=60),
    )
    # `cat` ran, at the host file's own path, and found nothing there: the host's /tmp is not the jail's.
    assert f"{host_secret}: No such file or directory" in result.output, result.output
    assert "TOP-SECRET-HOST-VALUE" not in result.output


def test_clean_environment_is_deterministic(episode):
    result = episode.run(
        "echo TZ=$TZ HASH=$PYTHONHASHSEED LANG=$LANG HOME=$HOME; python -c 'print(hash(\"abc\"))'"
    )
    lines = result.output.strip().splitlines()
    assert lines[0] == "TZ=UTC HASH=0 LANG=C.UTF-8 HOME=/tmp/home"
    again = episode.run("python -c 'print(hash(\"abc\"))'").output.strip()
    assert lines[1] == again


def test_fork_bomb_is_contained(episode):
    limits = Limits(wall_s=10, processes=64)
    started = time.monotonic()
    result = episode.run("bomb() { bomb | bomb & }; bomb; sleep 2; echo survived", limits=limits)
    assert time.monotonic() - started < 15
    assert result.exit_code is None or "fork" in result.output.lower() or "resource" in result.output.lower()
    # The machine still works, and nothing of the bomb is left running.
    assert episode.run("echo ok").output.strip() == "ok"
    assert "bomb" not in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout


def test_memory_hog_is_stopped(episode):
    limits = Limits(memory_mb=512, wall_s=30)
    result = episode.run("python -c 'x = bytearray(4 * 1024**3); print(len(x))'", limits=limits)
    assert result.exit_code != 0
    assert "MemoryError" in result.output


def test_busy_loop_hits_cpu_limit(episode):
    limits = Limits(cpu_s=1, wall_s=30)
    started = time.monotonic()
    result = episode.run("python -c 'while True: pass'", limits=limits)
    assert time.monotonic() - started < 10
    assert result.exit_code != 0


def test_sleep_past_timeout_is_killed(episode):
    started = time.monotonic()
    result = episode.run("sleep 60", limits=Limits(wall_s=1))
    assert result.timed_out and result.exit_code is None
    assert time.monotonic() - started < 5


def test_one_gigabyte_of_output_is_capped(episode):
    limits = Limits(output_bytes=64 * 1024, output_kill_bytes=8 * 1024 * 1024, wall_s=60)
    result = episode.run("yes 0123456789abcdef | head -c 1073741824", limits=limits)
    assert result.output_truncated
    assert len(result.output) < 80 * 1024
    assert result.output_total_bytes <= 8 * 1024 * 1024 + 65536
    assert result.reason.value == "output_limit"


def test_daemon_does_not_outlive_the_command(episode):
    marker = f"repogym-daemon-{uuid.uuid4().hex[:8]}"
    result = episode.run(
        f"(setsid sh -c 'exec -a {marker} sleep 300' &) ; nohup sh -c 'sleep 300' >/dev/null 2>&1 & echo started"
    )
    assert "started" in result.output
    time.sleep(0.3)
    processes = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert marker not in processes


def test_kill_the_parent_does_not_escape(episode):
    result = episode.run("kill -9 $PPID; kill -9 1; kill -9 -1; echo still-here")
    # Whatever the jail's own processes did to each other, the host runner is fine and can go on.
    assert episode.run("echo ok").output.strip() == "ok"
    assert result.duration_s < 10


def test_symlink_out_of_workspace_reads_nothing_of_the_host(episode, host_secret, toy_runtime):
    result = episode.run(f"ln -s {host_secret} leak.txt; ln -s /root root-link; cat leak.txt; ls root-link/")
    assert "TOP-SECRET-HOST-VALUE" not in result.output
    patch, _ = episode.diff()
    assert "TOP-SECRET-HOST-VALUE" not in patch
    assert "new file mode 120000" in patch  # recorded as a link, never followed
    assert host_secret.read_text() == "TOP-SECRET-HOST-VALUE\n"


def test_episode_git_tampering_does_not_change_reported_diff(episode):
    result = episode.run(
        "echo 'x = 1' >> src/calc/__init__.py; git add -A; git commit -qm hide; "
        "git config diff.external /bin/false; echo 'ref: refs/heads/nothing' > .git/HEAD"
    )
    assert result.exit_code == 0, result.output
    patch, _ = episode.diff()
    assert "+x = 1" in patch


def test_host_is_unchanged_after_hostile_run(toy_runtime, tmp_path):
    """A whole hostile session, then check the shared state is byte-for-byte what it was."""
    watched = [toy_runtime.pristine, toy_runtime.env.venv / "bin", toy_runtime.mirror_path]
    before = [_tree_digest(p) for p in watched]
    with toy_runtime.episode() as ep:
        ep.run("rm -rf /testbed/* /testbed/.git; chmod -R 000 /tmp; find / -writable 2>/dev/null | head -50")
    assert [_tree_digest(p) for p in watched] == before
    assert os.access(toy_runtime.pristine / "src" / "calc" / "__init__.py", os.R_OK)
