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


def test_an_env_file_is_named_on_the_console_and_in_the_task_and_the_summary_counts_environments(
    candidates, tmp_path
):
    candidates_file = tmp_path / "candidates.jsonl"
    save_tasks([candidates["exact"]], candidates_file)
    env_file = tmp_path / "overrides.toml"
    env_file.write_text('[[env.when]]\nrepo = "toy/*"\ntest_env = { CALC_MODE = "strict" }\n')
    out = tmp_path / "tasks.jsonl"
    done = invoke(
        "validate", str(candidates_file), "--out", str(out), "--no-scrub", "--env-file", str(env_file)
    )
    assert done.exit_code == 0, done.output
    assert f"env file {env_file}: applied to 1 candidate(s)" in done.stdout
    assert "environments: 1 distinct" in done.stdout
    (task,) = load_tasks(out)
    assert task.env.test_env == {"CALC_MODE": "strict"}
    assert task.metadata["env_rules"] == [f"{env_file} [[env.when]] #1"]
    funnel = json.loads((tmp_path / "tasks.jsonl.funnel.json").read_text())
    assert funnel["environments"]["distinct"] == 1 and funnel["environments"]["disk_mb"] > 1
    assert funnel["env_files"] == {str(env_file): 1}


def test_a_bad_env_file_names_the_rule_and_key_and_exits_2(candidates, tmp_path):
    candidates_file = tmp_path / "candidates.jsonl"
    save_tasks([candidates["exact"]], candidates_file)
    env_file = tmp_path / "overrides.toml"
    env_file.write_text('[[env.when]]\npyhton = "3.9"\n')
    done = invoke(
        "validate", str(candidates_file), "--out", str(tmp_path / "t.jsonl"), "--env-file", str(env_file)
    )
    assert done.exit_code == 2
    assert f"{env_file} [[env.when]] #1: unknown key(s) ['pyhton']" in done.output
