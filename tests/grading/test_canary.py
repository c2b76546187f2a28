"""The canary on real pytest and repogym_unittest runs of small test files (trusted files written here, so
they run without the sandbox): it fails in every honest run, whatever the shape of the test it copies, and
it runs that test (a forger that flips the failures of tests which called its code flips the canary too)."""

from __future__ import annotations

import asyncio
import inspect
import os
import random
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from repogym.grading.canary import Canary, plant_canary
from repogym.grading.parsers import REPORT_ENV, TestRun
from repogym.grading.parsers.pytest import PLUGIN_DIR as PYTEST_PLUGINS
from repogym.grading.parsers.pytest import PytestParser
from repogym.grading.parsers.unittest import PLUGIN_DIR as UNITTEST_RUNNER
from repogym.grading.parsers.unittest import UnittestParser
from repogym.grading.report import TestStatus

TESTS = """
import pytest, unittest

@pytest.fixture
def two():
    return 2

def test_plain():
    pass

def test_failing():
    assert 1 + 1 == 3

def test_raising():
    return 1 // 0

def test_fixture(two):
    assert two == 2

@pytest.mark.parametrize("value", [1, 2])
def test_param(value):
    assert value > 0

@pytest.mark.parametrize("value", (n for n in [1, 2, 3]))
def test_param_from_a_generator(value):
    assert value > 0

@pytest.mark.parametrize("value", [1, 2], ids=["one", "two"])
def test_param_with_ids(value):
    assert value > 0

@pytest.mark.xfail(reason="known")
def test_marked_xfail():
    assert 1 == 2

class TestK(object):
    def test_method(self, two):
        assert two == 2

class TestU(unittest.TestCase):
    def test_unit(self):
        self.assertEqual(1, 1)

class TestS(object):
    @staticmethod
    def test_static():
        pass
"""
TARGETS = [
    "test_mod.py::test_plain",
    "test_mod.py::test_failing",
    "test_mod.py::test_raising",
    "test_mod.py::test_fixture",
    "test_mod.py::test_param[1]",
    "test_mod.py::test_param_from_a_generator[2]",  # shared values would be used up: a plain failing test
    "test_mod.py::test_param_with_ids[one]",
    "test_mod.py::test_marked_xfail",
    "test_mod.py::TestK::test_method",
    "test_mod.py::TestU::test_unit",
    "test_mod.py::TestS::test_static",  # cannot be copied: a plain failing test under the name
    "test_mod.py::test_gone",  # not in the file: likewise
]


def _env() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("PYTEST_") and k not in ("PYTHONPATH", REPORT_ENV)
    }
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # this venv's third-party plugins play no part here
    return env


def _run(command: str, repo: Path, report: Path, env: dict[str, str]) -> TestRun:
    proc = subprocess.run(
        ["sh", "-c", command], cwd=repo, env=env, capture_output=True, text=True, timeout=60
    )
    text = report.read_text() if report.exists() else None
    return TestRun(proc.stdout + proc.stderr, text, proc.returncode)


@pytest.fixture(scope="module")
def pytest_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[TestRun, list[Canary]]:
    repo = tmp_path_factory.mktemp("canary") / "repo"
    repo.mkdir()
    (repo / "pytest.ini").write_text("[pytest]\n")
    rng = random.Random(7)
    canaries = [plant_canary("pytest", [target], ["test_mod.py"], rng) for target in TARGETS]
    assert all(canaries)
    source = textwrap.dedent(TESTS) + "".join(c.code for c in canaries)  # type: ignore[union-attr]
    (repo / "test_mod.py").write_text(source)
    parser = PytestParser(plugin_mount=str(PYTEST_PLUGINS))
    report = repo.parent / "report.jsonl"
    run = _run(parser.command("", (), str(report)), repo, report, _env())
    return run, canaries  # type: ignore[return-value]


@pytest.mark.parametrize("target", TARGETS)
def test_canary_fails_whatever_the_shape_of_the_test_it_copies(pytest_run, target: str) -> None:
    run, canaries = pytest_run
    report = PytestParser().parse(run)
    assert report.collected, report.note + run.log
    canary = canaries[TARGETS.index(target)]
    seen = {test_id: status for test_id, status in report.statuses().items() if canary.matches(test_id)}
    # A parametrized test is copied with its first case only.
    assert len(seen) == 1 and set(seen.values()) == {TestStatus.FAILED}, (seen, run.log[-2000:])


