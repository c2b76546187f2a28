"""Small real repositories run by repogym in the bwrap sandbox, for the grading tests that need real logs
and reports from the interpreters and pytest versions SWE-bench's tasks use."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from repogym.grading.report import TestReport
from repogym.grading.runner import run_tests
from repogym.sandbox.runtime import TaskRuntime
from repogym.task import EnvSpec, Task

#: Today's pytest on the host's Python, and SWE-bench's pytest 5.4-era pins on Python 3.9.
RUNS = {
    "pytest-now": EnvSpec(test_cmd="pytest -rA"),
    "pytest-5.4": EnvSpec(python="3.9", packages=("pytest==5.4.3", "py==1.11.0"), test_cmd="pytest -rA"),
}


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e.invalid", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repo),
           "PATH": "/usr/bin:/bin"}  # fmt: skip
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def git_task(root: Path, files: dict[str, str], env: EnvSpec, instance_id: str, fail_to_pass: str) -> Task:
    """A one-commit git repo of `files` (a pytest.ini pins the rootdir) and a task over it."""
    repo = root / "repo"
    for path, text in {"pytest.ini": "[pytest]\n", **files}.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "tests")
    base = _git(repo, "rev-parse", "HEAD").strip()
    return Task(
        instance_id, "t/" + instance_id, base, "", FAIL_TO_PASS=[fail_to_pass], repo_source=str(repo), env=env
    )


def run_all(task: Task, log_dir: Path) -> tuple[TestReport, str]:
    """Every test of the task's repo run once in a fresh episode: (report, the printed log)."""
    try:
        runtime = TaskRuntime.create(task, "bwrap").prepare()
    except Exception as exc:  # no such Python here, or no package index
        pytest.skip(f"cannot build the environment of {task.instance_id}: {exc}")
    with runtime.episode() as episode:
        report = run_tests(task, episode, [], log_dir=log_dir)
    return report, Path(report.log_path).read_text()
