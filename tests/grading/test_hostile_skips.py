"""Attacks through skipped tests: a candidate that cannot make a required test pass makes it skip instead,
hoping the grader counts a skip as no failure. Each runs `grade` on a small real repo in the bwrap sandbox
and is named after its attack; none may resolve under the strict rule (rewards), and each is checked under
SWE-bench's rule too (judge.py's SKIPPED rules: for a pytest log SWE-bench sees no skipped test's id).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from repogym.grading.grade import grade
from repogym.grading.judge import judge, skip_rule_for
from repogym.grading.report import Outcome, SkipRule, TestReport, TestStatus
from repogym.sandbox.runtime import TaskRuntime
from repogym.task import Source, Task

from ..support.git import staged_diff
from ..support.sandbox import RUNS
from ..support.tasks import git_task

CORE_BUGGY = "def add(a, b):\n    return a - b\n"
CORE_FIXED = "def add(a, b):\n    return a + b\n"
OPTIONAL = "def fast_mul(a, b):\n    return a * b\n"
TESTS = """import pytest
import pkg.core as core
from pkg import features


def test_add():
    assert core.add(2, 3) == 5


def test_mul_optional():
    optional = pytest.importorskip("pkg.optional")
    assert optional.fast_mul(2, 3) == 6


@pytest.mark.skipif(not features.HAS_FAST, reason="no fast path")
def test_fast_path():
    from pkg.optional import fast_mul
    assert fast_mul(3, 3) == 9
"""
T = "tests/test_core.py::"
# What a patch that breaks fast_mul does to hide it: the module fails to import, or the flag reads False.
BROKEN_OPTIONAL = 'raise ModuleNotFoundError("hidden regression")\n\ndef fast_mul(a, b):\n    return 0\n'
BROKEN_MUL = "def fast_mul(a, b):\n    return 0\n"


@pytest.fixture(scope="module")
def skip_repo(tmp_path_factory, toy_task):
    """(task, runtime) of the repo above; toy_task sets the shared cache."""
    files = {
        "pkg/__init__.py": "",
        "pkg/core.py": CORE_BUGGY,
        "pkg/optional.py": OPTIONAL,
        "pkg/features.py": "HAS_FAST = True\n",
        "tests/test_core.py": TESTS,
    }
    env = dataclasses.replace(RUNS["pytest-now"], test_cmd="python -m pytest -rA")
    task = git_task(tmp_path_factory.mktemp("skips"), files, env, "t__hostile-skips", T + "test_add")
    task = dataclasses.replace(task, PASS_TO_PASS=[T + "test_mul_optional", T + "test_fast_path"])
    repo = Path(task.repo_source)
    task = dataclasses.replace(task, patch=staged_diff(repo, {"pkg/core.py": CORE_FIXED}))
    return task, TaskRuntime.create(task, "bwrap").prepare()


def _grade(skip_repo, files: dict[str, str], rule: SkipRule) -> tuple[Task, object]:
    task, runtime = skip_repo
    return task, grade(task, staged_diff(Path(task.repo_source), files), runtime=runtime, skip_rule=rule)


@pytest.mark.slow
@pytest.mark.parametrize("rule", list(SkipRule))
def test_the_gold_patch_of_the_skip_repo_resolves(skip_repo, rule):
    result = _grade(skip_repo, {"pkg/core.py": CORE_FIXED}, rule)[1]
    assert result.outcome is Outcome.RESOLVED, result.detail


@pytest.mark.slow
@pytest.mark.parametrize("rule", list(SkipRule))
def test_patch_that_skips_a_fail_to_pass_test_is_not_resolved(skip_repo, rule):
    skipping = "import pytest\n\ndef add(a, b):\n    pytest.skip('not today')\n"
    _, result = _grade(skip_repo, {"pkg/core.py": skipping}, rule)
    assert result.outcome is Outcome.UNRESOLVED
    assert result.fail_to_pass[T + "test_add"] is TestStatus.SKIPPED


@pytest.mark.slow
@pytest.mark.parametrize("rule", list(SkipRule))
def test_patch_that_breaks_an_importorskip_target_is_not_resolved(skip_repo, rule):
    """The skip is raised from the test file (which the candidate cannot change), but the candidate chose it:
    an origin rule that trusts skips from test files resolved this before."""
    _, result = _grade(skip_repo, {"pkg/core.py": CORE_FIXED, "pkg/optional.py": BROKEN_OPTIONAL}, rule)
    assert result.outcome is Outcome.UNRESOLVED
    assert result.pass_to_pass[T + "test_mul_optional"] is TestStatus.SKIPPED
    assert T + "test_mul_optional" not in result.not_counted


@pytest.mark.slow
@pytest.mark.parametrize("rule", list(SkipRule))
def test_patch_that_flips_a_skipif_condition_is_not_resolved(skip_repo, rule):
    """A skipif mark is the test's own, but its condition reads the code under test."""
    files = {
        "pkg/core.py": CORE_FIXED,
        "pkg/features.py": "HAS_FAST = False\n",
        "pkg/optional.py": BROKEN_MUL,
    }
    _, result = _grade(skip_repo, files, rule)
    assert result.outcome is Outcome.UNRESOLVED
    assert result.pass_to_pass[T + "test_fast_path"] is TestStatus.SKIPPED


@pytest.mark.slow
def test_an_imported_task_is_graded_strictly_unless_asked(skip_repo):
    """Rewards call grade() without a rule: SWE-bench's rule must never reach them, even for SWE-bench tasks."""
    task, runtime = skip_repo
    imported, mined = (dataclasses.replace(task, source=source) for source in (Source.IMPORTED, Source.MINED))
    patch = staged_diff(Path(task.repo_source), {"pkg/core.py": CORE_FIXED, "pkg/optional.py": BROKEN_OPTIONAL})
    result = grade(imported, patch, runtime=runtime)
    assert result.skip_rule is SkipRule.STRICT and result.outcome is Outcome.UNRESOLVED
    assert skip_rule_for(imported) is SkipRule.SWEBENCH and skip_rule_for(mined) is SkipRule.STRICT


# -- SWE-bench's rule where its parser sees skips by name (django's / unittest's `... skipped`) ----------


def _unittest_task(pass_to_pass: list[str]) -> Task:
    task = Task("t", "o/r", "c0ffee", "", FAIL_TO_PASS=["test_a (m.T)"], PASS_TO_PASS=pass_to_pass)
    return dataclasses.replace(task, env=dataclasses.replace(task.env, log_parser="django"))


def test_swebench_rule_counts_a_skipped_pass_to_pass_test_of_a_django_log_as_maintained():
    task = _unittest_task(["test_b (m.T)"])
    report = TestReport.from_statuses({"test_a (m.T)": TestStatus.PASSED, "test_b (m.T)": TestStatus.SKIPPED})
    assert judge(task, report, skip_rule=SkipRule.SWEBENCH).outcome is Outcome.RESOLVED
    assert judge(task, report, skip_rule=SkipRule.STRICT).outcome is Outcome.UNRESOLVED


def test_swebench_rule_fails_a_skipped_fail_to_pass_test_of_a_django_log():
    task = _unittest_task([])
    report = TestReport.from_statuses({"test_a (m.T)": TestStatus.SKIPPED})
    for rule in SkipRule:
        assert judge(task, report, skip_rule=rule).outcome is Outcome.UNRESOLVED