def test_canary_runs_the_test_it_copies_with_its_fixtures(pytest_run) -> None:
    """The copy's own plain assertion is what fails for a passing test (so the test ran, fixtures and all),
    and the test's own failure, as it is, for a failing one; the copied tests keep their statuses."""
    run, canaries = pytest_run
    report = PytestParser().parse(run)
    by_target = dict(zip(TARGETS, canaries, strict=True))
    for target in ("test_mod.py::test_fixture", "test_mod.py::TestK::test_method", "test_mod.py::test_plain"):
        name = by_target[target].test_ids[0]
        assert re.search(rf"FAILED {re.escape(name)} - assert \(\d+ - \d+\) == 0\n", run.log), run.log[-3000:]
    failing = by_target["test_mod.py::test_failing"].test_ids[0]
    assert f"FAILED {failing} - assert (1 + 1) == 3\n" in run.log  # the copied test's own assertion
    raising = by_target["test_mod.py::test_raising"].test_ids[0]
    assert f"FAILED {raising} - ZeroDivisionError: " in run.log  # its own exception, not wrapped
    assert report.status("test_mod.py::test_fixture") is TestStatus.PASSED
    assert report.status("test_mod.py::test_marked_xfail") is TestStatus.XFAIL
    assert report.status("test_mod.py::TestU::test_unit") is TestStatus.PASSED
    generated = [t for t in report.statuses() if t.startswith("test_mod.py::test_param_from_a_generator[")]
    assert len(generated) == 3  # the copy did not use up the generator the test is parametrized with


def test_the_appended_code_leaves_only_the_canary_in_the_module() -> None:
    """A forger that lists a test module's names, or a class's, sees the canary and nothing else new: no
    helper, no reference to the copied test (only the canary's own __wrapped__, as any decorator leaves)."""
    source = "class TestK(object):\n    def test_method(self):\n        assert 1\n\ndef test_plain():\n    assert 1\n"
    before: dict = {}
    exec(compile(source, "t.py", "exec"), before)
    for target, owner in (("t.py::test_plain", None), ("t.py::TestK::test_method", "TestK")):
        canary = plant_canary("pytest", [target], ["t.py"], random.Random(5))
        assert canary is not None
        after: dict = {}
        exec(compile(source + canary.code, "t.py", "exec"), after)
        name = canary.test_ids[0].rsplit("::", 1)[1]
        new_names = set(after) - set(before)
        if owner is None:
            assert new_names == {name}
            planted, copied, arguments = after[name], after["test_plain"], ()
        else:
            assert new_names == set() and set(vars(after[owner])) - set(vars(before[owner])) == {name}
            planted, copied = vars(after[owner])[name], vars(after[owner])["test_method"]
            arguments = (after[owner](),)
        assert planted.__name__ == name and planted.__wrapped__ is copied
        with pytest.raises(AssertionError):
            planted(*arguments)


def test_a_forger_that_swallows_exceptions_in_runtest_passes_the_canary_too(tmp_path: Path) -> None:
    """Was a hole at 385871c: the canary caught the copied test's exceptions and failed through pytest.fail
    (a BaseException), so a forger swallowing Exception in Function.runtest passed the real tests and left
    the canary failing. Now both fail alike, so both pass alike, and the judge sees the canary pass."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pytest.ini").write_text("[pytest]\n")
    (repo / "conftest.py").write_text(
        "import _pytest.python\n"
        "_runtest = _pytest.python.Function.runtest\n"
        "def runtest(self):\n"
        "    try:\n"
        "        _runtest(self)\n"
        "    except Exception:\n"
        "        pass\n"
        "_pytest.python.Function.runtest = runtest\n"
    )
    canary = plant_canary("pytest", ["test_m.py::test_bug"], ["test_m.py"], random.Random(2))
    assert canary is not None
    (repo / "test_m.py").write_text("def test_bug():\n    assert 1 + 1 == 3\n" + canary.code)
    parser = PytestParser(plugin_mount=str(PYTEST_PLUGINS))
    report_file = tmp_path / "report.jsonl"
    run = _run(parser.command("", (), str(report_file)), repo, report_file, _env())
    statuses = PytestParser().parse(run).statuses()
    assert statuses["test_m.py::test_bug"] is TestStatus.PASSED  # the forger ran
    assert statuses[canary.test_ids[0]] is TestStatus.PASSED, run.log[-2000:]


UNITS = """
import unittest

