"""Attacks on the grader: each is a candidate patch that tries to turn a wrong fix into a resolved grade.

Each test is named after the attack it stops; none of them may resolve.
"""

from __future__ import annotations

from repogym.grading.grade import grade
from repogym.grading.report import Outcome, TestStatus
from repogym.testing import BUGGY_SOURCE, TESTS_AFTER, toy_patch

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
    patch = _new_file_patch("conftest.py", conftest) + _new_file_patch("src/conftest.py", conftest)
    result = _grade(toy_task, toy_runtime, patch)
    assert not result.resolved
    assert result.fail_to_pass[ADD_TEST] is TestStatus.FAILED
    assert {"conftest.py (test configuration)", "src/conftest.py (test configuration)"} <= set(
        result.ignored_paths
    )


def test_grading_pyproject_pytest_table_is_ignored(toy_task, toy_runtime):
    pyproject = (toy_task_repo(toy_task) / "pyproject.toml").read_text()
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
    repo = toy_task_repo(toy_task)
    deletion = _git_diff_deleting(repo, "tests/test_calc.py")
    result = _grade(toy_task, toy_runtime, deletion)
    assert not result.resolved
    assert result.fail_to_pass[ADD_TEST] is TestStatus.FAILED


def test_grading_patch_touching_git_is_refused(toy_task, toy_runtime):
    patch = _new_file_patch(".git/hooks/post-checkout", "#!/bin/sh\necho pwned\n")
    result = _grade(toy_task, toy_runtime, toy_task.patch + patch)
    assert result.outcome is Outcome.PATCH_APPLY_FAILED
    assert ".git" in result.detail


def test_grading_patch_with_dotdot_path_is_refused(toy_task, toy_runtime):
    patch = _new_file_patch("../../outside.py", "x = 1\n")
    result = _grade(toy_task, toy_runtime, toy_task.patch + patch)
    assert result.outcome is Outcome.PATCH_APPLY_FAILED
    assert "unsafe path" in result.detail


def test_grading_patch_with_absolute_path_is_refused(toy_task, toy_runtime):
    patch = "--- /dev/null\n+++ /etc/cron.d/evil\n@@ -0,0 +1 @@\n+* * * * * root echo pwned\n"
    result = _grade(toy_task, toy_runtime, toy_task.patch + patch)
    assert result.outcome is Outcome.PATCH_APPLY_FAILED


def test_grading_shadowed_report_plugin_is_ignored(toy_task, toy_runtime):
    fake_plugin = "def pytest_configure(config):\n    pass\n"
    patch = toy_task.patch + _new_file_patch("repogym_report.py", fake_plugin)
    result = _grade(toy_task, toy_runtime, patch)
    assert result.resolved  # the real fix still resolves; the shadowing module was dropped
    assert "repogym_report.py (a name of repogym's harness)" in result.ignored_paths


def test_grading_sitecustomize_faking_results_does_not_resolve(toy_task, toy_runtime):
    """Code that runs at interpreter start and exits 0 before tests run must not pass."""
    hook = "import os\nos._exit(0)\n"
    result = _grade(toy_task, toy_runtime, _new_file_patch("src/sitecustomize.py", hook))
    assert not result.resolved


# Fixes `add` in memory as `calc` is imported: a patch whose fix lives only in start-up code resolves when
# that code runs, so a grade that is not RESOLVED proves the start-up code never ran.
SITECUSTOMIZE_FIXES_ADD = (
    "import sys\n"
    "class _Fixer:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name != 'calc':\n"
    "            return None\n"
    "        sys.meta_path.remove(self)\n"
    "        import importlib.util\n"
    "        spec = importlib.util.find_spec(name)\n"
    "        run = spec.loader.exec_module\n"
    "        def fixed(module):\n"
    "            run(module)\n"
    "            module.add = lambda a, b: a + b\n"
    "        spec.loader.exec_module = fixed\n"
    "        return spec\n"
    "sys.meta_path.insert(0, _Fixer())\n"
)


def test_grading_sitecustomize_package_runs_before_the_launcher(toy_task, toy_runtime):
    """Was a hole at 385871c: the start-up rule matched the file name `sitecustomize.py` only, so a package
    `src/sitecustomize/__init__.py` passed it; with src/ on sys.path (the editable install's .pth) site.py
    imported it before the test launcher ran, and its fix of `add` in memory graded RESOLVED."""
    result = _grade(
        toy_task, toy_runtime, _new_file_patch("src/sitecustomize/__init__.py", SITECUSTOMIZE_FIXES_ADD)
    )
    assert not result.resolved, result.detail
    assert result.fail_to_pass[ADD_TEST] is TestStatus.FAILED
    assert "src/sitecustomize/__init__.py (a module run at interpreter start)" in result.ignored_paths


def test_grading_sitecustomize_in_other_spellings_is_dropped(toy_task, toy_runtime):
    """The same code under every other name `import sitecustomize` / `import usercustomize` could find: a
    namespace package's module, another case, a usercustomize package. All are dropped with the reason."""
    spellings = ["src/SiteCustomize.py", "src/usercustomize/__init__.py", "src/sitecustomize/fix.py"]
    patch = "".join(_new_file_patch(path, SITECUSTOMIZE_FIXES_ADD) for path in spellings)
    result = _grade(toy_task, toy_runtime, patch)
    assert not result.resolved, result.detail
    assert {f"{path} (a module run at interpreter start)" for path in spellings} <= set(result.ignored_paths)


# -- helpers --------------------------------------------------------------------------------------


def toy_task_repo(task):
    from pathlib import Path

    return Path(task.repo_source)


def _new_file_patch(path: str, text: str) -> str:
    lines = text.splitlines()
    body = "".join(f"+{line}\n" for line in lines)
    return f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n{body}"


def _git_diff_deleting(repo, path: str) -> str:
    import subprocess

    return subprocess.run(
        ["git", "diff", "HEAD", "--", path],
        cwd=repo,
        env={"PATH": "/usr/bin:/bin", "GIT_INDEX_FILE": "/dev/null/none"},
        capture_output=True,
        text=True,
    ).stdout or _deletion_patch(repo, path)


def _deletion_patch(repo, path: str) -> str:
    text = (repo / path).read_text()
    lines = text.splitlines()
    body = "".join(f"-{line}\n" for line in lines)
    return f"diff --git a/{path} b/{path}\ndeleted file mode 100644\n--- a/{path}\n+++ /dev/null\n@@ -1,{len(lines)} +0,0 @@\n{body}"
