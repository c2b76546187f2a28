"""The sympy parser against SWE-bench's own parse of real ``bin/test`` logs (data/sympy_bin_test)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from repogym.grading.parsers import SympyParser, TestRun, get_parser
from repogym.grading.parsers.sympy import parse_log_sympy
from repogym.grading.report import ResolvedStatus, TestStatus, resolved_status

CASES_DIR = Path(__file__).parent / "data" / "sympy_bin_test"  # its README.md says where the logs come from
PARSER = SympyParser()
CASES: list[dict[str, Any]] = json.loads((CASES_DIR / "cases.json").read_text(encoding="utf-8"))


def case_id(case: dict[str, Any]) -> str:
    return case["log"]


def exit_code_of(log: str) -> int:
    """The logs were saved without their exit status; bin/test exits 1 exactly when it prints this banner."""
    return 1 if "DO *NOT* COMMIT!" in log else 0


def run_of(case: dict[str, Any]) -> TestRun:
    log = (CASES_DIR / case["log"]).read_text(encoding="utf-8")
    return TestRun(log, None, exit_code_of(log), log_path=str(CASES_DIR / case["log"]))


def test_cases_cover_gold_and_empty_patches() -> None:
    assert len(CASES) == 4 and {case["patch"] for case in CASES} == {"gold", "empty"}


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_statuses_agree_with_swebench(case: dict[str, Any]) -> None:
    report = PARSER.parse(run_of(case))
    assert report.collected, report.note
    expected = {test: TestStatus(status) for test, status in case["swebench_parse"].items()}
    assert report.statuses() == expected


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_gold_logs_resolve_and_empty_ones_do_not(case: dict[str, Any]) -> None:
    report = PARSER.parse(run_of(case))
    status = resolved_status(report.statuses(), case["FAIL_TO_PASS"], case["PASS_TO_PASS"])
    swebench = {test: TestStatus(s) for test, s in case["swebench_parse"].items()}
    assert status is resolved_status(swebench, case["FAIL_TO_PASS"], case["PASS_TO_PASS"])
    if case["patch"] == "gold":
        assert status is ResolvedStatus.FULL
    else:
        assert status is not ResolvedStatus.FULL


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_exit_code_that_disagrees_with_the_log_is_not_trusted(case: dict[str, Any]) -> None:
    run = run_of(case)
    assert run.exit_code is not None
    flipped = TestRun(run.log, None, 1 - run.exit_code)
    report = PARSER.parse(flipped)
    assert not report.collected and report.results == {}
    assert "exit code" in report.note


def test_log_cut_before_the_summary_is_not_trusted() -> None:
    gold = next(case for case in CASES if case["patch"] == "gold")
    log = run_of(gold).log
    cut = log[: log.index("tests finished:")]
    report = PARSER.parse(TestRun(cut, None, 0))
    assert not report.collected and report.results == {}
    assert "did not finish" in report.note


def test_timed_out_run_is_not_trusted() -> None:
    log = "sympy/core/tests/test_basic.py[2]\ntest_a ok\ntest_b ok\n"
    report = PARSER.parse(TestRun(log, None, None, timed_out=True, duration_s=5.0))
    assert report.timed_out and not report.collected and report.results == {}
    assert report.note == "timed out after 5.0 s; 2 per-test results seen, not trusted"


def test_quirks_are_swebench_quirks() -> None:
    log = "\n".join(
        [
            "sympy/core/tests/test_x.py[4] ",
            "test_one ok",
            "test_two E",
            "not_a_test ok",
            "test_last ok                                                  [OK]",
            "________________ sympy/core/tests/test_x.py:test_two ________________",
        ]
    )
    assert parse_log_sympy(log) == {
        "sympy/core/tests/test_x.py:test_two": TestStatus.FAILED,  # the failure header reads as FAILED
        "test_one": TestStatus.PASSED,
        "test_two": TestStatus.ERROR,
        # `test_last ... [OK]` and `not_a_test ok` are not read
    }


def test_command_runs_bin_test_on_the_given_files() -> None:
    command = get_parser("sympy").command("", ["sympy/core/tests/test_basic.py"], "/out/unused")
    assert command == (
        "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C --verbose "
        "sympy/core/tests/test_basic.py"
    )
