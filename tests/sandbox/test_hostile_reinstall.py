"""Attacks through the install step the grader re-runs after a packaging patch (as SWE-bench does): that step
runs the candidate's setup.py in the episode, after the check of what the patch changed, so it can write
what no patch may. Each is named after its attack and runs `grade` in the real bwrap sandbox."""

from __future__ import annotations

import pytest
from sandbox_support import HELLO_FILES

from repogym.grading.grade import grade
from repogym.grading.report import Outcome
from repogym.sandbox.runtime import TaskRuntime

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
