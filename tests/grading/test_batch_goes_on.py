"""A predictions batch that meets bad instances records each with its cause and goes on; a resume does not grade
them again (issue 28: one checkout crash aborted `repogym grade --predictions`, and its resume crashed again)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from repogym.dataset import TaskSet
from repogym.grading.batch import grade_predictions, partial_path
from repogym.grading.report import Outcome
from repogym.hostgit import git
from repogym.predictions import Prediction
from repogym.task import EnvSpec
from repogym.testing import make_toy_task

_GIT = {"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "T",
        "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_GLOBAL": os.devnull}  # fmt: skip


@pytest.fixture(scope="module")
def mixed_tasks(toy_task, tmp_path_factory):
    """A good task between two bad ones: a task file naming no such log parser (grade() raises), and a
    repository whose base commit lost a blob (the checkout fails)."""
    typo = make_toy_task(tmp_path_factory.mktemp("typo"), instance_id="toy__calc-typo")
    typo = dataclasses.replace(typo, env=EnvSpec(log_parser="pytset"))
    damaged = make_toy_task(tmp_path_factory.mktemp("damaged"), instance_id="toy__calc-damaged")
    repo = Path(damaged.repo_source)
    (repo / "notes.txt").write_text("lost\n")
    git(repo, "add", "notes.txt", env=_GIT)
    git(repo, "commit", "-q", "-m", "notes", env=_GIT)
    sha = git(repo, "rev-parse", "HEAD:notes.txt", env=_GIT).strip()
    (repo / ".git" / "objects" / sha[:2] / sha[2:]).unlink()
    damaged = dataclasses.replace(damaged, base_commit=git(repo, "rev-parse", "HEAD", env=_GIT).strip())
    return TaskSet([typo, toy_task, damaged]), sha


def _gold(tasks: TaskSet) -> list[Prediction]:
    return [Prediction(task.instance_id, "gold", task.patch) for task in tasks]


def test_batch_records_bad_instances_with_their_cause_and_grades_the_rest(mixed_tasks, toy_task, tmp_path):
    tasks, lost = mixed_tasks
    out = tmp_path / "report.json"
    report = grade_predictions(tasks, _gold(tasks), out)
    results = report.results
    assert results[toy_task.instance_id].outcome is Outcome.RESOLVED
    typo = results["toy__calc-typo"]
    assert typo.outcome is Outcome.INFRA_ERROR
    assert "UnknownNameError" in typo.detail and "pytset" in typo.detail
    damaged = results["toy__calc-damaged"]
    assert damaged.outcome is Outcome.INFRA_ERROR and lost in damaged.detail and "notes.txt" in damaged.detail
    written = json.loads(out.read_text())
    assert written["error_ids"] == ["toy__calc-damaged", "toy__calc-typo"]
    assert written["resolved_ids"] == [toy_task.instance_id]
    rows = [json.loads(line) for line in partial_path(out).read_text().splitlines()]
    assert sorted(row["instance_id"] for row in rows) == sorted(t.instance_id for t in tasks)


def test_resume_does_not_grade_recorded_failures_again(mixed_tasks, tmp_path):
    tasks, _ = mixed_tasks
    out = tmp_path / "report.json"
    grade_predictions(tasks, _gold(tasks), out)
    started: list[tuple[int, int]] = []
    again = grade_predictions(
        tasks, _gold(tasks), out, on_start=lambda todo, done: started.append((todo, done))
    )
    assert started == [(0, 3)]
    assert len(partial_path(out).read_text().splitlines()) == 3
    assert again.results["toy__calc-typo"].outcome is Outcome.INFRA_ERROR
