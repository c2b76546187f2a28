"""Attacks through the paths of a candidate patch: headers git reads differently from the candidate filter
(C-quoted names, rename targets, octal escapes, any first path component), malformed names, and
.gitattributes that change how git writes the task's own test patch. Each is a patch graded on the toy task
in the real bwrap sandbox, named after its attack; none may resolve, and none may crash the grader.
"""

from __future__ import annotations

from repogym.grading.grade import grade, grade_in_episode
from repogym.grading.report import Outcome, TestStatus
from repogym.testing import FIXED_SOURCE, toy_patch

from ..support.patches import new_file

ADD_TEST = "tests/test_calc.py::test_add"


# A conftest.py that turns every failure into a pass (what the grader must never run).
FORCE_PASS_CONFTEST = (
    "import pytest\n"
    "\n"
    "@pytest.hookimpl(hookwrapper=True)\n"
    "def pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n"
    "    report = outcome.get_result()\n"
    "    report.outcome = 'passed'\n"
    "\n"
    "def pytest_sessionfinish(session, exitstatus):\n"
    "    session.exitstatus = 0\n"
)


def test_grading_quoted_conftest_path_forces_passes(toy_task, toy_runtime):
    """Was a hole at 4021a70: a git C-quoted header ("b/conftest.py") kept its quotes in unidiff's names, so
    the conftest rule missed it while git apply unquoted it and wrote conftest.py (fixed in 99a1bdf)."""
    patch = new_file('"conftest.py"', FORCE_PASS_CONFTEST)
    result = grade(toy_task, patch, runtime=toy_runtime)
    assert not result.resolved, result.detail
    assert result.fail_to_pass[ADD_TEST] is TestStatus.FAILED


def test_grading_rename_header_into_conftest_is_refused(toy_task, episode):
    """Was a hole at 4021a70: git apply takes a rename's target from 'rename to', which the filter never
    read (unidiff names the section after its 'diff --git' line), so a file landed at conftest.py."""
    rename = "diff --git a/README.md b/README.md\nsimilarity index 100%\nrename from README.md\nrename to conftest.py\n"
    result = grade_in_episode(toy_task, toy_task.patch + rename, episode)
    landed = episode.run("test -e conftest.py && echo LANDED || echo absent").output
    assert "LANDED" not in landed, result
    assert result.outcome is Outcome.PATCH_APPLY_FAILED or any(
        "conftest.py" in p for p in result.ignored_paths
    )


def test_grading_octal_quoted_git_config_smudges_the_test_patch(toy_task, toy_runtime):
    """Was a hole at 4021a70: '\\056git/config' passes filter_candidate's .git rule; git apply refuses it
    but the `patch --fuzz=3` fallback wrote .git/config, whose smudge filter rewrote the task's test patch as git
    apply wrote it (the test became 'add(2, 3) == -1'). Grading episodes now see a read-only pristine .git."""
    attributes = new_file(".gitattributes", "tests/*.py filter=evil\n")
    git_config = (
        '--- "a/\\056git/config"\n'
        '+++ "b/\\056git/config"\n'
        "@@ -5,0 +6,2 @@\n"
        '+[filter "evil"]\n'
        "+\tsmudge = sed s/5$/-1/\n"
    )
    result = grade(toy_task, attributes + git_config, runtime=toy_runtime)
    assert not result.resolved, result.detail
    assert result.outcome is Outcome.PATCH_APPLY_FAILED


def test_grading_odd_prefix_pyproject_addopts_loads_a_candidate_plugin(toy_task, toy_runtime):
    """Was a hole at 4021a70: git apply strips ANY first component (-p1), the filter only 'a/' and 'b/': with
    '--- x/pyproject.toml' the pytest-table check found no pristine text under 'x/pyproject.toml' and kept an
    addopts line loading the candidate's own plugin. The header filter still misses the prefix; since 99a1bdf
    the check of what really changed after the apply stops it."""
    plugin = new_file("src/calc/hooks.py", FORCE_PASS_CONFTEST)
    addopts = (
        "--- x/pyproject.toml\n"
        "+++ y/pyproject.toml\n"
        "@@ -13,2 +13,3 @@\n"
        " [tool.pytest.ini_options]\n"
        ' testpaths = ["tests"]\n'
        '+addopts = "-p calc.hooks"\n'
    )
    result = grade(toy_task, plugin + addopts, runtime=toy_runtime)
    assert not result.resolved, result.detail
    assert result.fail_to_pass[ADD_TEST] is not TestStatus.PASSED


def test_grading_malformed_quoted_path_is_an_outcome_not_a_crash(toy_task, toy_runtime):
    """Was a hole at 99a1bdf: header names with escapes git would reject (\\189 is no octal byte,
    \\u20ac no escape at all) made grade() raise instead of returning an outcome."""
    for name in ('"x\\189.py"', '"x\\\u20ac.py"', '"x\\"', '"\\0"'):
        patch = toy_task.patch + new_file(name, "x = 1\n")
        result = grade(toy_task, patch, runtime=toy_runtime)  # the attack: this raised
        assert result.outcome in (Outcome.PATCH_APPLY_FAILED, Outcome.RESOLVED), (name, result.detail)


def test_grading_gitattributes_breaking_the_test_patch_is_the_candidates_fault(toy_task, toy_runtime):
    """Was a hole at 4021a70: a candidate .gitattributes with working-tree-encoding on the test files made
    the task's test patch fail in git apply, and the grade blamed the task (INFRA_ERROR, an 'error' instance)."""
    from repogym.grading.batch import ERROR_OUTCOMES

    patch = new_file(".gitattributes", "tests/*.py working-tree-encoding=UTF-16LE\n")
    result = grade(toy_task, patch, runtime=toy_runtime)
    assert not result.resolved
    assert result.outcome not in ERROR_OUTCOMES, result.detail


def test_grading_gold_still_resolves_after_hostile_runs(toy_task, toy_runtime):
    """Control: the shared toy runtime, after the attacks graded on it (these and the other test_hostile_*
    files'), still grades the gold patch as resolved."""
    result = grade(toy_task, toy_patch(toy_task, "src/calc/__init__.py", FIXED_SOURCE), runtime=toy_runtime)
    assert result.resolved, result.detail
