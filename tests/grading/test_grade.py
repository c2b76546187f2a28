"""grade() on a real repository under bwrap: gold resolves, empty and wrong do not, every failure is named."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from repogym.dataset import save_tasks
from repogym.grading.grade import grade
from repogym.grading.report import Outcome, ResolvedStatus, TestStatus
from repogym.task import EnvSpec
from repogym.testing import BUGGY_SOURCE, FIXED_SOURCE, toy_patch

from ..support.git import clone

ADD, MUL = "tests/test_calc.py::test_add", "tests/test_calc.py::test_mul"


def test_gold_patch_resolves(toy_task, toy_runtime):
    result = grade(toy_task, toy_task.patch, runtime=toy_runtime)
    assert result.outcome is Outcome.RESOLVED and result.status is ResolvedStatus.FULL
    assert result.fail_to_pass == {ADD: TestStatus.PASSED}
    assert all(s is TestStatus.PASSED for s in result.pass_to_pass.values())
    assert result.patch_applied_with == "git apply"
    assert result.compile_errors == ()


def test_empty_patch_does_not_resolve(toy_task, toy_runtime):
    result = grade(toy_task, "", runtime=toy_runtime)
    assert result.outcome is Outcome.UNRESOLVED and result.status is ResolvedStatus.NO
    assert result.fail_to_pass == {ADD: TestStatus.FAILED}
    assert result.pass_to_pass[MUL] is TestStatus.PASSED


def test_wrong_patch_breaking_pass_to_pass_does_not_resolve(toy_task, toy_runtime):
    wrong = FIXED_SOURCE.replace("return a * b", "return a + b")
    result = grade(toy_task, toy_patch(toy_task, "src/calc/__init__.py", wrong), runtime=toy_runtime)
    assert result.outcome is Outcome.UNRESOLVED
    assert result.fail_to_pass[ADD] is TestStatus.PASSED
    assert result.pass_to_pass[MUL] is TestStatus.FAILED
    assert result.status is ResolvedStatus.NO


def test_patch_that_does_not_compile_is_reported(toy_task, toy_runtime):
    broken = BUGGY_SOURCE.replace("return a - b", "return a +")
    result = grade(toy_task, toy_patch(toy_task, "src/calc/__init__.py", broken), runtime=toy_runtime)
    assert not result.resolved
    assert result.compile_errors and "src/calc/__init__.py" in result.compile_errors[0]


def test_patch_that_does_not_apply_is_named(toy_task, toy_runtime):
    stale = toy_task.patch.replace("-    return a - b", "-    return a * 2 - b")
    result = grade(toy_task, stale, runtime=toy_runtime)
    assert result.outcome is Outcome.PATCH_APPLY_FAILED
    assert "git apply" in result.detail


def test_offset_patch_needs_fuzzier_apply_and_says_so(toy_task, toy_runtime):
    # Same change, but its context lines have drifted: git apply refuses, patch --fuzz applies.
    drifted = toy_task.patch.replace(" def mul(a, b):", " def mul(a, b, c=1):")
    result = grade(toy_task, drifted, runtime=toy_runtime)
    assert result.patch_applied_with == "patch --fuzz=3"
    assert result.resolved


def test_task_without_fail_to_pass_is_an_error_not_a_pass(toy_task, toy_runtime):
    result = grade(toy_task.replace(FAIL_TO_PASS=[]), toy_task.patch, runtime=toy_runtime)
    assert result.outcome is Outcome.INFRA_ERROR and not result.resolved


def test_missing_python_is_env_build_failed(toy_task):
    task = toy_task.replace(env=EnvSpec(python="3.4"), instance_id="toy__calc-py34")
    result = grade(task, task.patch)
    assert result.outcome is Outcome.ENV_BUILD_FAILED
    assert "Python 3.4 is not installed" in result.detail


def test_missing_repository_is_infra_error(toy_task, tmp_path):
    task = toy_task.replace(repo_source="", instance_id="toy__calc-norepo")
    result = grade(task, task.patch, repos_dir=str(tmp_path))
    assert result.outcome is Outcome.INFRA_ERROR
    assert "no repository" in result.detail


def test_repos_dir_resolves_owner__name_clones(toy_task, toy_runtime, tmp_path):
    clone(toy_task.repo_source, tmp_path / "toy__calc")
    task = toy_task.replace(repo_source="")
    result = grade(task, task.patch, repos_dir=str(tmp_path))
    assert result.resolved


def _sleeping_patch(toy_task) -> str:
    """A patch whose `add` sleeps for a minute: the tests outlast any short timeout."""
    slow = BUGGY_SOURCE.replace(
        "def add(a, b):\n    return a - b", "def add(a, b):\n    import time\n    time.sleep(60)"
    )
    return toy_patch(toy_task, "src/calc/__init__.py", slow)


def test_test_timeout_is_named(toy_task, toy_runtime):
    from repogym.sandbox.base import Limits

    patch = _sleeping_patch(toy_task)
    result = grade(toy_task, patch, limits=Limits(wall_s=3))
    assert result.outcome is Outcome.TIMEOUT


def test_cli_timeout_kills_a_slow_test_run_one_instance_and_a_predictions_file(
    toy_task, toy_runtime, tmp_path
):
    """`repogym grade --timeout S`: a patch whose tests sleep past S grades TIMEOUT, alone and in a predictions
    file (its default, SWE-bench's 1,800 s, would wait for the 60 s sleep and grade it UNRESOLVED)."""
    patch = _sleeping_patch(toy_task)
    tasks, patch_file, preds = tmp_path / "tasks.jsonl", tmp_path / "slow.diff", tmp_path / "preds.jsonl"
    save_tasks([toy_task], tasks)
    patch_file.write_text(patch)
    preds.write_text(
        json.dumps({"instance_id": toy_task.instance_id, "model_name_or_path": "m", "model_patch": patch})
    )
    one = _cli(
        "grade",
        str(tasks),
        "-i",
        toy_task.instance_id,
        "--patch",
        str(patch_file),
        "--timeout",
        "3",
        "--json",
    )
    assert json.loads(one.stdout)["outcome"] == "TIMEOUT", one.stdout + one.stderr
    report = tmp_path / "report.json"
    batch = _cli("grade", str(tasks), "--predictions", str(preds), "--out", str(report), "--timeout", "3")
    assert batch.returncode == 0, batch.stderr
    assert json.loads(report.read_text())["instances"][toy_task.instance_id]["outcome"] == "TIMEOUT"
    refused = _cli("grade", str(tasks), "-i", toy_task.instance_id, "--gold", "--timeout", "0")
    assert refused.returncode == 2 and "--timeout" in refused.stderr


def _cli(*args: str, cwd=None) -> subprocess.CompletedProcess[str]:
    repogym = os.path.join(os.path.dirname(sys.executable), "repogym")
    return subprocess.run([repogym, *args], capture_output=True, text=True, cwd=cwd)


def test_cli_grade_gold_empty_and_json(toy_task, toy_runtime, tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    save_tasks([toy_task], tasks)
    gold = _cli("grade", str(tasks), "--instance", toy_task.instance_id, "--gold", "--json")
    assert gold.returncode == 0, gold.stderr
    row = json.loads(gold.stdout)
    assert (row["resolved"], row["status"], row["outcome"]) == (True, "FULL", "RESOLVED")
    assert row["tests"][ADD] == "PASSED"
    empty = _cli("grade", str(tasks), "--instance", toy_task.instance_id, "--empty")
    assert empty.returncode == 0
    assert "UNRESOLVED" in empty.stdout and "FAILED" in empty.stdout
    unknown = _cli("grade", str(tasks), "--instance", "toy__calc-9", "--gold")
    assert unknown.returncode == 2 and "toy__calc-1" in unknown.stderr


def test_cli_grade_predictions_resumes(toy_task, toy_runtime, tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    save_tasks([toy_task, toy_task.replace(instance_id="toy__calc-2")], tasks)
    preds = tmp_path / "preds.jsonl"
    preds.write_text(
        json.dumps({"instance_id": "toy__calc-1", "model_name_or_path": "m", "model_patch": toy_task.patch})
        + "\n"
        + json.dumps({"instance_id": "toy__calc-2", "model_name_or_path": "m", "model_patch": ""})
        + "\n"
        + json.dumps({"instance_id": "nope", "model_name_or_path": "m", "model_patch": ""})
        + "\n"
    )
    report_path = tmp_path / "report.json"
    # A previous run that was killed after grading toy__calc-2: its line is in the partial file.
    partial = tmp_path / "report.json.partial.jsonl"
    first = _cli("grade", str(tasks), "--predictions", str(preds), "--out", str(report_path), "-j", "2")
    assert first.returncode == 0, first.stderr
    report = json.loads(report_path.read_text())
    assert report["resolved_ids"] == ["toy__calc-1"]
    assert report["unresolved_ids"] == ["toy__calc-2"]
    assert report["empty_patch_ids"] == ["toy__calc-2"]
    assert report["unknown_ids"] == ["nope"]
    assert report["instances"]["toy__calc-1"]["outcome"] == "RESOLVED"
    lines = partial.read_text().splitlines()
    assert len(lines) == 2
    # Keep only one graded line, as if the run had been killed after it: the re-run grades just the other.
    partial.write_text(lines[0] + "\n")
    again = _cli("grade", str(tasks), "--predictions", str(preds), "--out", str(report_path))
    assert again.returncode == 0
    assert "resuming: 1 already graded" in again.stderr
    assert len(partial.read_text().splitlines()) == 2
    assert json.loads(report_path.read_text())["resolved_ids"] == ["toy__calc-1"]
