"""Fixtures for rollout tests: the toy task, sample-library tasks, and a task whose environment cannot be built."""

from __future__ import annotations

import os

import pytest

from repogym.testing import make_toy_task


@pytest.fixture(scope="session")
def toy_task(tmp_path_factory: pytest.TempPathFactory):
    # One cache for every xdist worker of this run, so the environment is built once (file lock).
    os.environ["REPOGYM_CACHE"] = str(tmp_path_factory.getbasetemp().parent / "repogym-cache")
    return make_toy_task(tmp_path_factory.mktemp("toy"))


def git(repo, *args: str) -> str:
    import subprocess

    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="session")
def sample_tasks(tmp_path_factory: pytest.TempPathFactory):
    """The planted fixes of a generated sample library, as tasks (gold patch = the fix's code change)."""
    from repogym.samples import generate_repo
    from repogym.task import Source, Task

    repo = generate_repo(tmp_path_factory.mktemp("sample") / "lib", seed=1, n_bug_fixes=3)
    return [
        Task(
            instance_id=f"{repo.name}__{fix.slug}",
            repo=repo.github,
            base_commit=fix.base_commit,
            patch=git(repo.path, "diff", fix.base_commit, fix.fix_commit, "--", *fix.code_files),
            test_patch=git(repo.path, "diff", fix.base_commit, fix.fix_commit, "--", *fix.test_files),
            problem_statement=fix.title,
            FAIL_TO_PASS=list(fix.FAIL_TO_PASS),
            PASS_TO_PASS=list(fix.PASS_TO_PASS),
            source=Source.SYNTHETIC,
            repo_source=str(repo.path),
        )
        for fix in repo.fixes
    ]


@pytest.fixture(scope="session")
def broken_env_task(toy_task):
    """The toy task under another id, with an install step that fails: its environment cannot be built."""
    from repogym.task import EnvSpec

    return toy_task.replace(instance_id="toy__calc-broken", env=EnvSpec(install=("exit 3",)))
