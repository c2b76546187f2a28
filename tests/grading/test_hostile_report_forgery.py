"""Attacks on the test report itself: a candidate that leaves the bug in place and
tries to be graded RESOLVED by changing what the report says, not by fixing the code. Each runs through
`grade` on the toy task in the real bwrap sandbox and is named after its attack; none may resolve.

The first five were found by an independent attack pass (issue 9); the forgers after them are written to
beat a canary that a naive grader would plant, and the rest stand for whole classes of ways to get code
loaded before, or instead of, the harness. The last ones (issue 26) beat the canary of 385871c itself, on a
synthetic task (no test patch, so no canary at all) and on one with a test patch; the same attacks through
the gym are in tests/env/test_hostile_forgery_gym.py, and the xfail ones in test_hostile_marks.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from repogym.audit.forgers import IN_PROCESS
from repogym.grading.grade import grade
from repogym.grading.report import Outcome, TestStatus
from repogym.sandbox.runtime import TaskRuntime
from repogym.testing import BUGGY_SOURCE, toy_patch

from ..support.forgers import FORGERS, assert_not_paid, forged_patch
from ..support.patches import buggy_with, new_file
from ..support.tasks import make_synthetic_toy_task

ADD_TEST = "tests/test_calc.py::test_add"

# A pytest plugin that turns every failure into a pass and the session's exit status into 0.
FORCE_PASS_HOOKS = (
    "import pytest\n"
    "\n"
    "@pytest.hookimpl(hookwrapper=True)\n"
    "def pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n"
    "    outcome.get_result().outcome = 'passed'\n"
    "\n"
    "def pytest_sessionfinish(session, exitstatus):\n"
    "    session.exitstatus = 0\n"
)

# Writes a complete, consistent report of passes for every `def test_...` in the test files it is given,
# wherever the report file is (found through the environment or the process's open descriptors).
REPORT_WRITER = (
    "import json, os, re, sys\n"
    "def forge_report(files):\n"
    "    path = os.environ.get('REPOGYM_REPORT_FILE')\n"
    "    for fd in os.listdir('/proc/self/fd'):\n"
    "        try:\n"
    "            target = os.readlink('/proc/self/fd/' + fd)\n"
    "        except OSError:\n"
    "            continue\n"
    "        if target.startswith('/opt/repogym/out/'):\n"
    "            path = target\n"
    "    if not path:\n"
    "        return False\n"
    "    records = [{'event': 'start'}]\n"
    "    for name in files:\n"
    "        for test in re.findall(r'^def (test_\\w+)', open(name).read(), re.M):\n"
    "            for when in ('setup', 'call', 'teardown'):\n"
    "                records.append({'event': 'test', 'nodeid': name + '::' + test, 'when': when,\n"
    "                                'outcome': 'passed', 'wasxfail': False, 'xfail_marked': False})\n"
    "    records.append({'event': 'sessionfinish', 'exitstatus': 0, 'records': len(records) - 1})\n"
    "    with open(path, 'w') as out:\n"
    "        out.write(''.join(json.dumps(r) + '\\n' for r in records))\n"
    "    return True\n"
)


def _assert_not_resolved(result, *outcomes: Outcome) -> None:
    assert not result.resolved, result.detail
    assert result.fail_to_pass[ADD_TEST] is not TestStatus.PASSED, result.fail_to_pass
    if outcomes:
        assert result.outcome in outcomes, (result.outcome, result.detail)


# -- the five attacks of issue 9 ----------------------------------------------------------------------


def test_grading_code_under_test_calls_pytest_xfail(toy_task, toy_runtime):
    """Was a hole at 0d275aa: `add` called pytest.xfail() and the failing test read XFAIL, which counts as
    passing. An expected failure now counts only for a test that carries an xfail mark."""
    code = BUGGY_SOURCE.replace(
        "def add(a, b):\n", "def add(a, b):\n    import pytest\n    pytest.xfail('wip')\n"
    )
    result = grade(toy_task, toy_patch(toy_task, "src/calc/__init__.py", code), runtime=toy_runtime)
    _assert_not_resolved(result, Outcome.UNRESOLVED)
    assert result.fail_to_pass[ADD_TEST] is TestStatus.FAILED


def test_grading_pytest_py_at_the_root_shadows_pytest(toy_task, toy_runtime):
    """Was a hole at 0d275aa: with `python -m pytest` the working directory is first on sys.path, so a
    pytest.py at the repository root ran instead of pytest and wrote a report of passes. The launcher imports
    the real pytest before the repository is on sys.path; the candidate's file is kept, and never used."""
    fake_pytest = REPORT_WRITER + (
        "forge_report([a for a in sys.argv[1:] if a.endswith('.py')])\n"
        "sys.exit(0)\n"
        "def main(*args, **kwargs):\n"
        "    forge_report([a for a in (args[0] if args else sys.argv[1:]) if a.endswith('.py')])\n"
        "    return 0\n"
    )
    result = grade(toy_task, new_file("pytest.py", fake_pytest), runtime=toy_runtime)
    _assert_not_resolved(result, Outcome.UNRESOLVED)
    assert result.fail_to_pass[ADD_TEST] is TestStatus.FAILED


