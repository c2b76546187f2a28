"""The unittest parser on reports written by real repogym_unittest runs of small test modules (trusted files
written here, so they run without the sandbox)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from repogym.grading.parsers import REPORT_ENV, TestRun, UnittestParser
from repogym.grading.parsers.unittest import PLUGIN_DIR
from repogym.grading.report import TestStatus

from ..support.git import write_files

PARSER = UnittestParser(plugin_mount=str(PLUGIN_DIR))  # no sandbox here: the runner is used where it lies
P, F, E, S, X = TestStatus.PASSED, TestStatus.FAILED, TestStatus.ERROR, TestStatus.SKIPPED, TestStatus.XFAIL

UNITS = """
import unittest

class T(unittest.TestCase):
    def test_pass(self):
        pass

    def test_fail(self):
        print("test_fail (test_units.T.test_fail) ... ok")
        print("test_units.T.test_fail ... ok")
        self.fail("no")

    def test_error(self):
        raise RuntimeError("boom")

    @unittest.skip("not here")
    def test_skip(self):
        pass

    @unittest.expectedFailure
    def test_xfail(self):
        self.fail("known")

    @unittest.expectedFailure
    def test_xpass(self):
        pass

    def test_subtests(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertLess(i, 2)


class Broken(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise RuntimeError("class fixture")

    def test_never_runs(self):
        pass
"""

OK_MODULE = """
import unittest

class Fine(unittest.TestCase):
    def test_one(self):
        pass

    def test_two(self):
        pass
"""


# Python 2 takes an _ExpectedFailure raised by any code (code under test included) as an expected failure.
EXPECT = """
import sys, unittest

class Expect(unittest.TestCase):
    @unittest.expectedFailure
    def test_marked(self):
        self.fail("known")

    def test_raises_expected_failure_itself(self):
        if hasattr(unittest.case, "_ExpectedFailure"):
            try:
                raise ValueError("the bug")
            except ValueError:
                raise unittest.case._ExpectedFailure(sys.exc_info())
        self.fail("Python 3 has no expected failure to raise")
"""


def make_project(root: Path, files: dict[str, str]) -> Path:
    """A folder (no git) of `files`, dedented."""
    project = root / "repo"
    write_files(project, {name: textwrap.dedent(text) for name, text in files.items()})
    return project


def run_unittest(repo: Path, test_ids: tuple[str, ...] = (), test_cmd: str = "") -> TestRun:
    """Run the parser's command as the sandbox would (sh -c in the repo root, the venv's python first on PATH)."""
    report_file = repo.parent / "report.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", REPORT_ENV)}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    command = PARSER.command(test_cmd, test_ids, str(report_file))
    proc = subprocess.run(
        ["sh", "-c", command],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=60,
    )
    report_text = report_file.read_text() if report_file.exists() else None
    return TestRun(proc.stdout, report_text, proc.returncode)


@pytest.fixture(scope="module")
def units_run(tmp_path_factory: pytest.TempPathFactory) -> TestRun:
    return run_unittest(
        make_project(tmp_path_factory.mktemp("units"), {"test_units.py": UNITS}), ("test_units",)
    )


def test_every_outcome_maps_to_its_status(units_run: TestRun) -> None:
    report = PARSER.parse(units_run)
    assert report.collected, report.note
    assert report.exit_code == 1
    assert report.statuses() == {
        "test_units.T.test_pass": P,
        "test_units.T.test_fail": F,
        "test_units.T.test_error": E,
        "test_units.T.test_skip": S,
        "test_units.T.test_xfail": X,
        "test_units.T.test_xpass": F,
        "test_units.T.test_subtests": F,
        "setUpClass (test_units.Broken)": E,
    }


def test_printed_fake_ok_lines_do_not_change_statuses(units_run: TestRun) -> None:
    assert "test_fail (test_units.T.test_fail) ... ok" in units_run.log
    assert PARSER.parse(units_run).status("test_units.T.test_fail") is F


def test_passing_run_by_dotted_name_and_by_path(tmp_path: Path) -> None:
    repo = make_project(tmp_path, {"pkg/__init__.py": "", "pkg/test_ok.py": OK_MODULE})
    report = PARSER.parse(run_unittest(repo, ("pkg.test_ok.Fine.test_one", "pkg/test_ok.py")))
    assert report.collected and report.exit_code == 0
    assert report.statuses() == {"pkg.test_ok.Fine.test_one": P, "pkg.test_ok.Fine.test_two": P}


def test_discovery_when_no_ids_and_plain_unittest_command_is_redirected(tmp_path: Path) -> None:
    repo = make_project(tmp_path, {"test_ok.py": OK_MODULE})
    run = run_unittest(repo, test_cmd="python -m unittest")
    report = PARSER.parse(run)
    assert run.report_text is not None
    assert report.statuses() == {"test_ok.Fine.test_one": P, "test_ok.Fine.test_two": P}


def test_module_that_fails_to_import_is_an_error_under_its_name(tmp_path: Path) -> None:
    files = {
        "test_ok.py": OK_MODULE,
        "test_broken.py": "import no_such_module_here\n",
        "test_expect.py": EXPECT,
    }
    repo = make_project(tmp_path, files)
    report = PARSER.parse(run_unittest(repo, ("test_ok", "test_broken")))
    assert report.collected and report.exit_code == 1
    assert report.status("test_broken") is E
    assert report.status("test_ok.Fine.test_one") is P


def test_os_exit_zero_mid_run_is_not_trusted(tmp_path: Path) -> None:
    module = """
    import os, unittest

    class T(unittest.TestCase):
        def test_a(self):
            pass

        def test_b(self):
            os._exit(0)

        def test_c(self):
            self.fail("never reached")
    """
    run = run_unittest(make_project(tmp_path, {"test_exit.py": module}), ("test_exit",))
    report = PARSER.parse(run)
    assert run.exit_code == 0
    assert not report.collected and report.results == {}
    assert "os._exit" in report.note and "1 per-test results seen" in report.note


def test_no_tests_found_is_not_collected(tmp_path: Path) -> None:
    run = run_unittest(make_project(tmp_path, {"helpers.py": "X = 1\n"}))
    report = PARSER.parse(run)
    assert run.exit_code == 5
    assert not report.collected and report.results == {} and "no tests" in report.note


def test_bad_option_is_not_trusted(tmp_path: Path) -> None:
    run = run_unittest(make_project(tmp_path, {"test_ok.py": OK_MODULE}), ("--failfast-typo",))
    report = PARSER.parse(run)
    assert run.exit_code == 2
    assert not report.collected and "command line" in report.note


@pytest.mark.parametrize("version", ["2.7.18", "3.6.15"])
def test_runner_works_under_old_interpreters(tmp_path: Path, version: str) -> None:
    python = Path.home() / ".pyenv" / "versions" / version / "bin" / "python"
    if not python.exists():
        pytest.skip(f"Python {version} is not installed under pyenv here")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(python)
    files = {
        "test_ok.py": OK_MODULE,
        "test_broken.py": "import no_such_module_here\n",
        "test_expect.py": EXPECT,
    }
    repo = make_project(tmp_path, files)
    report_file = tmp_path / "report.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", REPORT_ENV)}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    command = PARSER.command("", ("test_ok", "test_broken", "test_expect"), str(report_file))
    proc = subprocess.run(
        ["sh", "-c", command],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=60,
    )
    report = PARSER.parse(TestRun(proc.stdout, report_file.read_text(), proc.returncode))
    assert report.collected, report.note + proc.stdout
    assert report.statuses() == {
        "test_ok.Fine.test_one": P,
        "test_ok.Fine.test_two": P,
        "test_broken": E,
        "test_expect.Expect.test_marked": X,
        "test_expect.Expect.test_raises_expected_failure_itself": F,  # Python 2 took it as expected
    }


@pytest.mark.parametrize("shadow", ["repogym_unittest.py", "unittest.py", "json.py", "lib/json.py"])
def test_modules_of_the_repository_cannot_stand_in_for_the_runner(tmp_path: Path, shadow: str) -> None:
    """`python -m` put the working directory first on sys.path, so a repogym_unittest.py (or a unittest.py,
    or a json.py on PYTHONPATH) there replaced the runner; it is now run as a script that imports what it
    needs before the repository is on sys.path."""
    failing = "import unittest\n\nclass Bug(unittest.TestCase):\n    def test_bug(self):\n        self.assertEqual(1, 2)\n"
    repo = make_project(tmp_path, {"test_bug.py": failing})
    fake = repo / shadow
    fake.parent.mkdir(parents=True, exist_ok=True)
    fake.write_text(
        "import os, sys\nopen(os.environ.get('REPOGYM_REPORT_FILE', '/dev/null'), 'w')\nos._exit(0)\n"
    )
    run = run_unittest(repo, ("test_bug",), test_cmd="PYTHONPATH=lib python -m unittest -v")
    report = PARSER.parse(run)
    assert report.collected, report.note + run.log
    assert report.statuses() == {"test_bug.Bug.test_bug": F}
