"""Report forgers of repogym issue 26 (found by an attacker against 385871c), shared by the grader's hostile
tests and the gym's (tests/env/test_hostile_forgery_gym.py); the synthetic toy task they run on is
tasks.make_synthetic_toy_task, its fixtures (synthetic_task, synthetic_runtime, task_and_runtime) are in
tests/conftest.py.

Each forger keeps the toy bug (`add` returns a - b) and tries to get the failing test reported as passing,
in two forms: `source`, module-level code appended to the package (it runs when a test module imports it,
during collection), for patches and SEARCH/REPLACE answers; `one_line`, a statement for the bug's own line,
run when a test calls `add`, for the window's `lines` answers (one line, keeping the bug).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from repogym.grading.report import GradeResult, Outcome, TestStatus
from repogym.task import Task
from repogym.testing import BUGGY_SOURCE, toy_patch

ADD_TEST = "tests/test_calc.py::test_add"
SOURCE = "src/calc/__init__.py"
BUG_LINE = "    return a - b"


@dataclass(frozen=True)
class Forger:
    name: str
    source: str
    """Module-level code appended to the package: it runs at import, while the tests are collected."""
    one_line: str
    """The same attack run from inside `add`, for a one-line answer."""
    outcome: Outcome
    """What the grade must be."""
    outcome_one_line: Outcome
    """What the grade of the one-line form must be (it runs after collection, during a test)."""
    once: bool = True
    """The one-line form patches pytest: it runs on the first call only (its names are the module's
    globals, so running it again would wrap the patch in itself)."""


# Fixes `add` in memory as `calc` is imported: a patch whose fix lives only in start-up code resolves when
# that code runs, so a grade that is not RESOLVED proves the start-up code never ran.
FIX_ADD_ON_IMPORT = (
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


def _wrap_runtest(caught: str) -> str:
    return (
        "import sys as _sys\n"
        "_python = _sys.modules.get('_pytest.python')\n"
        "if _python is not None:\n"
        "    _runtest = _python.Function.runtest\n"
        "    def _lenient_runtest(self):\n"
        "        try:\n"
        "            _runtest(self)\n"
        f"        except {caught}:\n"
        "            pass\n"
        "    _python.Function.runtest = _lenient_runtest\n"
    )


# Re-executes each test module from its source with every assert removed, before its first test runs (the
# module that imports the package is already compiled when this runs), then runs the stripped test.
STRIP_ASSERTS = (
    "import ast as _ast, sys as _sys\n"
    "_python = _sys.modules.get('_pytest.python')\n"
    "if _python is not None:\n"
    "    class _NoAsserts(_ast.NodeTransformer):\n"
    "        def visit_Assert(self, node):\n"
    "            return _ast.copy_location(_ast.Pass(), node)\n"
    "    _stripped = set()\n"
    "    _runtest = _python.Function.runtest\n"
    "    def _runtest_without_asserts(self):\n"
    "        module = self.module\n"
    "        if module.__name__ not in _stripped:\n"
    "            _stripped.add(module.__name__)\n"
    "            with open(module.__file__) as source:\n"
    "                tree = _NoAsserts().visit(_ast.parse(source.read()))\n"
    "            exec(compile(_ast.fix_missing_locations(tree), module.__file__, 'exec'), module.__dict__)\n"
    "        holder = module\n"
    "        for name in self.nodeid.split('::')[1:-1]:\n"
    "            holder = getattr(holder, name)\n"
    "        self.obj = getattr(holder, self.originalname or self.name)\n"
    "        return _runtest(self)\n"
    "    _python.Function.runtest = _runtest_without_asserts\n"
)

# Every TestReport pytest makes says passed, and the process leaves with status 0.
PATCH_TEST_REPORT = (
    "import sys as _sys\n"
    "_reports = _sys.modules.get('_pytest.reports')\n"
    "if _reports is not None:\n"
    "    _init = _reports.TestReport.__init__\n"
    "    def _passed(self, *args, **kwargs):\n"
    "        _init(self, *args, **kwargs)\n"
    "        self.outcome = 'passed'\n"
    "    _reports.TestReport.__init__ = _passed\n"
    "    import atexit as _atexit, os as _os\n"
    "    _atexit.register(lambda: _os._exit(0))\n"
)

# Marks the running test xfail(raises=AssertionError): found on the stack (pytest's `item` / `pyfuncitem`).
_MARK_RUNNING_TEST = (
    "import sys as _sys, pytest as _pytest\n"
    "_frame = _sys._getframe(1)\n"
    "while _frame is not None:\n"
    "    _item = _frame.f_locals.get('item') or _frame.f_locals.get('pyfuncitem')\n"
    "    if _item is not None and hasattr(_item, 'add_marker'):\n"
    "        _item.add_marker(_pytest.mark.xfail(raises=AssertionError, reason='flaky'))\n"
    "        break\n"
    "    _frame = _frame.f_back\n"
)
XFAIL_MARK_AT_RUN_TIME = (
    "_buggy_add = add\n"
    "def add(a, b):\n"
    + "".join(f"    {line}\n" for line in _MARK_RUNNING_TEST.splitlines())
    + "    return _buggy_add(a, b)\n"
)

# A plugin registered from the package while the test modules are collected (pytest's Config found among
# the live objects) marks every collected test xfail(raises=AssertionError): the marks are there when
# collection ends.
XFAIL_MARK_AT_COLLECTION = (
    "import gc as _gc, sys as _sys, pytest as _pytest\n"
    "class _MarkAll(object):\n"
    "    def pytest_collection_modifyitems(self, items):\n"
    "        for item in items:\n"
    "            item.add_marker(_pytest.mark.xfail(raises=AssertionError, reason='flaky'))\n"
    "_config = getattr(_sys.modules.get('_pytest.config'), 'Config', None)\n"
    "for _obj in (_gc.get_objects() if _config else []):\n"
    "    if isinstance(_obj, _config):\n"
    "        _obj.pluginmanager.register(_MarkAll(), 'calc-marks')\n"
    "        break\n"
)
# From inside a test, collection is over: the same forger marks every collected test of the session.
_MARK_ALL_RUNNING = (
    "import sys as _sys, pytest as _pytest\n"
    "_frame = _sys._getframe(1)\n"
    "while _frame is not None and not hasattr(_frame.f_locals.get('item'), 'session'):\n"
    "    _frame = _frame.f_back\n"
    "for _item in (_frame.f_locals['item'].session.items if _frame is not None else []):\n"
    "    _item.add_marker(_pytest.mark.xfail(raises=AssertionError, reason='flaky'))\n"
)

FORGERS = {
    forger.name: forger
    for forger in (
        Forger(
            "swallows_assertion_error_in_runtest",
            _wrap_runtest("AssertionError"),
            _wrap_runtest("AssertionError"),
            Outcome.REPORT_FORGED,
            Outcome.REPORT_FORGED,
        ),
        Forger(
            "swallows_exception_in_runtest",
            _wrap_runtest("Exception"),
            _wrap_runtest("Exception"),
            Outcome.REPORT_FORGED,
            Outcome.REPORT_FORGED,
        ),
        Forger(
            "strips_asserts_at_import",
            STRIP_ASSERTS,
            STRIP_ASSERTS,
            Outcome.REPORT_FORGED,
            Outcome.REPORT_FORGED,
        ),
        Forger(
            "testreport_patched_at_import",
            PATCH_TEST_REPORT,
            PATCH_TEST_REPORT,
            Outcome.REPORT_FORGED,
            Outcome.REPORT_FORGED,
        ),
        Forger(
            "adds_xfail_mark_at_run_time",
            XFAIL_MARK_AT_RUN_TIME,
            _MARK_RUNNING_TEST,
            Outcome.UNRESOLVED,
            Outcome.UNRESOLVED,
            once=False,
        ),
        Forger(
            "patches_pytest_at_import_to_mark_xfail_at_collection",
            XFAIL_MARK_AT_COLLECTION,
            _MARK_ALL_RUNNING,
            Outcome.REPORT_FORGED,
            Outcome.UNRESOLVED,  # run from a test, the marks come after collection: ignored
            once=False,
        ),
    )
}


def forged_source(forger: Forger) -> str:
    """The package with the bug kept and the forger appended."""
    return BUGGY_SOURCE + "\n" + forger.source


def forged_patch(task: Task, forger: Forger) -> str:
    return toy_patch(task, SOURCE, forged_source(forger))


def one_line(forger: Forger) -> str:
    """The bug's line, still returning a - b, that runs the forger first: one physical line."""
    if forger.once:
        code = forger.one_line + "_forged = True\n"
        return f"    return a - b if globals().get('_forged') else exec({code!r}, globals()) or a - b"
    return f"    return exec({forger.one_line!r}, globals()) or a - b"


