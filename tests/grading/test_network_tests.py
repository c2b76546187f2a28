"""Tests that need the network are named (TESTS_NEED_NETWORK), and the grader's opt-in (`allow_network`) alone
opens the test run's network, saying so in the grade and the batch report (issue 28: requests' tests call
httpbin.org, and were a silent UNRESOLVED)."""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import threading
from pathlib import Path

import pytest

from repogym.dataset import TaskSet
from repogym.grading.batch import grade_predictions
from repogym.grading.grade import grade
from repogym.grading.report import Outcome, ResolvedStatus, TestStatus
from repogym.hostgit import git
from repogym.predictions import Prediction
from repogym.task import EnvSpec
from repogym.testing import make_toy_task

_GIT = {"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "T",
        "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_GLOBAL": os.devnull}  # fmt: skip
NET_TESTS = """import os
import socket


def test_reaches_the_probe():
    with socket.create_connection(("127.0.0.1", int(os.environ["PROBE_PORT"])), timeout=5) as conn:
        conn.sendall(b"ping")
        assert conn.recv(4) == b"pong"


def test_reaches_a_public_address():
    socket.create_connection(("192.0.2.1", 80), timeout=3).close()  # TEST-NET-1: never a local address
"""
PROBE = "tests/test_net.py::test_reaches_the_probe"
PUBLIC = "tests/test_net.py::test_reaches_a_public_address"


class Probe:
    """A TCP server on the host's loopback that answers "pong" and counts who reached it."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                conn.recv(4)
                conn.sendall(b"pong")

    def close(self) -> None:
        self.server.close()


@pytest.fixture(scope="module")
def probe():
    server = Probe()
    yield server
    server.close()


@pytest.fixture(scope="module")
def net_task(toy_task, tmp_path_factory, probe):
    """The toy project with a test file that dials out; its environment is the suite's cached toy one."""
    task = make_toy_task(tmp_path_factory.mktemp("net"), instance_id="toy__calc-net")
    repo = Path(task.repo_source)
    (repo / "tests" / "test_net.py").write_text(NET_TESTS)
    git(repo, "add", "tests/test_net.py", env=_GIT)
    git(repo, "commit", "-q", "-m", "tests that dial out", env=_GIT)
    return dataclasses.replace(
        task,
        base_commit=git(repo, "rev-parse", "HEAD", env=_GIT).strip(),
        env=EnvSpec(test_env={"PROBE_PORT": str(probe.port)}),
    )


def test_tests_that_dial_a_public_address_are_named_not_a_silent_unresolved(net_task):
    task = dataclasses.replace(net_task, FAIL_TO_PASS=[*net_task.FAIL_TO_PASS, PUBLIC])
    result = grade(task, task.patch)
    assert result.outcome is Outcome.TESTS_NEED_NETWORK and not result.resolved
    assert result.status is ResolvedStatus.PARTIAL  # as judged: test_add passed, the public one did not
    assert result.fail_to_pass[PUBLIC] is TestStatus.FAILED
    assert "Network is unreachable" in result.detail and "--allow-network" in result.detail
    assert result.network_open is False and result.to_dict()["network_open"] is False


def test_a_failure_without_a_network_attempt_stays_unresolved(net_task):
    result = grade(net_task, "")
    assert result.outcome is Outcome.UNRESOLVED


def test_grading_network_closed_by_default(net_task, probe):
    """The hole: a test run that reaches the host's services or the internet (another tenant's server, a
    forged report fetched from outside). Every test run's network namespace is closed unless the grader
    opts in; the probe on the host's loopback proves the opt-in path would reach it."""
    task = dataclasses.replace(net_task, FAIL_TO_PASS=[PROBE])
    before = probe.connections
    closed = grade(task, task.patch)
    assert closed.outcome is not Outcome.RESOLVED and closed.fail_to_pass[PROBE] is not TestStatus.PASSED
    assert probe.connections == before
    assert closed.network_open is False
    opened = grade(task, task.patch, allow_network=True)
    assert opened.outcome is Outcome.RESOLVED, opened.detail
    assert probe.connections > before
    assert opened.network_open is True and opened.to_dict()["network_open"] is True


def test_batch_report_states_the_open_network(net_task, tmp_path):
    task = dataclasses.replace(net_task, FAIL_TO_PASS=[PROBE])
    out = tmp_path / "report.json"
    grade_predictions(
        TaskSet([task]), [Prediction(task.instance_id, "gold", task.patch)], out, allow_network=True
    )
    report = json.loads(out.read_text())
    assert report["test_network"] == "open" and report["network_open_ids"] == [task.instance_id]
    assert report["resolved_ids"] == [task.instance_id]
