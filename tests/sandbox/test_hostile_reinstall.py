"""Attacks through the install step the grader re-runs after a packaging patch (as SWE-bench does): that step
runs the candidate's setup.py in the episode, after the check of what the patch changed, so it can write
what no patch may, in the repository and in the venv it re-installs into. Each is named after its attack and
runs `grade` in the real bwrap sandbox."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from repogym.grading.grade import grade
from repogym.grading.report import Outcome
from repogym.sandbox.base import Limits
from repogym.sandbox.runtime import TaskRuntime
from repogym.testing import toy_patch

from ..support.forgers import FIX_ADD_ON_IMPORT
from ..support.patches import new_file
from ..support.sandbox import HELLO_FILES

# Passes exactly the task's FAIL_TO_PASS test and leaves every other result alone (the canary fails as ever).
_CONFTEST = (
    "import pytest\n\n@pytest.hookimpl(tryfirst=True)\ndef pytest_runtest_call(item):\n"
    "    if item.name == 'test_console_script_is_installed':\n        item.runtest = lambda: None\n"
)
_WRITES_CONFTEST = (
    "import pathlib\n"
    f"pathlib.Path('tests/conftest.py').write_text({_CONFTEST!r})\n"
    + HELLO_FILES["setup.py"].replace("\n\nsetup", "\nsetup")
)
_CLI_TEST = (
    "import shutil\n\n\ndef test_console_script_is_installed():\n"
    '    assert shutil.which("hello-cli"), "no console script"\n'
)


@pytest.fixture(scope="module")
def cli_task(hello_repo):
    repo, base = hello_repo
    return repo.task(
        "local__hello-hostile-install",
        base,
        patch="",
        test_patch=repo.patch({"tests/test_cli.py": _CLI_TEST}),
        FAIL_TO_PASS=["tests/test_cli.py::test_console_script_is_installed"],
        PASS_TO_PASS=["tests/test_hello.py::test_greet"],
        extra={"hostile": repo.patch({"setup.py": _WRITES_CONFTEST})},
    )


@pytest.mark.slow
def test_grading_setup_py_run_by_the_reinstall_writes_a_conftest(cli_task):
    runtime = TaskRuntime.create(cli_task).prepare()
    result = grade(cli_task, cli_task.extra["hostile"], runtime=runtime)
    assert result.outcome is Outcome.PATCH_APPLY_FAILED, (result.outcome, result.detail)
    assert "tests/conftest.py (test configuration)" in result.detail


# -- what the re-install writes in the venv (grading/installcheck.py) -------------------------------------------

_SITE = "/opt/repogym/venv/lib/python3.11/site-packages"
# A pytest plugin, kept as ordinary code under test (src/calc/_plugin.py): it fixes `add` when pytest loads it,
# before the test module imports `add`. Harmless unless something registers it.
_PLUGIN = "import calc\n\ncalc.add = lambda a, b: a + b\n"


def _setup_py(code: str = "", arguments: str = "") -> str:
    return new_file("setup.py", f"from setuptools import setup\n{code}\nsetup({arguments})\n")


def _assert_refused_in_the_venv(result, path: str) -> None:
    assert not result.resolved, result.detail
    assert result.outcome is Outcome.PATCH_APPLY_FAILED, (result.outcome, result.detail)
    assert "changed the venv" in result.detail and path in result.detail, result.detail


@pytest.mark.slow
def test_grading_setup_py_run_by_the_reinstall_writes_a_pth_into_site_packages(toy_task, toy_runtime):
    """Was a hole at 385871c: the venv after the grader's re-install was never checked, so a setup.py (run
    by that re-install) wrote a .pth whose `import` line ran at every interpreter start: RESOLVED."""
    line = f"import sys; exec({FIX_ADD_ON_IMPORT!r})"
    code = f"open('{_SITE}/calc_speedups.pth', 'w').write({line + chr(10)!r})"
    result = grade(toy_task, _setup_py(code), runtime=toy_runtime)
    _assert_refused_in_the_venv(result, f"{_SITE}/calc_speedups.pth (a .pth file")


@pytest.mark.slow
def test_grading_pyproject_entry_point_registers_a_pytest_plugin_in_the_reinstall(toy_task, toy_runtime):
    """Was a hole at 385871c: `[project.entry-points.pytest11]` in pyproject.toml, installed by the grader's
    own re-install, made pytest load the candidate's plugin before the tests: RESOLVED."""
    pyproject = (Path(toy_task.repo_source) / "pyproject.toml").read_text()
    patch = toy_patch(
        toy_task, "pyproject.toml", pyproject + '\n[project.entry-points.pytest11]\ncalc = "calc._plugin"\n'
    )
    result = grade(toy_task, patch + new_file("src/calc/_plugin.py", _PLUGIN), runtime=toy_runtime)
    _assert_refused_in_the_venv(
        result, "entry_points.txt (entry points the base install did not register: [pytest11])"
    )


@pytest.mark.slow
def test_grading_setup_py_entry_point_registers_a_pytest_plugin_in_the_reinstall(toy_task, toy_runtime):
    """The same through setup.py's `entry_points={'pytest11': ...}`."""
    patch = _setup_py(arguments="entry_points={'pytest11': ['calc = calc._plugin']}")
    result = grade(toy_task, patch + new_file("src/calc/_plugin.py", _PLUGIN), runtime=toy_runtime)
    _assert_refused_in_the_venv(
        result, "entry_points.txt (entry points the base install did not register: [pytest11])"
    )


@pytest.mark.slow
def test_grading_reinstall_sleeps_past_the_grade_limit(toy_task, toy_runtime):
    """Was a hole at 385871c: the re-install ran under the runtime's limits (600 s), not the grade's, so a
    setup.py that sleeps made a 20 s grade take 62 s. The re-install now stops at the grade's test limits."""
    limits = Limits(wall_s=15)
    started = time.monotonic()
    result = grade(
        toy_task, _setup_py("import time; time.sleep(120)"), runtime=toy_runtime, test_limits=limits
    )
    elapsed = time.monotonic() - started
    assert not result.resolved, result.detail
    assert elapsed < 15 + 25, f"the grade took {elapsed:.0f} s with a 15 s limit"


@pytest.mark.slow
def test_grading_gold_resolves_with_a_packaging_change_beside_it(toy_task, toy_runtime):
    """Control: the gold fix with a version bump and a console script (what a real packaging change
    re-installs) still resolves."""
    pyproject = (Path(toy_task.repo_source) / "pyproject.toml").read_text()
    bumped = (
        pyproject.replace('version = "0.1.0"', 'version = "0.2.0"')
        + '\n[project.scripts]\ncalc-cli = "calc:mul"\n'
    )
    result = grade(
        toy_task, toy_task.patch + toy_patch(toy_task, "pyproject.toml", bumped), runtime=toy_runtime
    )
    assert result.resolved, result.detail