def test_grading_dot_pytest_ini_loads_a_plugin_from_the_package(toy_task, toy_runtime):
    """Was a hole at 0d275aa (an agent got reward 0.9 with it through bash and submit): .pytest.ini is read
    before pyproject.toml and was not on the refused list; its addopts loaded a force-pass plugin."""
    patch = new_file(".pytest.ini", "[pytest]\naddopts = -p calc.hooks\n") + new_file(
        "src/calc/hooks.py", FORCE_PASS_HOOKS
    )
    result = grade(toy_task, patch, runtime=toy_runtime)
    _assert_not_resolved(result, Outcome.UNRESOLVED)
    assert ".pytest.ini (test configuration)" in result.ignored_paths


def test_grading_dist_info_registers_a_pytest11_entry_point_plugin(toy_task, toy_runtime):
    """Was a hole at 0d275aa: /testbed/src is on sys.path (the editable install), so a *.dist-info folder
    there registered a pytest11 entry point that pytest autoloaded. Package metadata is refused."""
    metadata = "Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n"
    patch = (
        new_file("src/evil-1.0.dist-info/METADATA", metadata)
        + new_file("src/evil-1.0.dist-info/entry_points.txt", "[pytest11]\nevil = calc.hooks\n")
        + new_file("src/calc/hooks.py", FORCE_PASS_HOOKS)
    )
    result = grade(toy_task, patch, runtime=toy_runtime)
    _assert_not_resolved(result, Outcome.UNRESOLVED)
    assert "src/evil-1.0.dist-info/entry_points.txt (package metadata (entry points))" in result.ignored_paths


def test_grading_repogym_report_package_replaces_the_report_plugin(toy_task, toy_runtime):
    """Was a hole at 0d275aa: the filter compared base names, so repogym_report/__init__.py passed it and,
    first on sys.path, stood in for the plugin, reporting every test as passed."""
    fake_plugin = (
        "import json, os\n"
        "_out = open(os.environ.pop('REPOGYM_REPORT_FILE'), 'w')\n"
        "_records = [0]\n"
        "def _write(record):\n"
        "    _out.write(json.dumps(record) + '\\n'); _out.flush()\n"
        "_write({'event': 'start'})\n"
        "def pytest_runtest_logreport(report):\n"
        "    _records[0] += 1\n"
        "    _write({'event': 'test', 'nodeid': report.nodeid, 'when': report.when, 'outcome': 'passed',\n"
        "            'wasxfail': False, 'xfail_marked': False})\n"
        "def pytest_sessionfinish(session, exitstatus):\n"
        "    session.exitstatus = 0\n"
        "    _write({'event': 'sessionfinish', 'exitstatus': 0, 'records': _records[0]})\n"
    )
    result = grade(toy_task, new_file("repogym_report/__init__.py", fake_plugin), runtime=toy_runtime)
    _assert_not_resolved(result, Outcome.UNRESOLVED)
    assert "repogym_report/__init__.py (a name of repogym's harness)" in result.ignored_paths


# -- forgers written to beat a canary -------------------------------------------------------------------

# Registers a hook plugin from the package's __init__ (no conftest, no configuration): it finds pytest's
# Config among the live objects.
_REGISTER_FROM_INIT = (
    "import gc as _gc, sys as _sys\n"
    "def _register(plugin):\n"
    "    config_class = getattr(_sys.modules.get('_pytest.config'), 'Config', None)\n"
    "    for obj in _gc.get_objects():\n"
    "        if config_class is not None and isinstance(obj, config_class):\n"
    "            obj.pluginmanager.register(plugin, 'calc-helper')\n"
    "            return True\n"
    "    return False\n"
)


