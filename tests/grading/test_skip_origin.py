"""Where a skip came from, as the report plugin records it and the judge weighs it: real pytest runs in the
sandbox (today's pytest, and pytest 5.4 on Python 3.9) of a small repo with one test per way to be skipped."""

from __future__ import annotations

import dataclasses

import pytest

from repogym.grading.judge import judge
from repogym.grading.report import Outcome, SkipRule, TestStatus
from repogym.task import Task

from ..support.sandbox import RUNS, run_all
from ..support.tasks import git_task

CORE = """
import unittest
import pytest

def hide_with_skiptest():
    raise unittest.SkipTest("the code under test hides a failure")

def hide_with_pytest_skip():
    pytest.skip("the code under test hides a failure")

def hide_behind_tracebackhide():
    __tracebackhide__ = True
    pytest.skip("hidden from pytest's own crash location")
"""

TESTS = """
import sys, unittest
import pytest
import pkg.core as core

@pytest.mark.skip(reason="marked")
def test_mark():
    pass

@pytest.mark.skipif(sys.version_info > (0,), reason="always")
def test_skipif():
    pass

def test_skip_in_test():
    pytest.skip("the test's own skip")

def test_importorskip_in_test():
    pytest.importorskip("no_such_module_anywhere")

def test_fixture_skip(skipping_fixture):
    pass

def test_code_raises_skiptest():
    core.hide_with_skiptest()

def test_code_calls_pytest_skip():
    core.hide_with_pytest_skip()

def test_code_hides_its_frame():
    core.hide_behind_tracebackhide()

class TestUnit(unittest.TestCase):
    @unittest.skip("decorated")
    def test_decorated(self):
        pass

    def test_skiptest_in_test(self):
        self.skipTest("the test's own runtime skip")

    def test_code_raises_skiptest(self):
        core.hide_with_skiptest()
"""

CONFTEST = """
import pytest

@pytest.fixture
def skipping_fixture():
    pytest.skip("the fixture's skip")
"""

MODULE_SKIP = 'import pytest\npytest.importorskip("no_such_module_anywhere")\n\ndef test_never():\n    pass\n'
PACKAGE_SKIP = "import pkg.skip_on_import\n\ndef test_never():\n    pass\n"
SKIP_ON_IMPORT = 'import unittest\nraise unittest.SkipTest("the package skips every test that imports it")\n'

T = "tests/test_skips.py::"


def expected(python: str) -> dict[str, str]:
    # Python >= 3.11's unittest reports a skip while it handles the SkipTest, so pytest's addSkip sees it.
    context = not python or tuple(int(p) for p in python.split(".")[:2]) >= (3, 11)
    return {
        T + "test_mark": "mark",
        T + "test_skipif": "mark",
        T + "test_skip_in_test": "tests/test_skips.py",
        T + "test_importorskip_in_test": "tests/test_skips.py",
        T + "test_fixture_skip": "tests/conftest.py",
        T + "test_code_raises_skiptest": "pkg/core.py",
        T + "test_code_calls_pytest_skip": "pkg/core.py",
        T + "test_code_hides_its_frame": "pkg/core.py",
        T + "TestUnit::test_decorated": "mark",
        T + "TestUnit::test_skiptest_in_test": "tests/test_skips.py" if context else "",
        T + "TestUnit::test_code_raises_skiptest": "pkg/core.py" if context else "",
        T + "test_ok": "",
    }


@pytest.fixture(scope="module", params=sorted(RUNS))
def skips_run(request, tmp_path_factory, toy_task):
    """(python, report) of one real run; toy_task sets the shared cache."""
    files = {
        "pkg/__init__.py": "",
        "pkg/core.py": CORE,
        "pkg/skip_on_import.py": SKIP_ON_IMPORT,
        "tests/conftest.py": CONFTEST,
        "tests/test_skips.py": TESTS + "\n\ndef test_ok():\n    pass\n",
        "tests/test_module_skip.py": MODULE_SKIP,
        "tests/test_package_skip.py": PACKAGE_SKIP,
    }
    env = dataclasses.replace(RUNS[request.param], test_cmd="python -m pytest -rA")  # pkg/ importable
    task = git_task(
        tmp_path_factory.mktemp(request.param), files, env, f"t__skips-{request.param}", T + "test_ok"
    )
    report, log = run_all(task, tmp_path_factory.mktemp("logs"))
    assert report.collected, report.note + log
    return env.python, report


@pytest.fixture(scope="module")
def skips_report(skips_run):
    return skips_run[1]


@pytest.mark.slow
def test_every_skip_records_where_it_came_from(skips_run) -> None:
    python, report = skips_run
    assert {t: r.skipped_from for t, r in report.results.items()} == expected(python)
    assert all(r.status is TestStatus.SKIPPED for t, r in report.results.items() if t != T + "test_ok")


@pytest.mark.slow
def test_modules_skipped_at_collection_record_their_origin(skips_report) -> None:
    assert skips_report.skipped_modules == {
        "tests/test_module_skip.py": "tests/test_module_skip.py",
        "tests/test_package_skip.py": "pkg/skip_on_import.py",
    }


def _verdict(report, pass_to_pass, rule=SkipRule.STRICT):
    task = Task("t", "o/r", "c0ffee", "", FAIL_TO_PASS=[T + "test_ok"], PASS_TO_PASS=pass_to_pass)
    return judge(task, report, skip_rule=rule)


@pytest.mark.parametrize(
    "test_id",
    [
        T + "test_mark",
        T + "test_skipif",
        T + "test_skip_in_test",
        T + "test_importorskip_in_test",
        T + "test_fixture_skip",
        T + "TestUnit::test_decorated",
        "tests/test_module_skip.py::test_never",
    ],
)
@pytest.mark.slow
@pytest.mark.parametrize("rule", list(SkipRule))
def test_pass_to_pass_skipped_by_the_tests_is_still_not_a_pass(skips_report, test_id: str, rule) -> None:
    """Strict: no skip origin is trusted (a skipif condition or an importorskip reads the code under test).
    SWE-bench: its pytest parser reads `SKIPPED [1] file:line` and never sees the test's id, so the test is
    missing, i.e. failed (judge.py's SKIPPED rules)."""
    verdict = _verdict(skips_report, [test_id], rule)
    assert verdict.outcome is Outcome.UNRESOLVED, verdict.detail
    assert verdict.pass_to_pass[test_id] is TestStatus.SKIPPED and test_id not in verdict.not_counted


@pytest.mark.parametrize(
    "test_id",
    [
        T + "test_code_raises_skiptest",
        T + "test_code_calls_pytest_skip",
        T + "test_code_hides_its_frame",
        T + "TestUnit::test_code_raises_skiptest",
        "tests/test_package_skip.py::test_never",
    ],
)
@pytest.mark.slow
def test_hostile_skip_raised_by_code_under_test_hides_no_regression(skips_report, test_id: str) -> None:
    """The attack: the patch breaks a PASS_TO_PASS test and makes the code under test raise a skip on the way,
    hoping the grader counts a skipped test as no regression (SWE-bench's rule for skips)."""
    verdict = _verdict(skips_report, [test_id])
    assert verdict.outcome is Outcome.UNRESOLVED
    assert verdict.pass_to_pass[test_id] is TestStatus.SKIPPED and test_id not in verdict.not_counted


@pytest.mark.slow
def test_a_skipped_fail_to_pass_test_never_passes(skips_report) -> None:
    task = Task("t", "o/r", "c0ffee", "", FAIL_TO_PASS=[T + "test_mark"], PASS_TO_PASS=[])
    assert judge(task, skips_report).outcome is Outcome.UNRESOLVED
