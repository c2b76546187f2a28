"""Expected failures that code under test makes (repogym issue 26, item 3): an xfail mark added to the running
test, or added while the tests are collected, made a failing test XFAIL, which counts as a pass. Marks are
now the ones collection ends with (the report plugin), and an XFAIL counts only where a static reading of the
trusted test sources finds a mark that can apply (grading/xfail_marks.py, judged in judge.py). Real xfail
marks keep counting, as SWE-bench counts them.
"""

from __future__ import annotations

import textwrap

import pytest

from repogym.grading.canary import Canary
from repogym.grading.grade import grade
from repogym.grading.judge import judge
from repogym.grading.report import Outcome, TestReport, TestStatus
from repogym.grading.test_sources import after_test_patch, required_test_files
from repogym.grading.xfail_marks import XfailReading
from repogym.sandbox.runtime import TaskRuntime
from repogym.task import EnvSpec, Task

from ..support.forgers import FORGERS, assert_not_paid, forged_patch
from ..support.git import git, head
from ..support.patches import edit
from ..support.tasks import git_task, make_synthetic_toy_task

# -- the attacks, graded in the sandbox -------------------------------------------------------------------


def test_grading_forger_adds_xfail_mark_at_run_time(task_and_runtime):
    """Was a hole at 385871c: `add` found the running test on the stack and added
    xfail(raises=AssertionError) to it; pytest reported the failing test XFAIL and the plugin read the mark
    from the report's keywords, so it counted as a pass (the canary, failing through pytest.fail's own
    exception, was not an AssertionError and still failed): RESOLVED. Marks added after collection are
    ignored now: the test is FAILED."""
    task, runtime = task_and_runtime
    forger = FORGERS["adds_xfail_mark_at_run_time"]
    result = grade(task, forged_patch(task, forger), runtime=runtime)
    assert_not_paid(result, forger, Outcome.UNRESOLVED)
    assert result.fail_to_pass["tests/test_calc.py::test_add"] is TestStatus.FAILED


def test_grading_forger_patches_pytest_at_import_to_mark_xfail_at_collection(task_and_runtime):
    """Was a hole at 385871c: the package, imported while the test modules are collected, registered a
    plugin marking every test xfail(raises=AssertionError): the marks were there when collection ended, the
    failing test was XFAIL, a pass. No xfail mark in the trusted sources can apply to it, so it is not a pass
    now; and the canary, marked too, is reported XFAIL, which no honest run does: REPORT_FORGED."""
    task, runtime = task_and_runtime
    forger = FORGERS["patches_pytest_at_import_to_mark_xfail_at_collection"]
    result = grade(task, forged_patch(task, forger), runtime=runtime)
    assert_not_paid(result, forger, Outcome.REPORT_FORGED)
    assert result.report.statuses()["tests/test_calc.py::test_add"] is TestStatus.XFAIL  # pytest's view


_MARKED_TESTS = """
import pytest
from calc import add, mul

known_bug = pytest.mark.xfail(reason="tracked upstream")


def test_add():
    assert add(2, 3) == 5


def test_mul():
    assert mul(2, 3) == 6


@known_bug
def test_known():
    assert mul(2, 2) == 5


@pytest.mark.parametrize("value", [1, pytest.param(2, marks=pytest.mark.xfail)])
def test_param(value):
    assert mul(value, 1) == 1


class TestMarked:
    pytestmark = [pytest.mark.xfail(reason="whole class")]

    def test_in_class(self):
        assert mul(1, 1) == 2
"""