def test_grading_forger_that_flips_only_tests_which_ran_the_patched_code(toy_task, toy_runtime):
    """A canary of its own design: a forger that spares the tests that never called into the package (a
    planted `assert False` test never does) and flips the failures of those that did, keeping exit status
    1 for the failure it spares. The grader's canary runs the FAIL_TO_PASS test itself, so it is flipped too."""
    forge = _REGISTER_FROM_INIT + (
        "import pytest as _pytest\n"
        "_called = []\n"
        "_real_add = add\n"
        "def add(a, b):\n"
        "    _called.append(1)\n"
        "    return _real_add(a, b)\n"
        "class _Flipper(object):\n"
        "    @_pytest.hookimpl(hookwrapper=True)\n"
        "    def pytest_runtest_call(self, item):\n"
        "        del _called[:]\n"
        "        yield\n"
        "    @_pytest.hookimpl(hookwrapper=True)\n"
        "    def pytest_runtest_makereport(self, item, call):\n"
        "        outcome = yield\n"
        "        report = outcome.get_result()\n"
        "        if call.when == 'call' and report.failed and _called:\n"
        "            report.outcome = 'passed'\n"
        "_register(_Flipper())\n"
    )
    result = grade(toy_task, buggy_with(toy_task, forge), runtime=toy_runtime)
    _assert_not_resolved(result, Outcome.REPORT_FORGED)


def test_grading_forger_that_flips_only_the_tests_the_diff_adds(toy_task, toy_runtime):
    """A forger that asks git which tests are new (the hidden tests the grader added), and flips only
    their failures. The canary is a `def test_...` in the same diff, so it is flipped with them."""
    forge = _REGISTER_FROM_INIT + (
        "import re as _re, subprocess as _subprocess, pytest as _pytest\n"
        "try:\n"
        "    _diff = _subprocess.check_output(['git', 'diff', 'HEAD', '--', 'tests'], cwd='/testbed').decode()\n"
        "except Exception:\n"
        "    _diff = ''\n"
        "_new = set(_re.findall(r'^\\+\\s*def (test_\\w+)', _diff, _re.M))\n"
        "class _Flipper(object):\n"
        "    @_pytest.hookimpl(hookwrapper=True)\n"
        "    def pytest_runtest_makereport(self, item, call):\n"
        "        outcome = yield\n"
        "        report = outcome.get_result()\n"
        "        if report.failed and item.name.split('[')[0] in _new:\n"
        "            report.outcome = 'passed'\n"
        "_register(_Flipper())\n"
    )
    result = grade(toy_task, buggy_with(toy_task, forge), runtime=toy_runtime)
    _assert_not_resolved(result, Outcome.REPORT_FORGED)


def test_grading_forger_that_spares_tests_not_in_the_test_patch(toy_task, toy_runtime):
    """A forger that reads the task's test patch from the jail's inbox and flips only the tests it adds:
    the grader empties the inbox before the tests run, so there is nothing to read."""
    forge = _REGISTER_FROM_INIT + (
        "import os as _os, re as _re, pytest as _pytest\n"
        "_names = set()\n"
        "for _name in (_os.listdir('/opt/repogym/in') if _os.path.isdir('/opt/repogym/in') else []):\n"
        "    _names |= set(_re.findall(r'def (test_\\w+)', open('/opt/repogym/in/' + _name).read()))\n"
        "class _Flipper(object):\n"
        "    @_pytest.hookimpl(hookwrapper=True)\n"
        "    def pytest_runtest_makereport(self, item, call):\n"
        "        outcome = yield\n"
        "        report = outcome.get_result()\n"
        "        if report.failed and item.name in _names:\n"
        "            report.outcome = 'passed'\n"
        "_register(_Flipper())\n"
    )
    result = grade(toy_task, buggy_with(toy_task, forge), runtime=toy_runtime)
    _assert_not_resolved(result, Outcome.UNRESOLVED)
    assert result.fail_to_pass[ADD_TEST] is TestStatus.FAILED


def test_grading_report_written_through_proc_self_fd_then_os_exit(toy_task, toy_runtime):
    """Code under test finds the report through /proc/self/fd, writes a complete report of passes for the
    tests it can read in the test files, and leaves with os._exit(0): consistent, but without the canary."""
    forge = REPORT_WRITER + (
        "if forge_report(['tests/test_calc.py']):\n    import os as _os\n    _os._exit(0)\n"
    )
    result = grade(toy_task, buggy_with(toy_task, forge), runtime=toy_runtime)
    _assert_not_resolved(result, Outcome.REPORT_FORGED)


