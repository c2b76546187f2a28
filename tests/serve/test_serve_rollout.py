"""Done-when: `repogym serve` on a tiny local model, `repogym rollout --policy openai:...` against it, end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from typer.testing import CliRunner

from repogym.cli import app
from repogym.dataset import save_tasks

SERVE = "from repogym.cli import main; main()"


def test_rollout_through_the_served_model_records_every_attempt(tmp_path, tiny_model, toy_task):
    server = subprocess.Popen(
        [sys.executable, "-c", SERVE, "serve", str(tiny_model), "--port", "0", "--name", "tiny"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    try:
        line = server.stdout.readline()  # "serving tiny at http://127.0.0.1:PORT/v1"
        assert line.startswith("serving tiny at http://127.0.0.1:"), line
        base_url = line.split(" at ", 1)[1].strip()
        tasks = tmp_path / "tasks.jsonl"
        save_tasks([toy_task], tasks)
        out = tmp_path / "out"
        result = CliRunner().invoke(
            app,
            ["rollout", str(tasks), "--policy", "openai:tiny", "--base-url", base_url, "-n", "2", "-j", "2",
             "--max-steps", "2", "--reply-tokens", "8", "--temperature", "1.0", "--seed", "3", "--out", str(out),
             "--json"],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
    finally:
        server.terminate()
        server.wait(timeout=30)
    summary = json.loads(result.stdout[result.stdout.index("{") :])
    assert summary["attempts"] == 2 and summary["graded_now"] == 2
    # The summary says how the client was set up and what the server went through.
    endpoint = summary["endpoint"]
    assert (endpoint["base_url"], endpoint["timeout_s"], endpoint["max_retries"]) == (base_url, 120.0, 4)
    assert endpoint["requests"] >= 2 and endpoint["timeouts"] == 0
    assert (
        endpoint["server"]["server"] == "repogym" and endpoint["server"]["completed"] == endpoint["requests"]
    )
    assert endpoint["server"]["cancelled"] == 0 and endpoint["server"]["state"] == "idle"
    rows = [json.loads(line) for shard in out.glob("*.jsonl") for line in shard.read_text().splitlines()]
    assert sorted(r["attempt"] for r in rows) == [0, 1]
    assert sorted(r["sampling"]["seed"] for r in rows) == [3, 4]  # attempt k samples with seed + k
    for row in rows:
        # A random 1.4M-parameter model does not fix bugs; what matters is that the attempt ran and was kept.
        assert row["policy_id"] == "openai:tiny" and row["outcome"] in ("max_steps", "submitted")
        assert row["grade"] is not None and row["sampling"]["temperature"] == 1.0
        assert row["prompt_tokens"] > 0 and 2 <= len(row["steps"]) <= 2
        assert [m["role"] for m in row["messages"]][:3] == ["system", "user", "assistant"]


def test_rollout_with_the_local_hf_policy_batches_attempts_in_one_process(tmp_path, tiny_model, toy_task):
    tasks = tmp_path / "tasks.jsonl"
    save_tasks([toy_task], tasks)
    out = tmp_path / "out"
    args = ["rollout", str(tasks), "--policy", f"hf:{tiny_model}", "-n", "2", "-j", "2", "--max-steps", "1",
            "--reply-tokens", "4", "--out", str(out), "--json"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for shard in out.glob("*.jsonl") for line in shard.read_text().splitlines()]
    assert sorted(r["attempt"] for r in rows) == [0, 1]
    for row in rows:
        assert row["policy_id"] == f"hf:{tiny_model.name}" and row["outcome"] == "max_steps"
        step = row["steps"][0]
        assert 1 <= step["completion_tokens"] <= 4 and len(step["logprobs"]) == step["completion_tokens"]


def test_a_rollout_whose_every_attempt_is_unreachable_says_so_and_exits_1(tmp_path, toy_task):
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    tasks = tmp_path / "tasks.jsonl"
    save_tasks([toy_task], tasks)
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        ["rollout", str(tasks), "--policy", "openai:tiny", "--base-url", f"http://127.0.0.1:{port}/v1",
         "-n", "2", "--max-retries", "0", "--timeout-s", "7", "--out", str(out)],
        env={"COLUMNS": "200"},
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "produced nothing: none of the 2 attempt(s) run now reached grading" in result.output
    assert "the first said policy_unreachable: cannot reach" in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["outcomes"] == {"policy_unreachable": 2} and summary["graded_now"] == 0
    endpoint = summary["endpoint"]
    assert (endpoint["timeout_s"], endpoint["max_retries"], endpoint["requests"]) == (7, 0, 2)
    assert endpoint["server"] is None  # nothing answered /health
