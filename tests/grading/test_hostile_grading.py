"""Attacks on the grader: each is a candidate patch that tries to turn a wrong fix into a resolved grade.

Each test is named after the attack it stops; none of them may resolve.
"""

from __future__ import annotations

from pathlib import Path

from repogym.grading.grade import grade
from repogym.grading.report import Outcome, TestStatus
from repogym.testing import BUGGY_SOURCE, TESTS_AFTER, toy_patch

from ..support.forgers import FIX_ADD_ON_IMPORT
from ..support.patches import deletion, new_file

ADD_TEST = "tests/test_calc.py::test_add"


def _grade(task, runtime, patch):
    return grade(task, patch, runtime=runtime)


def test_grading_edit_test_file_to_pass(toy_task, toy_runtime):
    weakened = TESTS_AFTER.replace("assert add(2, 3) == 5", "assert True")
    result = _grade(toy_task, toy_runtime, toy_patch(toy_task, "tests/test_calc.py", weakened))
    assert not result.resolved
    assert result.fail_to_pass[ADD_TEST] is TestStatus.FAILED
    assert any("tests/test_calc.py" in p for p in result.ignored_paths)


def test_grading_conftest_forces_passes(toy_task, toy_runtime):
    conftest = (
        "import pytest\n\n"
        "@pytest.hookimpl(hookwrapper=True)\n"
        "def pytest_runtest_makereport(item, call):\n"
        "    outcome = yield\n"
        "    report = outcome.get_result()\n"
        "    report.outcome = 'passed'\n\n"
        "def pytest_sessionfinish(session, exitstatus):\n"
        "    session.exitstatus = 0\n"
    )
    patch = new_file("conftest.py", conftest) + new_file("src/conftest.py", conftest)
    result = _grade(toy_task, toy_runtime, patch)
    assert not result.resolved
    assert result.fail_to_pass[ADD_TEST] is TestStatus.FAILED
    assert {"conftest.py (test configuration)", "src/conftest.py (test configuration)"} <= set(
        result.ignored_paths
    )


def test_grading_pyproject_pytest_table_is_ignored(toy_task, toy_runtime):
    pyproject = (Path(toy_task.repo_source) / "pyproject.toml").read_text()
    hacked = pyproject.replace(
        'testpaths = ["tests"]', 'testpaths = ["tests"]\naddopts = "-p no:repogym_report"'
    )
    result = _grade(toy_task, toy_runtime, toy_patch(toy_task, "pyproject.toml", hacked))
    assert not result.resolved
    assert "pyproject.toml (test configuration section)" in result.ignored_paths


def test_grading_spoofed_passed_lines(toy_task, toy_runtime):
    spoof = BUGGY_SOURCE + (
        "\nimport sys\n"
        "for _line in ('tests/test_calc.py::test_add PASSED', 'PASSED tests/test_calc.py::test_add',"
        " '1 passed in 0.01s'):\n"
        "    print(_line)\n    print(_line, file=sys.stderr)\n"
    )
    result = _grade(toy_task, toy_runtime, toy_patch(toy_task, "src/calc/__init__.py", spoof))
    assert not result.resolved
    assert result.fail_to_pass[ADD_TEST] is TestStatus.FAILED


def test_grading_exit_zero_from_failed_session(toy_task, toy_runtime):
    exits = BUGGY_SOURCE.replace(
        "def add(a, b):\n    return a - b",
        "def add(a, b):\n    import os\n    os._exit(0)",
    )
    result = _grade(toy_task, toy_runtime, toy_patch(toy_task, "src/calc/__init__.py", exits))
    assert not result.resolved
    assert result.outcome is Outcome.TESTS_DID_NOT_RUN


def test_grading_patch_deletes_the_tests(toy_task, toy_runtime):
    patch = deletion(Path(toy_task.repo_source), "tests/test_calc.py")
    result = _grade(toy_task, toy_runtime, patch)
    assert not result.resolved
    assert result.fail_to_pass[ADD_TEST] is TestStatus.FAILED


