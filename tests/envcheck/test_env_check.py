"""`repogym env check REPO [--commit C] [--json]` on real clones, built and run in the real sandbox.

A package whose C extension includes a header this machine lacks does not build, and says which Debian package
to install; a healthy repository builds, collects, and counts its passing and failing tests; a test module
that cannot import is a collection error naming the module, its other tests still counted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repogym.cli import app

from ..support.git import clone, commit_files
from .conftest import c_extension_repo

RUNNER = CliRunner()

FAILING_TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
BROKEN_MODULE = "import repogym_missing_module  # noqa: F401\n\n\ndef test_never_runs():\n    pass\n"


def check(*args: str):
    return RUNNER.invoke(app, ["env", "check", *args], env={"COLUMNS": "200"})


@pytest.fixture(scope="module")
def calc(toy_task, tmp_path_factory) -> Path:
    """The toy repository two commits on: a test of its bug (which fails), then a test module that cannot
    import (toy_task first: it points REPOGYM_CACHE at the run's cache, where its environment is shared)."""
    repo = clone(toy_task.repo_source, tmp_path_factory.mktemp("envcheck") / "calc")
    commit_files(repo, {"tests/test_add.py": FAILING_TEST}, "tests: add")
    commit_files(repo, {"tests/test_broken.py": BROKEN_MODULE}, "tests: a module that cannot import")
    return repo


@pytest.mark.slow
def test_a_healthy_repository_builds_collects_and_counts_passed_and_failed_tests(calc):
    result = check(str(calc), "--commit", "HEAD~1", "--json")
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    assert {k: found[k] for k in ("built", "collected", "tests", "passed", "failed", "cause")} == {
        "built": True, "collected": True, "tests": 3, "passed": 2, "failed": 1, "cause": None,
    }  # fmt: skip
    assert found["seconds"] > 0 and found["python"] and Path(found["log"]).is_file()


@pytest.mark.slow
def test_a_module_that_cannot_import_is_a_collection_error_and_the_other_tests_still_count(calc):
    result = check(str(calc), "--json")
    assert result.exit_code == 1, result.output
    found = json.loads(result.stdout)
    assert found["built"] is True and found["collected"] is False
    assert found["cause_kind"] == "collection_error"
    assert found["cause"].startswith(
        "collection_error: tests/test_broken.py: ModuleNotFoundError: No module named 'repogym_missing_module'"
    )
    assert (found["tests"], found["passed"], found["failed"]) == (3, 2, 1)


@pytest.mark.slow
def test_the_summary_without_json_says_what_was_built_and_counted(calc):
    result = check(str(calc), "--commit", "HEAD~1")
    assert result.exit_code == 0, result.output
    assert "built: yes   collected: yes" in result.stdout
    assert "tests: 3 (2 passed, 1 failed, 0 skipped)" in result.stdout


@pytest.mark.slow
def test_a_c_extension_whose_header_is_missing_fails_naming_the_debian_package(
    toy_task, absent_header, tmp_path
):
    header, package = absent_header
    repo = c_extension_repo(tmp_path / "geo", header)
    result = check(str(repo), "--json")
    assert result.exit_code == 1, result.output
    found = json.loads(result.stdout)
    assert found["built"] is False and found["collected"] is False and found["tests"] == 0
    assert found["cause_kind"] == "system_package_missing"
    assert found["cause"] == (
        f"system_package_missing: {package} (header {header} not found); install: apt-get install {package}"
    )
    assert found["system_packages"] == [package]
    assert header in Path(found["log"]).read_text()  # the build log that shows it


def test_a_folder_that_is_not_a_clone_or_a_commit_that_is_not_there_is_a_usage_error(toy_task, tmp_path):
    not_a_clone = check(str(tmp_path), "--json")
    assert not_a_clone.exit_code == 2 and "not a git clone" in not_a_clone.stderr
    assert not_a_clone.stdout == ""
    no_commit = check(toy_task.repo_source, "--commit", "no-such-branch")
    assert no_commit.exit_code == 2 and "no commit 'no-such-branch'" in no_commit.stderr


CI_RUNS_TESTS_ONLY = "on: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n    - run: cd tests && pytest\n"
SLOW_TEST = "import time\n\n\ndef test_fast():\n    pass\n\n\ndef test_slow():\n    time.sleep(120)\n"


@pytest.mark.slow
def test_the_suite_is_the_paths_the_projects_ci_runs_not_every_test_file_under_the_root(calc, tmp_path):
    """jmespath's shape: a test module outside tests/ that CI never runs needs a package nobody installs."""
    repo = clone(str(calc), tmp_path / "calc")
    untold = (repo / "pyproject.toml").read_text().replace('testpaths = ["tests"]\n', "")  # pytest collects all
    moved = {"extra/test_broken.py": BROKEN_MODULE, "tests/test_broken.py": None, "pyproject.toml": untold}
    commit_files(repo, moved, "tests: move, and no testpaths")
    without_ci = json.loads(check(str(repo), "--json").stdout)
    assert without_ci["cause_kind"] == "collection_error" and "extra/test_broken.py" in without_ci["cause"]
    commit_files(repo, {".github/workflows/ci.yml": CI_RUNS_TESTS_ONLY}, "ci: run the tests folder")
    result = check(str(repo), "--json")
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    assert (found["collected"], found["cause"], found["tests"], found["passed"]) == (True, None, 3, 2)
    assert (found["suite"], found["suite_source"]) == (["tests"], ".github/workflows/ci.yml")


@pytest.mark.slow
def test_a_suite_the_time_limit_cuts_after_collection_is_collected_and_counts_nothing(calc, tmp_path):
    """packaging's shape: 62,435 tests collected, the run cut at the limit; built and collected is true."""
    repo = clone(str(calc), tmp_path / "calc")
    commit_files(repo, {"tests/test_slow.py": SLOW_TEST, "tests/test_broken.py": None}, "tests: a slow one")
    result = check(str(repo), "--json", "--timeout", "20")
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    assert (found["built"], found["collected"], found["complete"], found["cause"]) == (True, True, False, None)
    assert (found["tests"], found["passed"], found["failed"]) == (5, 0, 0)
    summary = check(str(repo), "--timeout", "20")
    assert "5 collected; the time limit cut the run" in summary.stdout


@pytest.mark.slow
def test_a_cut_suite_whose_collection_failed_is_still_not_collected(calc, tmp_path):
    repo = clone(str(calc), tmp_path / "calc")
    commit_files(repo, {"tests/test_slow.py": SLOW_TEST}, "tests: a slow one beside the broken one")
    result = check(str(repo), "--json", "--timeout", "20")
    assert result.exit_code == 1, result.output
    found = json.loads(result.stdout)
    assert (found["built"], found["collected"], found["complete"]) == (True, False, True)
    assert found["cause_kind"] == "tests_did_not_run"