def test_grading_package_init_monkeypatches_pytest_reports(toy_task, toy_runtime):
    """Monkeypatching pytest's internals from the package's __init__: every TestReport made says passed."""
    forge = (
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
    result = grade(toy_task, buggy_with(toy_task, forge), runtime=toy_runtime)
    _assert_not_resolved(result, Outcome.REPORT_FORGED, Outcome.TESTS_DID_NOT_RUN)


# -- classes of files loaded before, or instead of, the harness -----------------------------------------

_LOADED_BY_THEMSELVES = {
    "src/usercustomize.py": "a module run at interpreter start",
    "src/calc.pth": "a .pth file",
    "src/Evil.EGG-INFO/entry_points.txt": "package metadata (entry points)",
    "src/evil.egg-link": "package metadata (entry points)",
    "src/repogym_pytest.py": "a name of repogym's harness",
    "src/calc/__pycache__/__init__.cpython-311.pyc": "compiled code",
}


@pytest.mark.parametrize("path", sorted(_LOADED_BY_THEMSELVES))
def test_grading_files_python_or_pytest_load_by_themselves_are_dropped(toy_task, toy_runtime, path):
    """Start-up modules, .pth files, entry-point metadata in any spelling, harness names, bytecode that
    need not match its source: all loaded without the code under test asking, so none is applied."""
    payload = FORCE_PASS_HOOKS if path.endswith(".py") else "[pytest11]\nevil = calc.hooks\n"
    result = grade(toy_task, new_file(path, payload), runtime=toy_runtime)
    _assert_not_resolved(result, Outcome.UNRESOLVED)
    assert f"{path} ({_LOADED_BY_THEMSELVES[path]})" in result.ignored_paths


def test_grading_tests_package_init_importing_hooks_is_a_test_file(toy_task, toy_runtime):
    """tests/__init__.py runs before every test module it holds; it is a test file, so the test patch's."""
    result = grade(toy_task, new_file("tests/__init__.py", FORCE_PASS_HOOKS), runtime=toy_runtime)
    _assert_not_resolved(result, Outcome.UNRESOLVED)
    assert "tests/__init__.py (test file)" in result.ignored_paths


def test_grading_pytest_plugins_in_a_package_module_loads_nothing(toy_task, toy_runtime):
    """pytest honours `pytest_plugins` in conftest files and test modules only; in the package it is inert."""
    patch = buggy_with(toy_task, "pytest_plugins = ['calc.hooks']\n") + new_file(
        "src/calc/hooks.py", FORCE_PASS_HOOKS
    )
    result = grade(toy_task, patch, runtime=toy_runtime)
    _assert_not_resolved(result, Outcome.UNRESOLVED)
    assert result.fail_to_pass[ADD_TEST] is TestStatus.FAILED


def test_grading_pyproject_pytest_table_by_another_spelling(toy_task, toy_runtime):
    """The same [tool.pytest.ini_options] table, spelled with quoted keys after the old one is removed: no
    header line matches `[tool.pytest`, but pytest reads the same table; the tables are compared instead."""
    pyproject = (Path(toy_task.repo_source) / "pyproject.toml").read_text()
    respelled = pyproject.replace(
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]',
        '["tool"."pytest"."ini_options"]\ntestpaths = ["tests"]\naddopts = "-p calc.hooks"',
    )
    assert respelled != pyproject
    patch = toy_patch(toy_task, "pyproject.toml", respelled) + new_file(
        "src/calc/hooks.py", FORCE_PASS_HOOKS
    )
    result = grade(toy_task, patch, runtime=toy_runtime)
    _assert_not_resolved(result, Outcome.UNRESOLVED)
    assert "pyproject.toml (test configuration section)" in result.ignored_paths


# -- forgers that beat the canary of 385871c (issue 26) ------------------------------------------------


def test_grading_gold_patch_resolves_on_both_shapes_of_task(task_and_runtime):
    """Control for the attacks below: the same tasks' gold patch resolves, with a canary planted (and failed)
    on the synthetic task too."""
    task, runtime = task_and_runtime
    result = grade(task, task.patch, runtime=runtime)
    assert result.resolved, (result.outcome, result.detail)
    log = Path(result.report.log_path).read_text()
    assert log.count("FAILED tests/test_calc.py::test_") == 1, log[-2000:]  # the canary, and nothing else