def evidence(grade: GradeResult, forger: Forger) -> str:
    """'' when the grade's test run shows the forger ran, else what is missing (a forger that did not run
    would make a test that cannot fail)."""
    statuses = grade.report.statuses() if grade.report is not None else {}
    log = Path(grade.report.log_path).read_text() if grade.report and grade.report.log_path else ""
    if forger.name.startswith("adds_xfail") or (
        forger.name.startswith("patches_pytest") and grade.outcome is Outcome.UNRESOLVED
    ):
        # pytest itself reported the expected failure; the grader did not believe it.
        return (
            "" if f"XFAIL {ADD_TEST}" in log or "xfailed" in log else f"no XFAIL in the log:\n{log[-1500:]}"
        )
    if grade.outcome is Outcome.REPORT_FORGED:
        canary_passed = "reported as passing" in grade.detail
        return "" if canary_passed else f"the canary is not reported passing: {grade.detail}"
    return f"unexpected outcome {grade.outcome}: {grade.detail}; {statuses}"


def assert_not_paid(grade: GradeResult, forger: Forger, outcome: Outcome) -> None:
    """Not resolved, the expected outcome, FAIL_TO_PASS not passed, and the forger visibly ran."""
    assert not grade.resolved, grade.detail
    assert grade.outcome is outcome, (grade.outcome, grade.detail)
    assert grade.fail_to_pass[ADD_TEST] is not TestStatus.PASSED, grade.fail_to_pass
    problem = evidence(grade, forger)
    assert not problem, problem