def test_grading_real_xfail_marks_still_count_as_passing(tmp_path):
    """SWE-bench's rule holds for marks the tests really carry: a decorator through a name bound to the
    mark, a pytest.param's marks, a class pytestmark: the gold patch resolves with those PASS_TO_PASS tests
    XFAIL, and the empty patch does not."""
    task = make_synthetic_toy_task(tmp_path, instance_id="toy__calc-marked")
    (tmp_path / "calc" / "tests" / "test_calc.py").write_text(_MARKED_TESTS)  # the next commit's tests
    task = _commit_tests(task, tmp_path / "calc")
    runtime = TaskRuntime.create(task, "bwrap").prepare()
    gold = grade(task, task.patch, runtime=runtime)
    assert gold.resolved, (gold.outcome, gold.detail)
    assert {t: gold.pass_to_pass[t] for t in task.PASS_TO_PASS} == {
        "tests/test_calc.py::test_mul": TestStatus.PASSED,
        "tests/test_calc.py::test_known": TestStatus.XFAIL,
        "tests/test_calc.py::test_param[2]": TestStatus.XFAIL,
        "tests/test_calc.py::TestMarked::test_in_class": TestStatus.XFAIL,
    }
    empty = grade(task, "", runtime=runtime)
    assert not empty.resolved and empty.outcome is Outcome.UNRESOLVED


def _commit_tests(task: Task, repo) -> Task:
    git(repo, "commit", "-qam", "tests: marked")
    base = head(repo)
    p2p = ["test_mul", "test_known", "test_param[2]", "TestMarked::test_in_class"]
    return task.replace(base_commit=base, PASS_TO_PASS=[f"tests/test_calc.py::{t}" for t in p2p])


# -- the static reading ------------------------------------------------------------------------------------

_SOURCES = {
    "tests/test_a.py": textwrap.dedent(
        """\
        import pytest
        import unittest
        from tests.helpers import slow_bug, Base, Shared
        from . import helpers

        known_bug = pytest.mark.xfail(reason="x")
        CASES = [1, pytest.param(2, marks=known_bug)]

        @known_bug
        def test_bound_name(): pass

        @pytest.mark.xfail
        def test_decorated(): pass

        @pytest.mark.parametrize("v", CASES)
        def test_param_list(v): pass

        @slow_bug
        def test_imported_name(): pass

        def test_plain():
            pytest.xfail("raised at run time: no mark")

        @pytest.mark.xfail
        class TestDecorated:
            def test_m(self): pass

        class TestPytestmark:
            pytestmark = pytest.mark.xfail
            def test_m(self): pass

        class TestPlain(unittest.TestCase):
            @unittest.expectedFailure
            def test_expected(self): pass
            def test_m(self): pass

        class TestInherits(TestDecorated):
            pass

        class TestFromImported(Base):
            pass

        class TestFromModule(helpers.Shared):
            pass

        test_applied = pytest.mark.xfail(lambda: None)
        """
    ),
    "tests/helpers.py": textwrap.dedent(
        """\
        import pytest
        slow_bug = pytest.mark.xfail(run=False)

        class Base:
            @pytest.mark.xfail
            def test_marked(self): pass
            def test_not(self): pass

        class Shared:
            pytestmark = [pytest.mark.xfail]
        """
    ),
    "tests/test_module.py": "import pytest\npytestmark = pytest.mark.xfail\n\ndef test_any(): pass\n",
    "tests/sub/conftest.py": "def pytest_collection_modifyitems(items):\n    pass  # xfail the listed ones\n",
    "tests/sub/test_c.py": "def test_under_conftest(): pass\n",
    "tests/test_py2.py": "print 'python 2'\nimport pytest\n@pytest.mark.xfail\ndef test_old(): pass\n",
    "tests/test_py2_plain.py": "print 'python 2'\ndef test_old(): pass\n",
    "sympy/core/tests/test_s.py": "from sympy.testing.pytest import XFAIL\n@XFAIL\ndef test_s(): pass\ndef test_t(): pass\n",
}
_MARKED = [
    "tests/test_a.py::test_bound_name",
    "tests/test_a.py::test_decorated",
    "tests/test_a.py::test_param_list[2]",
    "tests/test_a.py::test_imported_name",
    "tests/test_a.py::TestDecorated::test_m",
    "tests/test_a.py::TestPytestmark::test_m",
    "tests/test_a.py::TestPlain::test_expected",
    "tests/test_a.py::TestInherits::test_m",
    "tests/test_a.py::TestFromImported::test_marked",
    "tests/test_a.py::TestFromModule::test_x",
    "tests/test_a.py::test_applied",
    "tests/test_module.py::test_any",
    "tests/sub/test_c.py::test_under_conftest",
    "tests/test_py2.py::test_old",
]
_UNMARKED = [
    "tests/test_a.py::test_plain",
    "tests/test_a.py::TestPlain::test_m",
    "tests/test_a.py::TestFromImported::test_not",
    "tests/test_a.py::test_missing",
    "tests/test_py2_plain.py::test_old",
    "tests/gone.py::test_x",
]


