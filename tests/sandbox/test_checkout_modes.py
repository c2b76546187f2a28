"""Pristine checkouts of trees that once crashed them: one blob as two files of different modes, a blob the
mirror lacks (issue 28: requests-863 and astropy-6938/7746 have the first; a damaged clone the second)."""

from __future__ import annotations

import dataclasses
import os
import stat
import uuid
from pathlib import Path

import pytest

from repogym.errors import RepoSourceError
from repogym.grading.grade import grade
from repogym.grading.report import Outcome
from repogym.hostgit import git
from repogym.sandbox.cache import cache_dir
from repogym.sandbox.repos import mirror
from repogym.sandbox.runtime import TaskRuntime
from repogym.sandbox.workspace import pristine_checkout
from repogym.testing import make_toy_task

_GIT = {
    "GIT_AUTHOR_NAME": "T",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "T",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
}
#: New bytes each run: the blob store is shared by the suite, and a blob stored in both modes before would hide
#: the fault.
SCRIPT = f"#!/bin/sh\necho same bytes, two modes\n# {uuid.uuid4().hex}\n"


def _commit_two_modes(repo: Path) -> str:
    """One commit holding SCRIPT four times: executable and not, each listed first in one of two folders
    (ls-tree's order decides which mode a sha -> mode map kept)."""
    for folder, executable, plain in (("bin", "a_run.sh", "b_copy.txt"), ("doc", "b_run.sh", "a_copy.txt")):
        (repo / folder).mkdir(exist_ok=True)
        for name in (executable, plain):
            (repo / folder / name).write_text(SCRIPT)
    git(repo, "add", "bin", "doc", env=_GIT)
    git(repo, "update-index", "--chmod=+x", "bin/a_run.sh", "doc/b_run.sh", env=_GIT)
    git(repo, "commit", "-q", "-m", "one blob, two modes", env=_GIT)
    return git(repo, "rev-parse", "HEAD", env=_GIT).strip()


EXPECTED_MODES = {
    "bin/a_run.sh": 0o755,
    "bin/b_copy.txt": 0o644,
    "doc/b_run.sh": 0o755,
    "doc/a_copy.txt": 0o644,
}


@pytest.fixture(scope="module")
def two_modes_task(toy_task, tmp_path_factory):
    """The toy project (its environment is the suite's cached one) with a commit of one blob in two modes."""
    task = make_toy_task(tmp_path_factory.mktemp("two-modes"), instance_id="toy__calc-modes")
    return dataclasses.replace(task, base_commit=_commit_two_modes(Path(task.repo_source)))


def test_checkout_gives_each_file_its_own_mode_when_one_blob_has_two(two_modes_task):
    checkout = pristine_checkout(mirror(two_modes_task.repo_source), two_modes_task.base_commit)
    for path, mode in EXPECTED_MODES.items():
        assert stat.S_IMODE((checkout / path).stat().st_mode) == mode, path
        assert (checkout / path).read_text() == SCRIPT
    assert (
        git(checkout, "-c", "safe.directory=*", "status", "--porcelain", env=_GIT) == ""
    )  # git sees the modes the commit has


def test_episode_sees_both_modes_and_runs_the_executable_one(two_modes_task):
    runtime = TaskRuntime.create(two_modes_task, "bwrap").prepare()
    with runtime.episode() as episode:
        result = episode.run("stat -c '%a %n' bin/* doc/* && ./bin/a_run.sh && ./doc/b_run.sh")
    assert result.ok, result.output
    seen = dict(reversed(line.split(" ", 1)) for line in result.output.splitlines() if line[:1].isdigit())
    assert {path: int(mode, 8) for path, mode in seen.items()} == EXPECTED_MODES
    assert result.output.count("same bytes, two modes") == 2


@pytest.fixture(scope="module")
def damaged_task(toy_task, tmp_path_factory):
    """The toy project with a commit whose new file's blob was deleted from the repository's objects."""
    task = make_toy_task(tmp_path_factory.mktemp("damaged"), instance_id="toy__calc-damaged")
    repo = Path(task.repo_source)
    (repo / "data").mkdir()
    (repo / "data" / "table.csv").write_text("a,b\n1,2\n")
    git(repo, "add", "data/table.csv", env=_GIT)
    git(repo, "commit", "-q", "-m", "a table", env=_GIT)
    sha = git(repo, "rev-parse", "HEAD:data/table.csv", env=_GIT).strip()
    (repo / ".git" / "objects" / sha[:2] / sha[2:]).unlink()
    base = git(repo, "rev-parse", "HEAD", env=_GIT).strip()
    return dataclasses.replace(task, base_commit=base), sha


def test_checkout_names_the_missing_object_and_its_path(damaged_task):
    task, sha = damaged_task
    before = set(cache_dir("checkouts").iterdir())
    with pytest.raises(RepoSourceError) as raised:
        pristine_checkout(mirror(task.repo_source), task.base_commit)
    assert sha in str(raised.value) and "data/table.csv" in str(raised.value)
    leftovers = [path for path in set(cache_dir("checkouts").iterdir()) - before if path.is_dir()]
    assert leftovers == []  # the half-made checkout is gone, so a later try starts afresh


def test_grade_of_a_task_with_a_missing_object_is_an_infra_error_naming_it(damaged_task):
    task, sha = damaged_task
    result = grade(task, task.patch)
    assert result.outcome is Outcome.INFRA_ERROR
    assert sha in result.detail and "data/table.csv" in result.detail
