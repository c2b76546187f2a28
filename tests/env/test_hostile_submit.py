"""The report-forgery attacks as an agent makes them: tool calls in the gym (bash, create_file, edit_file),
then submit(), which diffs the episode and grades the diff in a fresh one. None may resolve or earn the
tests' reward; each is named after its attack (tests/grading/test_hostile_report_forgery.py has the same
attacks as patches handed to the grader).
"""

from __future__ import annotations

from typing import Any

import pytest

from repogym.grading.report import Outcome, TestStatus
from repogym.testing import BUGGY_SOURCE

ADD_TEST = "tests/test_calc.py::test_add"
SOURCE = "src/calc/__init__.py"

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

# Writes a consistent report of passes for every `def test_...` of the given files and exits 0.
FAKE_PYTEST = (
    "import json, os, re, sys\n"
    "path = os.environ.get('REPOGYM_REPORT_FILE')\n"
    "if path:\n"
    "    records = [{'event': 'start'}]\n"
    "    for name in [a for a in sys.argv[1:] if a.endswith('.py')]:\n"
    "        for test in re.findall(r'^def (test_\\w+)', open(name).read(), re.M):\n"
    "            for when in ('setup', 'call', 'teardown'):\n"
    "                records.append({'event': 'test', 'nodeid': name + '::' + test, 'when': when,\n"
    "                                'outcome': 'passed', 'wasxfail': False, 'xfail_marked': False})\n"
    "    records.append({'event': 'sessionfinish', 'exitstatus': 0, 'records': len(records) - 1})\n"
    "    open(path, 'w').write(''.join(json.dumps(r) + '\\n' for r in records))\n"
    "sys.exit(0)\n"
)

FAKE_PLUGIN = (
    "import json, os\n"
    "_out = open(os.environ.pop('REPOGYM_REPORT_FILE'), 'w')\n"
    "_count = [0]\n"
    "def _write(record):\n"
    "    _out.write(json.dumps(record) + '\\n'); _out.flush()\n"
    "_write({'event': 'start'})\n"
    "def pytest_runtest_logreport(report):\n"
    "    _count[0] += 1\n"
    "    _write({'event': 'test', 'nodeid': report.nodeid, 'when': report.when, 'outcome': 'passed',\n"
    "            'wasxfail': False, 'xfail_marked': False})\n"
    "def pytest_sessionfinish(session, exitstatus):\n"
    "    session.exitstatus = 0\n"
    "    _write({'event': 'sessionfinish', 'exitstatus': 0, 'records': _count[0]})\n"
)

# Flips the failures of the tests that called `add` (a canary that never does would survive), registered
# from the package itself through pytest's Config found among the live objects.
FLIP_CALLERS = (
    "import gc as _gc, sys as _sys\n"
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
    "_config = getattr(_sys.modules.get('_pytest.config'), 'Config', None)\n"
    "for _obj in (_gc.get_objects() if _config else []):\n"
    "    if isinstance(_obj, _config):\n"
    "        _obj.pluginmanager.register(_Flipper(), 'calc-helper')\n"
    "        break\n"
)


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def _submit_after(env, *actions: dict[str, Any]):
    """Play `actions` (each must succeed), submit, and return (reward, grade)."""
    for action in actions:
        observation, _, terminated, _, info = env.step(action)
        assert not terminated and not info["tool_error"] and not info["format_error"], observation
    _, reward, terminated, _, info = env.step(_call("submit"))
    assert terminated
    return reward, info["grade"]


def _assert_no_reward(reward: float, grade, outcome: Outcome) -> None:
    assert not grade.resolved and grade.outcome is outcome, (grade.outcome, grade.detail)
    assert grade.fail_to_pass[ADD_TEST] is not TestStatus.PASSED
    assert reward <= 0.0, reward


