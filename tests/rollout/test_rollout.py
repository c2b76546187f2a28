"""`repogym rollout` end to end on real tasks and sandboxes: outcomes, resumption, SIGKILL, --keep, Ray."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from repogym.agent.policies import PolicyConfig
from repogym.cli import app
from repogym.dataset import save_tasks
from repogym.rollout.run import RolloutConfig, run_rollout
from repogym.rollout.store import TrajectoryStore, load_trajectories
from repogym.testing import FIXED_SOURCE


def rollout(*args: str):
    return CliRunner().invoke(app, ["rollout", *args], catch_exceptions=False)


def rows(out) -> list[dict]:
    return [
        json.loads(line) for shard in sorted(out.glob("*.jsonl")) for line in shard.read_text().splitlines()
    ]


def test_scripted_gold_resolves_every_sample_task(tmp_path, sample_tasks, toy_task):
    tasks = tmp_path / "tasks.jsonl"
    save_tasks([toy_task, *sample_tasks], tasks)
    result = rollout(
        str(tasks), "--policy", "scripted:gold", "-n", "1", "-j", "2", "--out", str(tmp_path / "out")
    )
    assert result.exit_code == 0, result.output
    assert "resolve rate" in result.output and "100.0% (4/4)" in result.output
    stored = rows(tmp_path / "out")
    assert sorted(r["instance_id"] for r in stored) == sorted(
        t.instance_id for t in [toy_task, *sample_tasks]
    )
    assert all(r["resolved"] and r["outcome"] == "submitted" and r["attempt"] == 0 for r in stored)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["resolve_rate"] == 1.0 and summary["mean_components"]["tests_pass"] == 1.0


def test_failures_are_recorded_outcomes_and_the_run_goes_on(tmp_path, toy_task, broken_env_task):
    tasks = tmp_path / "tasks.jsonl"
    save_tasks([toy_task, broken_env_task], tasks)
    summary = run_rollout(
        RolloutConfig(
            tasks=str(tasks), out=str(tmp_path / "out"), n=2, jobs=2,
            policy=PolicyConfig(spec="openai:nothing-there", base_url="http://127.0.0.1:9/v1", max_retries=0),
        )
    )  # fmt: skip
    assert summary.attempts == 4 and summary.resolved == 0
    assert summary.outcomes == {"policy_unreachable": 2, "env_build_failed": 2}
    datasets = pytest.importorskip("datasets")  # rows of every shape (no grade, no messages) load together
    loaded = datasets.load_dataset("json", data_files=str(tmp_path / "out" / "*.jsonl"), split="train")
    assert sorted(loaded["outcome"]) == ["env_build_failed"] * 2 + ["policy_unreachable"] * 2
    by_id = {(t.instance_id, t.attempt): t for t in load_trajectories(tmp_path / "out")}
    assert "cannot reach http://127.0.0.1:9/v1" in by_id[("toy__calc-1", 0)].detail
    assert by_id[("toy__calc-broken", 1)].detail  # the build error, in words


def test_keep_resolved_writes_only_successes_and_resumes_without_redoing_failures(tmp_path, toy_task):
    other = toy_task.replace(instance_id="toy__calc-2")
    tasks = tmp_path / "tasks.jsonl"
    save_tasks([toy_task, other], tasks)
    script = tmp_path / "script.jsonl"
    fix = {"name": "create_file", "arguments": {"path": "src/calc/__init__.py", "text": FIXED_SOURCE}}
    script.write_text(
        json.dumps({"instance_id": "toy__calc-1", "actions": [fix, "submit()"]}) + "\n"
        + json.dumps({"actions": ["submit()"]}) + "\n"
    )  # fmt: skip
    args = [
        str(tasks),
        "--policy",
        f"scripted:{script}",
        "-n",
        "2",
        "--keep",
        "resolved",
        "--out",
        str(tmp_path / "o"),
    ]
    first = rollout(*args)
    assert first.exit_code == 0, first.output
    assert sorted((r["instance_id"], r["attempt"]) for r in rows(tmp_path / "o")) == [
        ("toy__calc-1", 0), ("toy__calc-1", 1)]  # fmt: skip
    again = rollout(*args)
    assert "resuming: 4 attempt(s) already" in again.output and "4 (0 / 4)" in again.output
    assert len(rows(tmp_path / "o")) == 2


def test_sigkill_mid_run_then_rerun_gives_exactly_one_trajectory_per_attempt(tmp_path, toy_task):
    tasks = tmp_path / "tasks.jsonl"
    save_tasks([toy_task], tasks)
    out = tmp_path / "out"
    command = [sys.executable, "-c", "from repogym.cli import main; main()", "rollout", str(tasks),
               "--policy", "scripted:gold", "-n", "8", "-j", "2", "--out", str(out)]  # fmt: skip
    process = subprocess.Popen(
        command, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    ledger = out / ".ledger"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if ledger.exists() and len(ledger.read_text().splitlines()) >= 2:
            break
        time.sleep(0.02)
    assert process.poll() is None, "the run finished before it could be killed"
    os.killpg(process.pid, signal.SIGKILL)  # the whole session: rollout, its sandboxes, everything
    process.wait()
    killed_with = len(ledger.read_text().splitlines())
    assert 2 <= killed_with < 8
    finished = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    keys = [(r["instance_id"], r["attempt"]) for r in rows(out)]
    assert sorted(keys) == [("toy__calc-1", a) for a in range(8)]  # none lost, none twice
    assert all(r["resolved"] for r in rows(out))
    with TrajectoryStore(out) as store:
        assert len(list(store.ledger_rows())) == 8


def test_configuration_errors_stop_the_run_before_it_starts(tmp_path, toy_task):
    tasks = tmp_path / "tasks.jsonl"
    save_tasks([toy_task], tasks)
    out = tmp_path / "out"
    for args, message in [
        (["--policy", "gpt:4"], "unknown backend 'gpt'"),
        (["--policy", "openai:m"], "give --base-url"),
        (["--policy", "scripted:gold", "--keep", "best"], "--keep 'best'"),
        (["--policy", "scripted:gold", "--executor", "slurm"], "unknown executor 'slurm'"),
        (["--policy", "scripted:gold", "-i", "toy__calc-9"], "toy__calc-9"),
    ]:
        result = CliRunner().invoke(app, ["rollout", str(tasks), "-n", "1", "--out", str(out), *args])
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output
        assert not list(out.glob("*.jsonl"))
    assert rollout(str(tasks), "--policy", "scripted:gold", "--out", str(out)).exit_code == 0
    changed = CliRunner().invoke(app, ["rollout", str(tasks), "--policy", "human", "--out", str(out)])
    assert changed.exit_code == 2 and "holds a run with other settings" in changed.output


def test_ray_executor_gives_the_same_outcomes_as_local(tmp_path, toy_task, monkeypatch):
    pytest.importorskip("ray")
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    tasks = tmp_path / "tasks.jsonl"
    # A task whose repository is gone fails to build at once (a failing install would cost seconds per worker).
    gone = toy_task.replace(instance_id="toy__calc-gone", repo_source=str(tmp_path / "no-such-repo"))
    save_tasks([toy_task, gone], tasks)

    def outcomes(executor: str) -> dict:
        config = RolloutConfig(tasks=str(tasks), policy=PolicyConfig(spec="scripted:gold"),
                               out=str(tmp_path / executor), n=2, jobs=2, executor=executor)  # fmt: skip
        run_rollout(config)
        return {
            t.key: (t.outcome, t.resolved, t.reward, t.grade_outcome)
            for t in load_trajectories(tmp_path / executor)
        }

    local, on_ray = outcomes("local"), outcomes("ray")
    assert on_ray == local
    assert sorted(o[0].value for o in on_ray.values()) == ["env_build_failed"] * 2 + ["submitted"] * 2
    workers = {t.metadata["worker"] for t in load_trajectories(tmp_path / "ray") if "worker" in t.metadata}
    assert all(
        w and int(w.rsplit(":", 1)[1]) != os.getpid() for w in workers
    )  # ran in Ray's worker processes
