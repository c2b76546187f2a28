"""Rules raised from the setup benchmark (issue 31 item 2), each shown on a repository built to need it.

- A pytest configuration whose addopts names a plugin's option (parse's `--cov=parse`) gets the plugin
  installed when the tests' requirements do not name it: without it pytest stops with a usage error before
  collecting anything.
- A suite that fails on a git submodule the clone never checked out (tomlkit's toml-test data) says
  `submodule_missing: <path>` instead of a bare collection error: nothing but the package index is
  reachable, so the fix is the user's clone (`--recurse-submodules`), and the cause has to say so.
- A build that downloads while it builds (jaraco.functools' licence plugin) says `build_needs_network`
  instead of a bare `install_failed`: no rule can make it build where only the index is reachable.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repogym.cli import app
from repogym.validate import ValidateConfig, Verdict, validate_candidates
from repogym.validate.envresolve import plan_recipe, read_recipe_files

from ..support.git import clone, commit_files, git
from ..support.tasks import as_candidate

RUNNER = CliRunner()
INSTALLED = ["3.11.7", "3.12.1"]

COV_INI = "[pytest]\naddopts = --cov=calc --cov-report=term-missing\n"
#: A test module that reads its cases from the submodule's folder while it is collected, as tomlkit's does.
DATA_TEST = """from pathlib import Path

CASES = (Path(__file__).parent / "data" / "cases.txt").read_text().split()


def test_cases():
    assert CASES
"""
GITMODULES = '[submodule "data"]\n\tpath = tests/data\n\turl = https://example.invalid/data.git\n'


def add_empty_submodule(repo: Path) -> None:
    """Commit `tests/data` as a submodule the way a plain clone leaves one: a gitlink in the tree, an empty
    folder in the checkout."""
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{head},tests/data")
    git(repo, "commit", "-q", "-m", "tests/data: the submodule")


def check(repo: Path) -> dict:
    result = RUNNER.invoke(app, ["env", "check", str(repo), "--json"], env={"COLUMNS": "200"})
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def test_addopts_naming_a_plugin_the_requirements_lack_installs_it(tmp_path):
    recipe = plan_recipe(
        {"pyproject.toml": '[project]\nname = "p"\nversion = "1"\n', "tox.ini": "[pytest]\naddopts = -n auto\n",
         "setup.cfg": "[tool:pytest]\naddopts = --timeout=5\n"},
        "2024-05-01", INSTALLED,
    )  # fmt: skip
    assert "pytest-xdist" in recipe.packages  # tox.ini's [pytest] comes first, as pytest reads it
    assert "pytest-timeout" not in recipe.packages
    assert any(step.startswith("pytest plugin: pytest-xdist (addopts names -n;") for step in recipe.steps)


def test_a_plugin_the_tests_or_their_extras_already_name_is_left_to_them(tmp_path):
    pyproject = (
        '[project]\nname = "p"\nversion = "1"\n[project.optional-dependencies]\ntest = ["pytest-cov>=4"]\n'
    )
    recipe = plan_recipe({"pyproject.toml": pyproject, "pytest.ini": COV_INI}, "2024-05-01", INSTALLED)
    assert recipe.extras == ("test",) and "pytest-cov" not in recipe.packages
    pinned = plan_recipe(
        {"pyproject.toml": '[project]\nname = "p"\nversion = "1"\n', ".pytest.ini": COV_INI,
         "uv.lock": '[[package]]\nname = "pytest-cov"\nversion = "4.1.0"\n'},
        "2024-05-01", INSTALLED,
    )  # fmt: skip
    assert any("pytest-cov==4.1.0" in line for line in pinned.install)  # the lock's own version, as pins go


@pytest.mark.slow
def test_a_repository_whose_addopts_asks_for_coverage_builds_and_collects(toy_task, tmp_path):
    repo = clone(toy_task.repo_source, tmp_path / "calc")
    commit_files(repo, {"pytest.ini": COV_INI}, "coverage on every run, pytest-cov named nowhere")
    assert "pytest-cov" not in "".join(read_recipe_files(repo).values()).replace("--cov", "")
    found = check(repo)
    assert (found["built"], found["collected"], found["cause"]) == (True, True, None), found
    assert (found["tests"], found["passed"]) == (2, 2)
    assert "calc" in Path(found["log"]).read_text()  # coverage's report names the package it measured


@pytest.mark.slow
def test_a_suite_that_reads_an_empty_submodule_names_it(toy_task, tmp_path):
    repo = clone(toy_task.repo_source, tmp_path / "calc")
    commit_files(
        repo, {".gitmodules": GITMODULES, "tests/test_data.py": DATA_TEST}, "test data as a submodule"
    )
    add_empty_submodule(repo)
    found = check(repo)
    assert found["built"] is True and found["collected"] is False
    assert found["cause_kind"] == "submodule_missing"
    assert found["cause"].startswith(
        "submodule_missing: tests/data (a git submodule the clone did not check out"
    )
    assert "tests/test_data.py" in found["cause"]  # the module that failed on it
    assert (found["tests"], found["passed"]) == (2, 2)  # the other modules still count


@pytest.mark.slow
def test_validation_names_the_empty_submodule_a_candidate_failed_on(toy_task, tmp_path):
    repo = clone(toy_task.repo_source, tmp_path / "calc")
    conftest = DATA_TEST.split("\n\n\n")[0] + "\n"  # every module fails to collect, before and after the fix
    commit_files(repo, {".gitmodules": GITMODULES, "tests/conftest.py": conftest}, "test data as a submodule")
    add_empty_submodule(repo)
    candidate = as_candidate(toy_task, "needs-data", base_commit=git(repo, "rev-parse", "HEAD").strip(),
                             repo_source=str(repo))  # fmt: skip
    run = validate_candidates([candidate], tmp_path / "tasks.jsonl", ValidateConfig(workers=1, scrub=False))
    outcome = run.outcomes["needs-data"]
    assert outcome.verdict is Verdict.ENV_BROKEN
    assert outcome.detail.startswith("submodule_missing: tests/data; same error before and after the fix: ")


#: A setup.py that downloads while it builds, as jaraco's backend plugin fetches its licence text.
DOWNLOADING_SETUP_PY = """import urllib.request

