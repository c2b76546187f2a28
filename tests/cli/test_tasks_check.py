"""`repogym tasks check`: gold and empty controls over a whole task file, a line per repository, resumable, every
saved log re-read by SWE-bench's own parser where it is installed (issue 28, item 5)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from repogym.dataset import save_tasks
from repogym.grading.swebench_reading import load_reader
from repogym.testing import make_toy_task, toy_patch


def check(*args: str) -> subprocess.CompletedProcess[str]:
    """The real entry point in a fresh process, as a shell runs it (the suite's cache kept)."""
    return subprocess.run(
        [sys.executable, "-c", "from repogym.cli import main; main()", "tasks", "check", *args],
        capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"}, timeout=900,
    )  # fmt: skip


@pytest.fixture(scope="module")
def toy_file(toy_task, tmp_path_factory) -> Path:
    """The toy task, and a second repository whose gold patch fixes nothing (its control must fail, named)."""
    weak = make_toy_task(tmp_path_factory.mktemp("weak"), instance_id="toy__weak-1")
    weak = dataclasses.replace(
        weak, repo="toy/weak", patch=toy_patch(weak, "README.md", "# calc\n\nStill wrong.\n")
    )
    path = tmp_path_factory.mktemp("check") / "tasks.jsonl"
    save_tasks([toy_task, weak], path)
    return path


def test_controls_per_repository_written_and_printed(toy_file, toy_task, tmp_path):
    out = tmp_path / "check"
    done = check(str(toy_file), "--out", str(out))
    assert done.returncode == 1, done.stderr  # the weak task's gold patch does not resolve
    report = json.loads((out / "report.json").read_text())
    rows = {row["repo"]: row for row in report["repos"]}
    calc, weak = rows["toy/calc"], rows["toy/weak"]
    assert (calc["graded"], calc["gold_resolves"], calc["empty_resolves"], calc["causes"]) == (1, 1, 0, {})
    assert (weak["graded"], weak["gold_resolves"], weak["causes"]) == (1, 0, {"gold UNRESOLVED": 1})
    assert calc["seconds"] > 0
    assert [row["instance_id"] for row in report["unexpected"]] == ["toy__weak-1"]
    markdown = (out / "report.md").read_text()
    assert "| repo | tasks | graded | gold resolves | empty resolves | named causes |" in markdown
    assert "| toy/weak | 1 | 1 | 0 | 0 | gold UNRESOLVED 1 |" in markdown
    assert "toy/calc" in done.stdout and "gold UNRESOLVED 1" in done.stdout
    # stderr is a pipe here, as in a log file or CI: one line per finished grade, since no bar draws there
    assert f"] {toy_task.instance_id} gold: RESOLVED" in done.stderr and "[4/4] " in done.stderr, done.stderr
    grades = [json.loads(line) for line in (out / "grades.jsonl").read_text().splitlines()]
    assert sorted((g["instance_id"], g["kind"]) for g in grades) == [
        (toy_task.instance_id, "empty"), (toy_task.instance_id, "gold"), ("toy__weak-1", "empty"), ("toy__weak-1", "gold"),
    ]  # fmt: skip
    for grade in grades:  # each control's whole log, kept in the run's folder
        assert Path(grade["log_path"]).is_relative_to(out / "logs")
        assert "tests/test_calc.py" in Path(grade["log_path"]).read_text()


def test_a_rerun_resumes_and_grades_nothing_again(toy_file, toy_task, tmp_path):
    out = tmp_path / "check"
    check(str(toy_file), "--out", str(out))
    again = check(str(toy_file), "--out", str(out), "--json")
    assert again.returncode == 1
    assert "resuming: 4 grades already" in again.stderr
    assert len((out / "grades.jsonl").read_text().splitlines()) == 4
    assert json.loads(again.stdout)["grades"] == 4
    only = check(str(toy_file), "--out", str(out), "--instance", toy_task.instance_id, "--json")
    assert only.returncode == 0, only.stderr  # the toy task alone: both controls as expected
    assert [row["repo"] for row in json.loads(only.stdout)["repos"]] == ["toy/calc"]


def test_swebench_sample_without_its_repositories_names_the_cause(swebench_sample_path, tmp_path):
    """SWE-bench's rows as published, none of whose repositories is here: every control an INFRA_ERROR that
    says so, one line per repository, no traceback."""
    (tmp_path / "repos").mkdir()
    done = check(str(swebench_sample_path), "--out", str(tmp_path / "out"), "--repos-dir", str(tmp_path / "repos"),
                 "--json")  # fmt: skip
    assert done.returncode == 1 and "Traceback" not in done.stderr
    report = json.loads(done.stdout)
    assert {row["repo"] for row in report["repos"]} == {
        "pallets/flask",
        "psf/requests",
        "sympy/sympy",
        "django/django",
    }
    for row in report["repos"]:
        assert row["causes"] == {"empty INFRA_ERROR": 1, "gold INFRA_ERROR": 1}
    assert all("no repository for" in row["detail"] for row in report["unexpected"])


def test_an_unknown_repository_is_refused_naming_the_known_ones(toy_file, tmp_path):
    done = check(str(toy_file), "--out", str(tmp_path / "out"), "--repo", "toy/nosuch")
    assert done.returncode == 2 and "toy/calc" in done.stderr and "Traceback" not in done.stderr


def test_without_swebench_the_report_says_how_to_get_it(toy_file, toy_task, tmp_path):
    reader, why = load_reader()
    if reader is not None:
        pytest.skip("SWE-bench is installed here: test_swebench_reads_every_saved_log covers it")
    done = check(str(toy_file), "--out", str(tmp_path / "out"), "--instance", toy_task.instance_id, "--json")
    report = json.loads(done.stdout)
    assert report["swebench"] is None and report["swebench_missing"] == why
    assert "repogym[swebench]" in report["swebench_missing"]


def test_swebench_reads_every_saved_log(toy_task, tmp_path):
    """With the swebench package installed: its own parser for the repository (flask's is pytest's -rA reader)
    and its FULL rule read each saved log, and agree with repogym's verdicts."""
    pytest.importorskip("swebench")
    as_flask = dataclasses.replace(toy_task, repo="pallets/flask", instance_id="pallets__flask-toy")
    save_tasks([as_flask], tmp_path / "tasks.jsonl")
    done = check(str(tmp_path / "tasks.jsonl"), "--out", str(tmp_path / "out"), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["swebench"] and report["swebench_missing"] == ""
    (row,) = report["repos"]
    assert (row["swebench_read"], row["swebench_agrees"]) == (2, 2)
