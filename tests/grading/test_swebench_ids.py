"""SWE-bench's cut test ids, judged on real runs: pytest in the bwrap sandbox on a small repo whose
parametrized ids hold spaces, quotes, brackets and newlines, under today's pytest and an old one.

SWE-bench reads ``PASSED tests/test_ids.py::test_space[a b]`` as ``tests/test_ids.py::test_space[a``; every id
its reading gives is graded here as SWE-bench grades it, a node id that failed still fails, and a line forged
after pytest's summary cannot pass a cut id none of whose tests passed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repogym.grading.judge import judge
from repogym.grading.parsers.swebench_ids import names_a_test, read_printed
from repogym.grading.report import Outcome, TestReport
from repogym.task import Task

from ..support.sandbox import RUNS, run_all
from ..support.tasks import git_task

DATA = Path(__file__).parent / "data" / "swebench_ids"

TEST_IDS = r"""
import atexit, sys
import pytest

VALUES = ["a b", "a c", "x'y z", '"q r"', "[br] ket", "line\nbreak", "tab\there", "- dash - x", "nb\u00a0sp", "ok"]

@pytest.mark.parametrize("value", VALUES)
def test_space(value):
    assert value != "a c"  # one case of the group cut to `test_space[a` fails

@pytest.mark.parametrize("value", [pytest.param(1, id="lonely one"), pytest.param(2, id="lonely two")])
def test_lonely(value):
    assert value == 0  # every case of `test_lonely[lonely` fails

@pytest.mark.parametrize("value", [pytest.param(1, id="with space"), pytest.param(2, id="with space!"),
                                   pytest.param(3, id="new\nline")])
def test_explicit(value):
    pass

def test_prints_status_words():
    print("PASSED [100%]")  # captured output that SWE-bench reads as a test id
    print("PASSED tests/test_ids.py::test_lonely[lonely")

def _forge():
    # After pytest's summary: SWE-bench's last line for `test_lonely[lonely` says PASSED.
    sys.stdout.write("PASSED tests/test_ids.py::test_lonely[lonely\n")
    sys.stdout.flush()