@pytest.mark.parametrize("test_id", _MARKED)
def test_the_static_reading_finds_every_shape_of_xfail_mark(test_id):
    assert XfailReading("pytest", _SOURCES.get).may_xfail(test_id)


@pytest.mark.parametrize("test_id", _UNMARKED)
def test_the_static_reading_finds_no_mark_where_there_is_none(test_id):
    """An xfail raised at run time (pytest.xfail() in the body), a sibling of a marked test, a base class's
    unmarked method, a file without marks, a test that is not there: no mark can apply."""
    assert not XfailReading("pytest", _SOURCES.get).may_xfail(test_id)


def test_the_static_reading_maps_other_frameworks_ids_to_their_files():
    unit = {
        "pkg/tests/test_u.py": "import unittest\nclass T(unittest.TestCase):\n    @unittest.expectedFailure\n    def test_a(self): pass\n    def test_b(self): pass\n"
    }
    reading = XfailReading("unittest", unit.get)
    assert reading.may_xfail("pkg.tests.test_u.T.test_a") and not reading.may_xfail(
        "pkg.tests.test_u.T.test_b"
    )
    django = {"tests/app/tests.py": unit["pkg/tests/test_u.py"]}
    reading = XfailReading("django", django.get)
    assert reading.may_xfail("test_a (app.tests.T)") and not reading.may_xfail("test_b (app.tests.T)")
    assert reading.may_xfail("test_a (app.tests.T.test_a)")
    sympy = XfailReading("sympy", _SOURCES.get, ["sympy/core/tests/test_s.py"])
    assert sympy.may_xfail("test_s") and not sympy.may_xfail("test_t")