from setuptools import setup

with urllib.request.urlopen("https://licenses.example.invalid/MIT.txt", timeout=10) as response:
    LICENSE = response.read().decode()

setup()
"""


@pytest.mark.slow
def test_a_build_that_downloads_while_it_builds_is_named_build_needs_network(toy_task, tmp_path):
    """jaraco.functools' shape: its build backend fetches a licence text; only the index is reachable."""
    repo = clone(toy_task.repo_source, tmp_path / "calc")
    commit_files(repo, {"setup.py": DOWNLOADING_SETUP_PY}, "build: fetch the licence")
    found = check(repo)
    assert (found["built"], found["collected"], found["cause_kind"]) == (False, False, "build_needs_network")
    assert "building the repository tried to reach a host" in found["cause"]
    assert "Name or service not known" in Path(found["log"]).read_text()  # the build log that shows it


@pytest.mark.slow
def test_a_grade_whose_environment_build_dials_out_names_the_host_it_tried(toy_task, tmp_path):
    """The same build met by a grade (issue 28: Verified's astropy 1.3 clones astropy_helpers from GitHub):
    its ENV_BUILD_FAILED says what the build tried to reach, not only the installer's traceback."""
    from repogym.grading.grade import grade
    from repogym.grading.report import Outcome

    repo = clone(toy_task.repo_source, tmp_path / "calc")
    commit_files(repo, {"setup.py": DOWNLOADING_SETUP_PY}, "build: fetch the licence")
    sha = git(repo, "rev-parse", "HEAD").strip()
    result = grade(toy_task.replace(repo_source=str(repo), base_commit=sha, env=toy_task.env), "")
    assert result.outcome is Outcome.ENV_BUILD_FAILED, (result.outcome, result.detail)
    assert "the build tried to reach a host the jail does not (only the package index): " in result.detail
