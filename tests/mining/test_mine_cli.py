"""`repogym mine` as a user runs it: files written, the funnel table, flags, and errors as one line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from repogym.cli import app, common
from repogym.dataset import load_tasks

RUNNER = CliRunner()


@pytest.fixture(autouse=True)
def wide_console(monkeypatch):
    for console in (common.console, common.err_console):
        monkeypatch.setattr(console, "_width", 200)


def _history(repo) -> list[str]:
    shas = []
    for n in range(1, 4):
        repo.write("pkg/calc.py", f"def add(a, b):\n    return a + b + {n}\n")
        repo.write("tests/test_calc.py", f"def test_add():\n    assert {n}\n")
        shas.append(repo.commit(f"Fix add, take {n}"))
    repo.write("docs/guide.md", "Guide\n").commit("docs: guide")
    return shas


def test_mine_writes_candidates_and_funnel_and_prints_the_table(repo, tmp_path, write_export) -> None:
    shas = _history(repo)
    export = write_export([{"number": 4, "title": "Take three", "body": "", "merge_commit_sha": shas[2]}])
    out, funnel = tmp_path / "candidates.jsonl", tmp_path / "funnel.json"

    result = RUNNER.invoke(
        app, ["mine", str(repo.path), "--out", str(out), "--funnel", str(funnel), "--prs", str(export),
              "--repo-name", "acme/calc", "--max", "2"],
    )  # fmt: skip

    assert result.exit_code == 0, result.output
    tasks = load_tasks(out)
    assert tasks.ids() == ["acme__calc-4", f"acme__calc-{shas[1][:12]}"]
    assert tasks.get("acme__calc-4").problem_statement == "Take three\n"
    report = json.loads(funnel.read_text())
    assert report["scanned"] == 5 and report["written"] == 2
    assert {step["name"]: step["count"] for step in report["steps"]}["over_max"] == 1
    for text in ("mining funnel", "docs_only", "over_max", "wrote 2 candidates"):
        assert text in result.output


def test_since_until_branch_and_config_file(repo, tmp_path) -> None:
    shas = _history(repo)
    config = tmp_path / "mining.yaml"
    config.write_text("max_files: 1\nskip_filters: [docs_only]\n", encoding="utf-8")
    out = tmp_path / "c.jsonl"

    result = RUNNER.invoke(
        app, ["mine", str(repo.path), "-o", str(out), "--since", "2024-01-01T03:00:00Z", "--until", "2024-01-01",
              "--branch", "main", "--config", str(config), "--set", "max_lines=50", "--json"],
    )  # fmt: skip

    assert result.exit_code == 0, result.output
    assert [t.metadata["mining"]["commit"] for t in load_tasks(out)] == [shas[2], shas[1]]
    report = json.loads(result.output)
    assert report["scanned"] == 3  # commits from 03:00 on: two fixes and the docs commit
    steps = {step["name"]: step for step in report["steps"]}
    assert "switched off" in steps["docs_only"]["description"] and steps["no_python_change"]["count"] == 1


def _run_main(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from repogym.cli import main; main()", *args],
        capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "COLUMNS": "200"}, timeout=60,
    )  # fmt: skip


def test_user_errors_name_what_is_wrong(repo, tmp_path) -> None:
    _history(repo)
    out = str(tmp_path / "c.jsonl")
    cases = {
        ("--branch", "nope"): "no commit named 'nope'",
        ("--since", "last week"): "since: Value error, expected an ISO date",
        ("--set", "skip_filters=[no_tests]"): "unknown filter(s) ['no_tests']",
    }
    for flags, message in cases.items():
        result = RUNNER.invoke(app, ["mine", str(repo.path), "--out", out, *flags], env={"COLUMNS": "300"})
        assert result.exit_code == 2 and message in result.output, (flags, result.output)
    result = RUNNER.invoke(app, ["mine", str(tmp_path), "--out", out], env={"COLUMNS": "300"})
    assert result.exit_code == 2 and "not a git repository" in result.output


def test_the_real_entry_point_prints_one_line_and_exits_2(repo, tmp_path) -> None:
    done = _run_main("mine", str(repo.path), "--out", str(tmp_path / "c.jsonl"), "--branch", "nope")
    assert done.returncode == 2
    assert "no commit named 'nope'" in done.stderr and "Traceback" not in done.stderr