atexit.register(_forge)
"""

OK_TEST = "tests/test_ids.py::test_space[ok]"


@pytest.fixture(scope="module", params=sorted(RUNS))
def ids_run(request, tmp_path_factory, toy_task) -> tuple[str, Task, TestReport, str]:
    """(name, task, report, log) of one real run; toy_task sets the shared cache."""
    name = request.param
    files = {"tests/test_ids.py": TEST_IDS}
    task = git_task(tmp_path_factory.mktemp(name), files, RUNS[name], f"t__ids-{name}", OK_TEST)
    report, log = run_all(task, tmp_path_factory.mktemp("logs"))
    return name, task, report, log


def _grade_as(task: Task, report: TestReport, pass_to_pass: list[str]) -> Outcome:
    return judge(task.replace(PASS_TO_PASS=pass_to_pass), report).outcome


def _swebench_passed(printed: dict[str, str], test_id: str) -> bool:
    return printed.get(test_id) in ("PASSED", "XFAIL")


@pytest.mark.slow
def test_every_cut_id_grades_as_swebench_reads_it(ids_run) -> None:
    name, task, report, log = ids_run
    printed = read_printed(log)
    assert "tests/test_ids.py::test_space[a" in printed and "[100%]" in printed, log
    cut = [t for t in printed if names_a_test(t) and t not in report.results]
    assert len(cut) >= 5, cut
    for test_id in cut:
        if test_id == "tests/test_ids.py::test_lonely[lonely":
            continue  # forged after the summary: see the hostile test below
        want = Outcome.RESOLVED if _swebench_passed(printed, test_id) else Outcome.UNRESOLVED
        assert _grade_as(task, report, [test_id]) is want, (name, test_id, printed[test_id])


@pytest.mark.slow
def test_a_node_id_that_failed_still_fails(ids_run) -> None:
    _, task, report, _ = ids_run
    failed = "tests/test_ids.py::test_space[a c]"
    assert report.results[failed].status.value == "FAILED"
    assert _grade_as(task, report, [failed]) is Outcome.UNRESOLVED
    assert _grade_as(task, report, ["tests/test_ids.py::test_space[a b]"]) is Outcome.RESOLVED


@pytest.mark.slow
def test_hostile_forged_summary_line_cannot_pass_a_cut_id(ids_run) -> None:
    """The attack: print `PASSED <cut id>` after pytest's summary (an atexit handler), so that SWE-bench's
    last-line-wins reading passes an id none of whose tests passed."""
    _, task, report, log = ids_run
    lonely = "tests/test_ids.py::test_lonely[lonely"
    assert log.rindex("PASSED " + lonely) > log.rindex("short test summary info")  # printed after the summary
    assert read_printed(log)[lonely] == "PASSED"  # SWE-bench is fooled...
    assert _grade_as(task, report, [lonely]) is Outcome.UNRESOLVED  # ...repogym is not


@pytest.mark.slow
def test_ids_from_captured_output_are_not_counted(ids_run) -> None:
    _, task, report, _ = ids_run
    verdict = judge(task.replace(PASS_TO_PASS=["[100%]", "tests/test_ids.py::test_explicit[with"]), report)
    assert verdict.outcome is Outcome.RESOLVED, verdict.detail
    assert list(verdict.not_counted) == ["[100%]"]
    # A FAIL_TO_PASS id is always counted: one that names no test never passes.
    assert judge(task.replace(FAIL_TO_PASS=["[100%]"]), report).outcome is Outcome.UNRESOLVED


def test_the_stored_logs_read_as_swebench_read_them() -> None:
    """Logs of the runs above, kept with the reading SWE-bench's own parse_log_pytest gave of each
    (computed once with SWE-bench's harness, see data/swebench_ids/README.md)."""
    cases = sorted(DATA.glob("*.log"))
    assert cases, f"no logs under {DATA}"
    for log_file in cases:
        expected = json.loads(log_file.with_suffix(".swebench.json").read_text())
        assert read_printed(log_file.read_text()) == expected, log_file.name


NESTED = {
    "tests/calc.py": "def double(x):\n    return x + x\n",
    "tests/test_calc.py": (
        "from calc import double\n\n\ndef test_double():\n    assert double(3) == 6\n\n\n"
        "def test_runs_pytest_inside():\n"
        "    print('PASSED test_inner.py::test_hello')  # a nested run's line, as pytester's output prints it\n"
    ),
}


@pytest.mark.slow
def test_an_id_read_from_a_nested_runs_output_does_not_stop_the_run(tmp_path_factory, toy_task) -> None:
    """SWE-bench's parser reads ids from the output of tests that run pytest inside themselves (Verified's
    pytest-7521 lists `test_capsysbinary.py::test_hello` as PASS_TO_PASS): naming its file, which no tree has,
    made pytest exit 4 before any test ran. The run now leaves that file out and such a PASS_TO_PASS id is not
    counted; as a FAIL_TO_PASS id it still never passes."""
    from repogym.grading.grade import grade

    task = git_task(
        tmp_path_factory.mktemp("nested"),
        NESTED,
        RUNS["pytest-now"],
        "t__nested",
        "tests/test_calc.py::test_double",
    )
    task = task.replace(
        PASS_TO_PASS=["tests/test_calc.py::test_runs_pytest_inside", "test_inner.py::test_hello"]
    )
    result = grade(task, "")
    assert result.outcome is Outcome.RESOLVED, (result.outcome, result.detail)
    assert list(result.not_counted) == ["test_inner.py::test_hello"]
    assert "names a file the run does not have" in result.not_counted["test_inner.py::test_hello"]
    inner_required = grade(task.replace(FAIL_TO_PASS=["test_inner.py::test_hello"]), "")
    assert inner_required.outcome is Outcome.UNRESOLVED, (inner_required.outcome, inner_required.detail)
