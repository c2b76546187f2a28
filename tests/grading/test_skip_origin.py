"""Where a skip came from, as the report plugin records it and the judge weighs it: real pytest runs of small
trusted files (host-side, like test_parsers_pytest.py), one per way a test can be skipped."""

from __future__ import annotations

import sys

import pytest

from repogym.grading.judge import judge
from repogym.grading.report import Outcome, TestStatus
from repogym.task import Task

from .test_parsers_pytest import PARSER, make_repo, run_pytest

CORE = '''
import unittest
import pytest

def hide_with_skiptest():
    raise unittest.SkipTest("the code under test hides a failure")

def hide_with_pytest_skip():
    pytest.skip("the code under test hides a failure")

def hide_behind_tracebackhide():
    __tracebackhide__ = True
    pytest.skip("hidden from pytest's own crash location")
'''

TESTS = '''
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
'''

CONFTEST = '''
import pytest

@pytest.fixture
def skipping_fixture():
    pytest.skip("the fixture's skip")
'''

MODULE_SKIP = 'import pytest\npytest.importorskip("no_such_module_anywhere")\n\ndef test_never():\n    pass\n'
PACKAGE_SKIP = "import pkg.skip_on_import\n\ndef test_never():\n    pass\n"
SKIP_ON_IMPORT = 'import unittest\nraise unittest.SkipTest("the package skips every test that imports it")\n'

T = "tests/test_skips.py::"
UNITTEST_CONTEXT = sys.version_info >= (3, 11)  # addSkip runs while unittest handles the SkipTest
EXPECTED = {
    T + "test_mark": "mark",
    T + "test_skipif": "mark",
    T + "test_skip_in_test": "tests/test_skips.py",
    T + "test_importorskip_in_test": "tests/test_skips.py",
    T + "test_fixture_skip": "tests/conftest.py",
    T + "test_code_raises_skiptest": "pkg/core.py",
    T + "test_code_calls_pytest_skip": "pkg/core.py",
    T + "test_code_hides_its_frame": "pkg/core.py",
    T + "TestUnit::test_decorated": "mark",
    T + "TestUnit::test_skiptest_in_test": "tests/test_skips.py" if UNITTEST_CONTEXT else "",
    T + "TestUnit::test_code_raises_skiptest": "pkg/core.py" if UNITTEST_CONTEXT else "",
}


@pytest.fixture(scope="module")
def skips_report(tmp_path_factory: pytest.TempPathFactory):
    repo = make_repo(tmp_path_factory.mktemp("skips"), {})
    for path, text in {
        "pkg/__init__.py": "",
        "pkg/core.py": CORE,
        "pkg/skip_on_import.py": SKIP_ON_IMPORT,
        "tests/conftest.py": CONFTEST,
        "tests/test_skips.py": TESTS,
        "tests/test_module_skip.py": MODULE_SKIP,
        "tests/test_package_skip.py": PACKAGE_SKIP,
    }.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    run = run_pytest(repo, test_cmd="python -m pytest -rA -p no:cacheprovider")
    report = PARSER.parse(run)
    assert report.collected, report.note + run.log
    return report


def test_every_skip_records_where_it_came_from(skips_report) -> None:
    assert {t: r.skipped_from for t, r in skips_report.results.items()} == EXPECTED
    assert all(r.status is TestStatus.SKIPPED for r in skips_report.results.values())


def test_modules_skipped_at_collection_record_their_origin(skips_report) -> None:
    assert skips_report.skipped_modules == {
        "tests/test_module_skip.py": "tests/test_module_skip.py",
        "tests/test_package_skip.py": "pkg/skip_on_import.py",
    }


def _verdict(report, pass_to_pass):
    task = Task("t", "o/r", "c0ffee", "", FAIL_TO_PASS=[T + "test_ok"], PASS_TO_PASS=pass_to_pass)
    results = {**report.results, T + "test_ok": type(next(iter(report.results.values())))(T + "test_ok", TestStatus.PASSED)}
    import dataclasses

    return judge(task, dataclasses.replace(report, results=results))


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
def test_pass_to_pass_skipped_by_the_tests_is_not_a_regression(skips_report, test_id: str) -> None:
    verdict = _verdict(skips_report, [test_id])
    assert verdict.outcome is Outcome.RESOLVED, verdict.detail
    assert test_id in verdict.not_counted


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
def test_hostile_skip_raised_by_code_under_test_hides_no_regression(skips_report, test_id: str) -> None:
    """The attack: the patch breaks a PASS_TO_PASS test and makes the code under test raise a skip on the way,
    hoping the grader counts a skipped test as no regression (SWE-bench's rule for skips)."""
    verdict = _verdict(skips_report, [test_id])
    assert verdict.outcome is Outcome.UNRESOLVED
    assert verdict.pass_to_pass[test_id] is TestStatus.SKIPPED and test_id not in verdict.not_counted


def test_a_skipped_fail_to_pass_test_never_passes(skips_report) -> None:
    task = Task("t", "o/r", "c0ffee", "", FAIL_TO_PASS=[T + "test_mark"], PASS_TO_PASS=[])
    assert judge(task, skips_report).outcome is Outcome.UNRESOLVED