def test_grading_forger_swallows_assertion_error_in_runtest(task_and_runtime):
    """Was a hole at 385871c: the package wrapped pytest's Function.runtest in `except AssertionError: pass`.
    The failing tests passed; the canary caught the copied test's AssertionError itself and failed through
    pytest.fail (a BaseException), so it still failed: RESOLVED. The canary now fails through a plain assert
    and lets the copied test's exception through, so it is swallowed with the others: REPORT_FORGED."""
    task, runtime = task_and_runtime
    forger = FORGERS["swallows_assertion_error_in_runtest"]
    assert_not_paid(grade(task, forged_patch(task, forger), runtime=runtime), forger, forger.outcome)


def test_grading_forger_swallows_exception_in_runtest(task_and_runtime):
    """Was a hole at 385871c: the same with `except Exception`: pytest.fail's exception is no Exception."""
    task, runtime = task_and_runtime
    forger = FORGERS["swallows_exception_in_runtest"]
    assert_not_paid(grade(task, forged_patch(task, forger), runtime=runtime), forger, forger.outcome)


def test_grading_forger_strips_asserts_at_import(task_and_runtime):
    """Was a hole at 385871c: the package re-ran each test module from its syntax tree without its assert
    statements; the tests passed and the canary, failing through pytest.fail, still failed: RESOLVED. The
    canary's check is an assert of the test module now, stripped with the rest."""
    task, runtime = task_and_runtime
    forger = FORGERS["strips_asserts_at_import"]
    assert_not_paid(grade(task, forged_patch(task, forger), runtime=runtime), forger, forger.outcome)


def test_grading_forger_testreport_patched_at_import_on_a_synthetic_task(synthetic_task, synthetic_runtime):
    """Was a hole at 385871c: a synthetic task has no test patch, and the canary was planted only in a test
    patch's file, so a TestReport patched at import (every report says passed) resolved it (reward 0.9
    through submit). The canary is planted in the file that holds the FAIL_TO_PASS test now."""
    forger = FORGERS["testreport_patched_at_import"]
    result = grade(synthetic_task, forged_patch(synthetic_task, forger), runtime=synthetic_runtime)
    assert_not_paid(result, forger, Outcome.REPORT_FORGED)
    assert result.report.statuses()[ADD_TEST] is TestStatus.PASSED  # what the forged report claimed


def test_grading_candidate_rewrites_a_synthetic_tasks_test_file_that_does_not_look_like_one(tmp_path):
    """Was a hole at 385871c: only the test patch's files and paths that look like tests were protected, and
    a synthetic task's tests are files of the repository, named as that repository names them. Here the
    FAIL_TO_PASS test lives in calc_checks.py; a candidate rewrote it to pass. Every file that holds a
    required test is protected now."""
    task = make_synthetic_toy_task(tmp_path, test_file="calc_checks.py", instance_id="toy__calc-checks")
    runtime = TaskRuntime.create(task, "bwrap").prepare()
    assert grade(task, task.patch, runtime=runtime).resolved  # the test file is collected and run
    tests = (Path(task.repo_source) / "calc_checks.py").read_text()
    weakened = tests.replace("assert add(2, 3) == 5", "assert True")
    assert weakened != tests
    result = grade(task, toy_patch(task, "calc_checks.py", weakened), runtime=runtime)
    assert not result.resolved and result.outcome is Outcome.UNRESOLVED, (result.outcome, result.detail)
    assert result.ignored_paths and result.ignored_paths[0].startswith("calc_checks.py ("), (
        result.ignored_paths
    )


def test_grading_forger_strips_asserts_from_each_tests_own_source(task_and_runtime):
    """Was a hole after the canary became a plain assert (found by `repogym tasks audit`): the package stripped
    the asserts of each test from `inspect.getsource(test)` before it ran. For the canary, a copy made at run
    time with functools.wraps, getsource follows `__wrapped__` to the copied test's source, the rebuild failed,
    and the canary alone kept its assertion: the tests passed, the canary failed, RESOLVED. The canary is now a
    textual copy of the test in the file (canary_copy.py): its source is its own and it is stripped like the rest."""
    task, runtime = task_and_runtime
    code = BUGGY_SOURCE + "\n" + IN_PROCESS["asserts_stripped_before_each_test"]
    result = grade(task, toy_patch(task, "src/calc/__init__.py", code), runtime=runtime)
    assert result.outcome is Outcome.REPORT_FORGED, (result.outcome, result.detail)
    assert result.report.statuses()[ADD_TEST] is TestStatus.PASSED  # the forger ran: the real test's assert went