def test_grading_patch_touching_git_is_refused(toy_task, toy_runtime):
    patch = new_file(".git/hooks/post-checkout", "#!/bin/sh\necho pwned\n")
    result = _grade(toy_task, toy_runtime, toy_task.patch + patch)
    assert result.outcome is Outcome.PATCH_APPLY_FAILED
    assert ".git" in result.detail


def test_grading_patch_with_dotdot_path_is_refused(toy_task, toy_runtime):
    patch = new_file("../../outside.py", "x = 1\n")
    result = _grade(toy_task, toy_runtime, toy_task.patch + patch)
    assert result.outcome is Outcome.PATCH_APPLY_FAILED
    assert "unsafe path" in result.detail


def test_grading_patch_with_absolute_path_is_refused(toy_task, toy_runtime):
    patch = "--- /dev/null\n+++ /etc/cron.d/evil\n@@ -0,0 +1 @@\n+* * * * * root echo pwned\n"
    result = _grade(toy_task, toy_runtime, toy_task.patch + patch)
    assert result.outcome is Outcome.PATCH_APPLY_FAILED


def test_grading_shadowed_report_plugin_is_ignored(toy_task, toy_runtime):
    fake_plugin = "def pytest_configure(config):\n    pass\n"
    patch = toy_task.patch + new_file("repogym_report.py", fake_plugin)
    result = _grade(toy_task, toy_runtime, patch)
    assert result.resolved  # the real fix still resolves; the shadowing module was dropped
    assert "repogym_report.py (a name of repogym's harness)" in result.ignored_paths


def test_grading_sitecustomize_faking_results_does_not_resolve(toy_task, toy_runtime):
    """Code that runs at interpreter start and exits 0 before tests run must not pass. The patch keeps the
    bug, so 'not resolved' alone would hold whether or not the hook ran: the outcome is pinned. The hook is
    dropped by name, the tests run, and `add` fails as the bug says (had the hook run, no test would have)."""
    hook = "import os\nos._exit(0)\n"
    result = _grade(toy_task, toy_runtime, new_file("src/sitecustomize.py", hook))
    assert not result.resolved
    assert result.outcome is Outcome.UNRESOLVED, (result.outcome, result.detail)
    assert result.fail_to_pass[ADD_TEST] is TestStatus.FAILED
    assert "src/sitecustomize.py (a module run at interpreter start)" in result.ignored_paths


def test_grading_sitecustomize_package_runs_before_the_launcher(toy_task, toy_runtime):
    """Was a hole at 385871c: the start-up rule matched the file name `sitecustomize.py` only, so a package
    `src/sitecustomize/__init__.py` passed it; with src/ on sys.path (the editable install's .pth) site.py
    imported it before the test launcher ran, and its fix of `add` in memory graded RESOLVED."""
    result = _grade(
        toy_task, toy_runtime, new_file("src/sitecustomize/__init__.py", FIX_ADD_ON_IMPORT)
    )
    assert not result.resolved, result.detail
    assert result.fail_to_pass[ADD_TEST] is TestStatus.FAILED
    assert "src/sitecustomize/__init__.py (a module run at interpreter start)" in result.ignored_paths


def test_grading_sitecustomize_in_other_spellings_is_dropped(toy_task, toy_runtime):
    """The same code under every other name `import sitecustomize` / `import usercustomize` could find: a
    namespace package's module, another case, a usercustomize package. All are dropped with the reason."""
    spellings = ["src/SiteCustomize.py", "src/usercustomize/__init__.py", "src/sitecustomize/fix.py"]
    patch = "".join(new_file(path, FIX_ADD_ON_IMPORT) for path in spellings)
    result = _grade(toy_task, toy_runtime, patch)
    assert not result.resolved, result.detail
    assert {f"{path} (a module run at interpreter start)" for path in spellings} <= set(result.ignored_paths)
