"""A Ray cluster of real nodes on this machine, for tests and benchmarks: a head and worker nodes, each one
`ray start` whose daemons (GCS, raylet, agents, workers) live in that command's own process group, all under a
private temp dir and on ports picked free here.

It is stopped by killing those process groups, then any process left whose command line names the private
temp dir: never `ray stop`, which ends every Ray process of the machine, other people's clusters included.
(`ray.cluster_utils.Cluster` would start the nodes in-process, but it writes and later deletes the machine's
shared `/tmp/ray/ray_current_cluster`, the file a bare `ray.init()` of anyone else reads to find a cluster.)

Ray resolves `--node-ip-address=127.0.0.1` to the machine's own address (`resolve_ip_for_localhost`), so the
nodes register under it; the GCS listens on every interface and is reached here at 127.0.0.1:port.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

#: The custom resource of the second node: a task can ask for it, and the node list shows which node is which.
SECOND_NODE = "repogym_second_node"

_NODES_SCRIPT = (
    "import json, sys, ray\n"
    "ray.init(address=sys.argv[1], include_dashboard=False, log_to_driver=False)\n"
    "print(json.dumps({n['NodeID']: n['Resources'] for n in ray.nodes() if n['Alive']}))\n"
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def ray_environment() -> dict[str, str]:
    """This process's environment as a cluster's processes and its drivers need it: no auth token written to
    ~/.ray, no usage report, no inherited address, and Ray's multi-node switch left at its default (the local
    Ray of `RayExecutor` turns it off in this process's environment, which would make a worker node refuse)."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "RAY_ADDRESS")
    }
    env.update(RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0")
    return env


@dataclass
class LocalCluster:
    """A running cluster: `address` is what `--ray-address` takes."""

    address: str
    temp_dir: Path
    groups: list[int] = field(default_factory=list)
    """The process group of each node (its `ray start`'s pid), head first."""

    def nodes(self) -> dict[str, dict[str, float]]:
        """Alive node id -> its resources, as the GCS lists them (asked by a short driver of its own)."""
        listed = subprocess.run(
            [sys.executable, "-c", _NODES_SCRIPT, self.address],
            env=ray_environment(), capture_output=True, text=True, timeout=120, check=True,
        )  # fmt: skip
        return json.loads(listed.stdout.strip().splitlines()[-1])

    def stop(self) -> None:
        """Kill this cluster's processes (workers first, then the head), and remove its temp dir."""
        for group in reversed(self.groups):
            _kill_group(group)
        for pid in _pids_naming(self.temp_dir):  # anything that left the groups still names our temp dir
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.temp_dir, ignore_errors=True)

    def leftovers(self) -> list[int]:
        """Pids of live processes that still name this cluster's temp dir (none once stopped)."""
        return _pids_naming(self.temp_dir)


@contextmanager
def local_cluster(worker_nodes: int = 1, cpus_per_node: int = 1) -> Iterator[LocalCluster]:
    """A head and `worker_nodes` worker nodes of `cpus_per_node` CPUs each; the first worker node carries
    the `SECOND_NODE` resource. Stopped on exit, whatever happened."""
    # Short: Ray puts unix sockets under it, and a socket path must fit in 107 bytes.
    temp_dir = Path(tempfile.mkdtemp(prefix="rg-ray-", dir="/tmp"))
    port = free_port()
    cluster = LocalCluster(f"127.0.0.1:{port}", temp_dir)
    try:
        head = [
            "--head", f"--port={port}", "--include-dashboard=false", f"--dashboard-port={free_port()}",
            f"--ray-client-server-port={free_port()}",
        ]  # fmt: skip
        cluster.groups.append(_start_node(head, temp_dir, cpus_per_node, {}))
        for index in range(worker_nodes):
            resources = {SECOND_NODE: 1.0} if index == 0 else {}
            cluster.groups.append(
                _start_node([f"--address={cluster.address}"], temp_dir, cpus_per_node, resources)
            )
        yield cluster
    finally:
        cluster.stop()


def _start_node(role: list[str], temp_dir: Path, cpus: int, resources: dict[str, float]) -> int:
    """Start one node; returns its process group (the `ray start` exits once the node is up, its daemons stay)."""
    ray = Path(sys.executable).with_name("ray")
    command = [
        str(ray), "start", *role, "--node-ip-address=127.0.0.1", f"--temp-dir={temp_dir}",
        f"--num-cpus={cpus}", "--num-gpus=0", f"--resources={json.dumps(resources)}", "--disable-usage-stats",
        f"--dashboard-agent-listen-port={free_port()}", "--min-worker-port=0", "--max-worker-port=0",
        "--object-store-memory=100000000",
    ]  # fmt: skip
    process = subprocess.Popen(
        command, env=ray_environment(), start_new_session=True, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        output, _ = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        _kill_group(process.pid)
        raise RuntimeError(f"`ray start {' '.join(role)}` did not finish in 120 s") from None
    if process.returncode != 0:
        _kill_group(process.pid)
        raise RuntimeError(f"`ray start {' '.join(role)}` failed ({process.returncode}):\n{output[-3000:]}")
    return process.pid


def _kill_group(group: int, grace_s: float = 3.0) -> None:
    """SIGTERM the group, SIGKILL what is left after `grace_s` (a raylet can take long to drain)."""
    try:
        os.killpg(group, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    with suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)


def _pids_naming(temp_dir: Path) -> list[int]:
    marker = str(temp_dir).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found