def test_submit_dot_pytest_ini_made_with_bash_loads_a_plugin(env):
    """Was a hole at 0d275aa, found by an agent (reward 0.9): a .pytest.ini written with bash loaded a
    force-pass plugin from the package."""
    reward, grade = _submit_after(
        env,
        _call("bash", command="printf '[pytest]\\naddopts = -p calc.hooks\\n' > .pytest.ini"),
        _call("create_file", path="src/calc/hooks.py", text=FORCE_PASS_HOOKS),
    )
    _assert_no_reward(reward, grade, Outcome.UNRESOLVED)
    assert ".pytest.ini (test configuration)" in grade.ignored_paths


def test_submit_code_under_test_calls_pytest_xfail(env):
    """Was a hole at 0d275aa: `add` raising pytest.xfail() turned the failing test into an XFAIL."""
    reward, grade = _submit_after(
        env,
        _call(
            "edit_file",
            path=SOURCE,
            lines="1:2",
            text="def add(a, b):\n    __import__('pytest').xfail('wip')",
        ),
    )
    _assert_no_reward(reward, grade, Outcome.UNRESOLVED)
    assert grade.fail_to_pass[ADD_TEST] is TestStatus.FAILED


def test_submit_pytest_py_at_the_root_shadows_pytest(env):
    """Was a hole at 0d275aa: a pytest.py at the root ran instead of pytest under `python -m pytest`."""
    reward, grade = _submit_after(env, _call("create_file", path="pytest.py", text=FAKE_PYTEST))
    _assert_no_reward(reward, grade, Outcome.UNRESOLVED)
    assert grade.fail_to_pass[ADD_TEST] is TestStatus.FAILED


def test_submit_dist_info_registers_a_pytest11_entry_point_plugin(env):
    """Was a hole at 0d275aa: a *.dist-info folder on the editable install's path registered a plugin."""
    reward, grade = _submit_after(
        env,
        _call(
            "bash",
            command="mkdir -p src/evil-1.0.dist-info && cd src/evil-1.0.dist-info && "
            "printf 'Metadata-Version: 2.1\\nName: evil\\nVersion: 1.0\\n' > METADATA && "
            "printf '[pytest11]\\nevil = calc.hooks\\n' > entry_points.txt",
        ),
        _call("create_file", path="src/calc/hooks.py", text=FORCE_PASS_HOOKS),
    )
    _assert_no_reward(reward, grade, Outcome.UNRESOLVED)
    assert any(path.startswith("src/evil-1.0.dist-info/") for path in grade.ignored_paths)


def test_submit_repogym_report_package_replaces_the_report_plugin(env):
    """Was a hole at 0d275aa: a repogym_report/ package passed the base-name filter and stood in for the
    plugin, reporting every test as passed."""
    reward, grade = _submit_after(
        env, _call("create_file", path="repogym_report/__init__.py", text=FAKE_PLUGIN)
    )
    _assert_no_reward(reward, grade, Outcome.UNRESOLVED)
    assert "repogym_report/__init__.py (a name of repogym's harness)" in grade.ignored_paths


def test_submit_forger_that_flips_only_tests_which_ran_the_patched_code(env):
    """The canary-aware forger of the grader's tests, through the gym: it spares a canary that never calls
    into the package, and the grader's canary calls the FAIL_TO_PASS test, so it is caught."""
    reward, grade = _submit_after(
        env, _call("create_file", path=SOURCE, text=BUGGY_SOURCE + "\n" + FLIP_CALLERS)
    )
    _assert_no_reward(reward, grade, Outcome.REPORT_FORGED)


@pytest.mark.parametrize(
    ("path", "text"),
    [("sitecustomize.py", "import os\nos._exit(0)\n"), ("src/calc-0.1.pth", "import calc.hooks\n")],
)
def test_submit_files_python_loads_at_start_are_not_graded(env, path: str, text: str):
    """Start-up code written with the file tools never reaches the grading episode."""
    reward, grade = _submit_after(env, _call("create_file", path=path, text=text))
    _assert_no_reward(reward, grade, Outcome.UNRESOLVED)
    assert any(ignored.startswith(path) for ignored in grade.ignored_paths), grade.ignored_paths