class Base(object):
    def test_inherited(self):
        self.assertEqual(1, 1)

class T(Base, unittest.TestCase):
    def test_ok(self):
        self.assertEqual(1, 1)

    def test_bad(self):
        self.assertEqual(1, 2)
"""
UNIT_TARGETS = [
    "pkg.test_m.T.test_ok",
    "pkg.test_m.T.test_bad",
    "pkg.test_m.T.test_inherited",
    "pkg.test_m.Gone.test_x",
]


@pytest.mark.parametrize("version", ["running", "2.7.18", "3.6.15"])
def test_unittest_canary_fails_under_every_interpreter(tmp_path: Path, version: str) -> None:
    python = (
        Path(sys.executable)
        if version == "running"
        else Path.home() / ".pyenv/versions" / version / "bin/python"
    )
    if not python.exists():
        pytest.skip(f"Python {version} is not installed under pyenv here")
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "__init__.py").write_text("")
    rng = random.Random(3)
    canaries = [plant_canary("unittest", [t], ["pkg/test_m.py"], rng) for t in UNIT_TARGETS]
    (repo / "pkg" / "test_m.py").write_text(textwrap.dedent(UNITS) + "".join(c.code for c in canaries))  # type: ignore[union-attr]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(python)
    env = {"PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin"}
    parser = UnittestParser(plugin_mount=str(UNITTEST_RUNNER))
    report_file = tmp_path / "report.jsonl"
    run = _run(
        parser.command("python -m unittest -v", ("pkg/test_m.py",), str(report_file)), repo, report_file, env
    )
    report = parser.parse(run)
    assert report.collected, report.note + run.log
    for canary in canaries:
        seen = [status for test_id, status in report.statuses().items() if canary.matches(test_id)]  # type: ignore[union-attr]
        assert seen == [TestStatus.FAILED], (canary, report.statuses())
    assert report.status("pkg.test_m.T.test_ok") is TestStatus.PASSED


def test_no_canary_for_ids_that_are_no_attribute_path() -> None:
    """A doctest id, a file outside the test patch, or another framework: nowhere to plant one."""
    assert plant_canary("pytest", ["tests/t.py::tests.t.helper"], ["tests/t.py"]) is None
    assert plant_canary("pytest", ["tests/t.py::test_a"], ["tests/other.py"]) is None
    assert plant_canary("django", ["test_a (app.tests.T)"], ["app/tests.py"]) is None


@pytest.mark.parametrize("version", ["2.7.18", "3.6.15"])
def test_the_appended_code_compiles_under_old_interpreters(version: str) -> None:
    """The canary runs under the task's interpreter: Python 2.7 refuses f-strings, `async def` outside a
    string, keyword-only arguments. (Run with pytest 4.6.11 on 2.7 and 6.2.5 on 3.6 when this was written:
    every canary of the file above failed once.)"""
    python = Path.home() / ".pyenv" / "versions" / version / "bin" / "python"
    if not python.exists():
        pytest.skip(f"Python {version} is not installed under pyenv here")
    for framework, target, files in (
        ("pytest", "t.py::TestK::test_method", ["t.py"]),
        ("unittest", "pkg.t.T.test_x", ["pkg/t.py"]),
    ):
        canary = plant_canary(framework, [target], files, random.Random(1))
        assert canary is not None
        source = "from __future__ import unicode_literals\n" + canary.code
        check = "import sys; compile(sys.stdin.read(), 't.py', 'exec')"
        subprocess.run([str(python), "-c", check], input=source, text=True, check=True, timeout=30)


def test_a_coroutine_test_is_copied_as_a_coroutine_that_awaits_it_then_fails_the_assert() -> None:
    """An async test (pytest-asyncio, anyio) gets an async canary: awaiting it awaits the copied test, whose
    own failure comes out as it is, then fails the plain assert of the test module."""
    source = (
        "import asyncio\nseen = []\nasync def test_io():\n    seen.append(1)\n    await asyncio.sleep(0)\n"
    )
    canary = plant_canary("pytest", ["t.py::test_io"], ["t.py"], random.Random(4))
    assert canary is not None
    module: dict = {}
    exec(compile(source + canary.code, "t.py", "exec"), module)
    planted = module[canary.test_ids[0].rsplit("::", 1)[1]]
    assert inspect.iscoroutinefunction(planted) and planted.__wrapped__ is module["test_io"]
    with pytest.raises(AssertionError):
        asyncio.run(planted())
    assert module["seen"] == [1]
