"""The Django parser (SWE-bench's parse_log_django semantics) on a runtests.py log in Django's pre-3.11 id
format and on real verbose unittest runs, whose output format Django's runner shares."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from repogym.grading.parsers import DjangoParser, TestRun, get_parser
from repogym.grading.report import TestStatus

DATA = Path(__file__).parent / "data"
PARSER = DjangoParser()
P, F, E, S = TestStatus.PASSED, TestStatus.FAILED, TestStatus.ERROR, TestStatus.SKIPPED

RUNTESTS_EXPECTED = {
    "test_ticket_10028 (queries.tests.Queries1Tests)": P,
    "test_ticket_7107 (queries.tests.Queries1Tests)": F,
    "test_ticket_7107": F,  # SWE-bench also reads the `FAIL: name (...)` header, keyed by the bare name
    "test_in_list (queries.tests.Queries2Tests)": E,
    "test_in_list": E,
    "test_slicing (queries.tests.Queries3Tests)": S,
    "test_with_output (queries.tests.Queries4Tests)": P,  # its `ok` came on the next line
    "test_check (check_framework.tests.CheckCommandTests)": P,
    "Filtering on a related field keeps the join.": P,  # a docstring's first line stands for the test
}


def test_runtests_log_reads_as_swebench_reads_it() -> None:
    log = (DATA / "django_runtests.log").read_text()
    report = PARSER.parse(TestRun(log, None, 1))
    assert report.collected, report.note
    assert report.statuses() == RUNTESTS_EXPECTED


@pytest.mark.parametrize(
    ("cut_at", "exit_code", "note"),
    [
        ("Ran 8 tests", 1, "did not finish"),  # the log stops before unittest's summary
        (None, 0, "exit code 0 but the log shows failures"),
    ],
)
def test_unfinished_or_contradicted_log_is_not_trusted(cut_at: str | None, exit_code: int, note: str) -> None:
    log = (DATA / "django_runtests.log").read_text()
    if cut_at:
        log = log[: log.index(cut_at)]
    report = PARSER.parse(TestRun(log, None, exit_code))
    assert not report.collected and report.results == {}
    assert note in report.note


UNITS = '''
import unittest

class T(unittest.TestCase):
    def test_pass(self):
        pass

    def test_fail(self):
        self.fail("no")

    def test_error(self):
        raise RuntimeError("boom")

    @unittest.skip("not here")
    def test_skip(self):
        pass

    def test_noisy(self):
        print("noise")

    def test_documented(self):
        """Checks the documented behaviour."""
'''


def run_verbose_unittest(root: Path, module: str, test_ids: list[str]) -> TestRun:
    repo = root / "repo"
    repo.mkdir()
    (repo / "test_dj.py").write_text(textwrap.dedent(module))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    command = PARSER.command("python -m unittest -v", test_ids, str(root / "unused.jsonl"))
    proc = subprocess.run(
        ["sh", "-c", command],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=60,
    )
    return TestRun(proc.stdout, None, proc.returncode)


def test_real_verbose_unittest_run(tmp_path: Path) -> None:
    names = ["pass", "fail", "error", "skip", "noisy", "documented"]
    run = run_verbose_unittest(tmp_path, UNITS, [f"test_{name} (test_dj.T)" for name in names])
    report = PARSER.parse(run)
    assert report.collected, report.note
    statuses = report.statuses()
    # Python 3.11+ prints `test_x (module.Class.test_x)`; older ones `test_x (module.Class)`.
    owner = "test_dj.T.{}" if sys.version_info >= (3, 11) else "test_dj.T"
    for name, status in {"pass": P, "fail": F, "error": E, "skip": S, "noisy": P}.items():
        assert statuses[f"test_{name} ({owner.format('test_' + name)})"] is status
    assert statuses["Checks the documented behaviour."] is P


def test_passing_run_is_trusted_and_contradicting_exit_code_is_not(tmp_path: Path) -> None:
    run = run_verbose_unittest(tmp_path, UNITS, ["test_pass (test_dj.T)", "test_noisy (test_dj.T)"])
    report = PARSER.parse(run)
    assert run.exit_code == 0 and report.collected
    assert set(report.statuses().values()) == {P} and len(report.results) == 2
    contradicted = PARSER.parse(TestRun(run.log, None, 1))
    assert not contradicted.collected and contradicted.results == {}


def test_command_turns_django_ids_into_labels() -> None:
    command = get_parser("django").command(
        "", ["test_x (admin_views.tests.AdminTest)", "auth_tests"], "/out/r"
    )
    assert command == (
        "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 "
        "admin_views.tests.AdminTest.test_x auth_tests"
    )