def test_submit_gold_fix_still_earns_the_full_reward(env):
    """Control: the real fix through the same tools resolves and earns the tests' reward."""
    reward, grade = _submit_after(env, _call("str_replace", path=SOURCE, old="a - b", new="a + b"))
    assert grade.resolved and reward == 1.0, (grade.outcome, grade.detail)


def test_submit_code_whose_tests_loop_forever_is_stopped_at_the_grade_limit(make_env):
    """An answer that never lets its tests end (GRPO's tiny model wrote one: a loop that grows a list forever)
    is TIMEOUT at the env's grade limit, with no reward, instead of holding a grading worker for the
    sandbox's ten-minute default (tests/validate/test_validate.py checks the limit of a validated task)."""
    env = make_env(grade_timeout_s=3)
    env.reset()
    assert env.grade_limits.wall_s == 3.0
    reward, grade = _submit_after(
        env,
        _call("edit_file", path=SOURCE, lines="1:2", text="def add(a, b):\n    while True:\n        a += b"),
    )
    _assert_no_reward(reward, grade, Outcome.TIMEOUT)
    assert grade.timings["tests_s"] < 60, grade.timings  # the 3 s limit ended it, not the 600 s default


def test_submit_sitecustomize_package_in_src_is_not_graded(env):
    """Was a hole at 385871c (reward 0.9): the start-up rule checked the file name sitecustomize.py, so a
    `src/sitecustomize/` package (src is on sys.path through the editable install) ran before the launcher and
    loaded a force-pass plugin. Start-up code is refused by what the import system would find."""
    reward, grade = _submit_after(
        env,
        _call("create_file", path="src/calc/hooks.py", text=FORCE_PASS_HOOKS),
        _call("create_file", path="src/sitecustomize/__init__.py",
              text="import os\nos.environ['PYTEST_PLUGINS'] = 'calc.hooks'\n"),
    )  # fmt: skip
    _assert_no_reward(reward, grade, Outcome.UNRESOLVED)
    assert any(ignored.startswith("src/sitecustomize/__init__.py") for ignored in grade.ignored_paths)


def test_submit_pyproject_pytest11_entry_point_registered_by_the_graders_reinstall(env):
    """Was a hole at 385871c: a patch to pyproject.toml makes the grader re-run the install, which registered the
    candidate's `[project.entry-points.pytest11]` plugin in the venv: RESOLVED. The venv after the re-install
    may hold only the project's own install outputs (grading/installcheck.py)."""
    reward, grade = _submit_after(
        env,
        _call("create_file", path="src/calc/hooks.py", text=FORCE_PASS_HOOKS),
        _call("bash", command="printf '\\n[project.entry-points.pytest11]\\nhooks = \"calc.hooks\"\\n' >> pyproject.toml"),
    )  # fmt: skip
    _assert_no_reward(reward, grade, Outcome.PATCH_APPLY_FAILED)
    assert "entry" in grade.detail and "changed the venv" in grade.detail, grade.detail


def test_submit_setup_py_writing_a_pth_into_site_packages_on_reinstall(env):
    """Was a hole at 385871c: a new setup.py (a packaging change, so the grader re-installs) wrote a .pth with an
    import line into the venv's site-packages, loading a force-pass plugin at every interpreter start."""
    setup_py = (
        "import os, sysconfig\n"
        "with open(os.path.join(sysconfig.get_paths()['purelib'], 'zz_calc.pth'), 'w') as out:\n"
        "    out.write(\"import os; os.environ['PYTEST_PLUGINS'] = 'calc.hooks'\\n\")\n"
        "from setuptools import setup\n"
        "setup()\n"
    )
    reward, grade = _submit_after(
        env,
        _call("create_file", path="src/calc/hooks.py", text=FORCE_PASS_HOOKS),
        _call("create_file", path="setup.py", text=setup_py),
    )
    _assert_no_reward(reward, grade, Outcome.PATCH_APPLY_FAILED)
    assert "zz_calc.pth" in grade.detail, grade.detail