def test_the_reading_is_of_the_files_after_the_test_patch(tmp_path):
    """The test patch can add the mark (or the file): the reading is of its result, not of the base commit."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("def test_a(): pass\n")
    patch = (
        "--- a/tests/test_x.py\n+++ b/tests/test_x.py\n@@ -1 +1,3 @@\n+import pytest\n"
        "+@pytest.mark.xfail\n def test_a(): pass\n"
    )
    read = after_test_patch(tmp_path, patch)
    assert XfailReading("pytest", read).may_xfail("tests/test_x.py::test_a")
    assert not XfailReading("pytest", after_test_patch(tmp_path, "")).may_xfail("tests/test_x.py::test_a")
    assert required_test_files("pytest", ["tests/test_x.py::test_a", "tests/new.py::t"], read) == [
        "tests/test_x.py"
    ]


# -- the judge ------------------------------------------------------------------------------------------

_TASK = Task("t", "o/r", "c0ffee", "", FAIL_TO_PASS=["t.py::a"], PASS_TO_PASS=["t.py::b"])


def _run(**statuses: TestStatus) -> TestReport:
    return TestReport.from_statuses({f"t.py::{name}": status for name, status in statuses.items()})


def test_judge_counts_an_xfail_only_where_a_mark_can_apply():
    report = _run(a=TestStatus.PASSED, b=TestStatus.XFAIL, test_x=TestStatus.FAILED)
    canary = Canary("t.py", "", ("t.py::test_x",))
    marked = judge(_TASK, report, canary, may_xfail=lambda test_id: test_id == "t.py::b")
    assert marked.outcome is Outcome.RESOLVED and marked.pass_to_pass == {"t.py::b": TestStatus.XFAIL}
    unmarked = judge(_TASK, report, canary, may_xfail=lambda test_id: False)
    assert unmarked.outcome is Outcome.UNRESOLVED and unmarked.pass_to_pass == {"t.py::b": TestStatus.FAILED}
    assert "no xfail mark in the task's test files can apply to them: t.py::b" in unmarked.detail


def test_judge_reads_a_canary_xfail_as_honest_only_under_a_class_or_module_mark():
    """A canary copied from a test in an xfail-marked class inherits the class's mark: its XFAIL is then an
    honest failure. Anywhere else an XFAIL canary is a forged report."""
    report = _run(a=TestStatus.PASSED, b=TestStatus.PASSED, test_x=TestStatus.XFAIL)
    canary = Canary("t.py", "", ("t.py::test_x",))
    assert judge(_TASK, report, canary, may_xfail=lambda test_id: True).outcome is Outcome.RESOLVED
    assert judge(_TASK, report, canary, may_xfail=lambda test_id: False).outcome is Outcome.REPORT_FORGED
    assert judge(_TASK, report, canary).outcome is Outcome.REPORT_FORGED


_UNIT_CALC = "def add(a, b):\n    return a - b\n"
_UNIT_TESTS = (
    "import unittest\n"
    "from calc import add\n\n\n"
    "class T(unittest.TestCase):\n"
    "    def test_add(self):\n"
    "        self.assertEqual(add(2, 3), 5)\n\n"
    "    def test_zero(self):\n"
    "        self.assertEqual(add(0, 0), 0)\n"
)
# Each test is tried once first; one that fails is flagged as expecting to fail, as the expectedFailure
# decorator flags it, before unittest runs it for real.
_UNIT_FORGER = (
    "\nimport unittest as _unittest\n"
    "_run = _unittest.TestCase.run\n"
    "def _run_expecting_failures(self, result=None):\n"
    "    try:\n"
    "        getattr(self, self._testMethodName)()\n"
    "    except Exception:\n"
    "        self.__unittest_expecting_failure__ = True\n"
    "    return _run(self, result)\n"
    "_unittest.TestCase.run = _run_expecting_failures\n"
)


def test_grading_forger_flags_failing_unittest_tests_as_expected_failures(tmp_path):
    """Was a hole at 385871c on a synthetic unittest task (no test patch, so no canary): the package,
    imported by the test module, wrapped TestCase.run to try each test first and flag a failing one with
    unittest's expectedFailure attribute, so it ended an expected failure (XFAIL, a pass): RESOLVED. No
    expectedFailure is written in the test file, so it is not a pass now, and the canary (planted in the
    test's own file) is flagged too: an expected failure no honest run has, REPORT_FORGED."""
    env = EnvSpec(log_parser="unittest", test_cmd="python -m unittest -v", install=("true",))
    task = git_task(
        tmp_path, {"calc.py": _UNIT_CALC, "test_calc.py": _UNIT_TESTS}, env, "unit-1", "test_calc.T.test_add"
    )
    task = task.replace(
        patch=edit("calc.py", _UNIT_CALC, _UNIT_CALC.replace("a - b", "a + b")),
        PASS_TO_PASS=["test_calc.T.test_zero"],
    )
    runtime = TaskRuntime.create(task, "bwrap").prepare()
    gold = grade(task, task.patch, runtime=runtime)
    assert gold.resolved, (gold.outcome, gold.detail)
    forged = grade(task, edit("calc.py", _UNIT_CALC, _UNIT_CALC + _UNIT_FORGER), runtime=runtime)
    assert not forged.resolved and forged.outcome is Outcome.REPORT_FORGED, (forged.outcome, forged.detail)
    assert forged.report.statuses()["test_calc.T.test_add"] is TestStatus.XFAIL  # the forger ran


