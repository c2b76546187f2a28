"""`repogym rollout --executor ray --ray-address ADDR` against a real two-node Ray cluster on this machine (two
raylets, each with its own worker processes and sandboxes): the same outcomes as the local executor, and the
attempts ran on both nodes. The cluster is this test's own (tests/support/ray_cluster.py) and only it is stopped."""

from __future__ import annotations

import subprocess
import sys

import pytest

from repogym.agent.policies import PolicyConfig
from repogym.dataset import save_tasks
from repogym.rollout.run import RolloutConfig, run_rollout
from repogym.rollout.store import load_trajectories

from ..support.ray_cluster import SECOND_NODE, local_cluster, ray_environment

pytestmark = pytest.mark.slow  # two `ray start`s and a rollout on them: about 30 s


@pytest.fixture(scope="module")
def two_nodes(toy_task):
    """The cluster, started after toy_task has set REPOGYM_CACHE, which its nodes' workers inherit (a real
    cluster's nodes each have their own cache: docs/ray.md)."""
    pytest.importorskip("ray")
    with local_cluster(worker_nodes=1, cpus_per_node=1) as cluster:
        yield cluster
    assert not cluster.leftovers(), "a process of the test's cluster outlived its stop"


def test_a_rollout_on_two_nodes_gives_the_local_outcomes_and_uses_both_nodes(tmp_path, toy_task, two_nodes):
    tasks = tmp_path / "tasks.jsonl"
    # A task whose repository is gone fails to build at once: a failure outcome must cross the cluster too.
    gone = toy_task.replace(instance_id="toy__calc-gone", repo_source=str(tmp_path / "no-such-repo"))
    save_tasks([toy_task, gone], tasks)
    run_rollout(
        RolloutConfig(tasks=str(tasks), policy=PolicyConfig(spec="scripted:gold"), out=str(tmp_path / "local"),
                      n=3, jobs=2, executor="local")
    )  # fmt: skip
    command = [
        sys.executable, "-c", "from repogym.cli import main; main()", "rollout", str(tasks),
        "--policy", "scripted:gold", "-n", "3", "-j", "2", "--executor", "ray",
        "--ray-address", two_nodes.address, "--out", str(tmp_path / "ray"),
    ]  # fmt: skip
    finished = subprocess.run(command, env=ray_environment(), capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stdout + finished.stderr

    def outcomes(folder: str) -> dict:
        return {
            t.key: (t.outcome, t.resolved, t.reward, t.grade_outcome)
            for t in load_trajectories(tmp_path / folder)
        }

    on_cluster = outcomes("ray")
    assert on_cluster == outcomes("local")
    assert sorted(o[0].value for o in on_cluster.values()) == ["env_build_failed"] * 3 + ["submitted"] * 3
    ran_on = {t.metadata["ray_node"] for t in load_trajectories(tmp_path / "ray")}
    nodes = two_nodes.nodes()
    assert ran_on == set(nodes) and len(nodes) == 2  # both nodes of this cluster, and nothing else
    assert sum(SECOND_NODE in nodes[node] for node in ran_on) == 1
