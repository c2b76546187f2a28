"""`repogym validate` end to end, as a user runs it."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from repogym.cli import app
from repogym.dataset import load_tasks, save_tasks
from repogym.testing import FAIL_TO_PASS, PASS_TO_PASS

RUNNER = CliRunner()
WIDE = {"COLUMNS": "200"}


def invoke(*args: str):
    return RUNNER.invoke(app, list(args), env=WIDE)


def test_validate_writes_tasks_and_funnel_then_resumes_without_scrubbing(candidates, tmp_path):
    candidates_file = tmp_path / "candidates.jsonl"
    save_tasks([candidates["exact"], candidates["python-3.5"]], candidates_file)
    out = tmp_path / "tasks.jsonl"

    first = invoke("validate", str(candidates_file), "--out", str(out), "-j", "2")
    assert first.exit_code == 1, first.output  # a stage that produces nothing says so and exits 1
    assert "env_build_failed" in first.stdout
    assert "license_unknown" in first.stdout  # the toy repository has no licence: scrubbed out
    assert "nothing produced: none of 2 candidate(s) became a task" in first.output
    assert not out.exists()  # no empty task file for the next stage to refuse
    funnel = json.loads((tmp_path / "tasks.jsonl.funnel.json").read_text())
    assert (funnel["candidates"], funnel["written"]) == (2, 0)

    second = invoke(
        "validate",
        str(candidates_file),
        "--out",
        str(out),
        "--no-scrub",
        "--funnel",
        str(tmp_path / "f.json"),
    )
    assert second.exit_code == 0, second.output
    assert "resuming: 2 candidate(s) already done" in second.output
    assert "privacy stage skipped" in second.stdout
    (task,) = load_tasks(out)
    assert (task.instance_id, task.FAIL_TO_PASS, task.PASS_TO_PASS) == ("exact", FAIL_TO_PASS, PASS_TO_PASS)
    assert json.loads((tmp_path / "f.json").read_text())["resumed"] == 2


def test_unknown_sandbox_is_a_one_line_error(candidates, tmp_path):
    candidates_file = tmp_path / "candidates.jsonl"
    save_tasks([candidates["exact"]], candidates_file)
    result = invoke(
        "validate", str(candidates_file), "--out", str(tmp_path / "t.jsonl"), "--sandbox", "docker"
    )
    assert result.exit_code == 2
    assert "unknown sandbox 'docker'" in result.output
    assert "Traceback" not in result.output
