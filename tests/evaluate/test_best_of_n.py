"""`repogym eval -n 4 --select tests|majority`: one attempt picked per task among real attempts of scripted
policies, graded in the real sandbox, and best@4 beside pass@1 and pass@4 (the world: tests/support/best_of_n.py)."""

from __future__ import annotations

import json

import pytest

from repogym.evaluate.bestofn import Attempted, pick_index
from repogym.evaluate.report import build_report
from repogym.evaluate.visible_tests import visible_task

from ..support.best_of_n import BestOfNWorld, build_world, picked
from ..support.cli import cli

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("evaluate-best-of-n")]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, toy_task) -> BestOfNWorld:
    return build_world(tmp_path_factory.mktemp("best-of-n"), toy_task)


def test_tests_selection_picks_the_attempt_passing_most_visible_tests(world, tmp_path):
    summary = world.select("tests", tmp_path / "tests")
    assert summary["select"] == "tests"
    # calc-1: break passes 1 of 2, fix and the notes 2 of 2 (the earliest, fix, wins); calc-3: the empty
    # attempts are never graded and never win.
    assert picked(summary) == {"toy__calc-1": 1, "toy__calc-2": 0, "toy__calc-3": 2, "toy__calc-4": 0}
    assert summary["per_task"]["toy__calc-1"]["selection"]["scores"] == {"tests_passed": [1.0, 2.0, 2.0, 2.0]}
    assert summary["per_task"]["toy__calc-3"]["selection"]["score"] == {"tests_passed": 2.0}
    assert (summary["pass@1"], summary["pass@4"]) == (0.25, 0.75)
    assert summary["best@4"] == 0.5 and summary["per_task"]["toy__calc-1"]["best@4"] == 1.0
    low, high = summary["intervals"]["best@4"]
    assert 0.0 <= low <= summary["best@4"] <= high <= 1.0
    assert summary["breakdown"]["repo"]["toy/calc"]["best@4"] == summary["best@4"]


def test_tests_selection_never_falls_back_to_fail_to_pass_when_no_test_is_visible(world, tmp_path):
    """Attack: a task whose PASS_TO_PASS set is empty. Grading its FAIL_TO_PASS tests (or the hidden test patch
    that brings them) would single out the fix, attempt 1; with nothing visible every attempt scores 0 and the
    earliest with a diff, the note, is picked."""
    summary = world.select("tests", tmp_path / "tests")
    selection = summary["per_task"]["toy__calc-2"]["selection"]
    assert selection == {
        "attempt": 0, "resolved": False, "score": {"tests_passed": 0.0},
        "scores": {"tests_passed": [0.0, 0.0, 0.0, None]},
    }  # fmt: skip


def test_the_tests_selection_sees_neither_the_gold_patch_nor_hidden_tests(toy_task):
    seen = visible_task(toy_task)
    assert seen.FAIL_TO_PASS == toy_task.PASS_TO_PASS and not seen.PASS_TO_PASS
    assert seen.patch == "" and seen.test_patch == "" and "test_add" not in json.dumps(seen.to_dict())


def test_majority_picks_the_most_common_diff_first_seen_on_ties(world, tmp_path):
    summary = world.select("majority", tmp_path / "majority")
    # calc-1: the note twice; calc-2: the fix twice (the empty attempt casts no vote); calc-3: fix and note
    # once each, the fix seen first (the two empty attempts do not vote as one diff); calc-4: two and two.
    assert picked(summary) == {"toy__calc-1": 2, "toy__calc-2": 1, "toy__calc-3": 2, "toy__calc-4": 0}
    assert summary["per_task"]["toy__calc-3"]["selection"]["scores"] == {"votes": [None, None, 1.0, 1.0]}
    assert summary["best@4"] == 0.5


def test_an_attempt_without_a_diff_never_wins_unless_none_has_one():
    runs = [Attempted(0, "", False), Attempted(1, "  \n", False), Attempted(2, "d", False)]
    assert pick_index(runs, [(1.0,), (1.0,), (0.0,)]) == 2
    assert pick_index(runs[:2], [(0.0,), (0.0,)]) == 0


def test_summary_table_and_report_show_pass1_best_and_passk_side_by_side(world, tmp_path):
    out = tmp_path / "majority"
    world.select("majority", out)
    shown = cli("eval", *world.command(out), "--select", "majority")
    assert shown.exit_code == 0, shown.output
    header = next(line for line in shown.output.splitlines() if "pass@1" in line)
    assert header.index("pass@1") < header.index("best@4") < header.index("pass@4")
    page = build_report([out], tmp_path / "report.html").out.read_text()
    assert "<th>pass@1</th><th>best@4</th><th>pass@4</th>" in page  # the eval's own table
    cell = page[page.index('<table class="before-after">') :]  # the stages table: pass@1 · best@4 · pass@4
    assert cell.index("25.0% [") < cell.index("· best@4 50.0% [") < cell.index("· pass@4 75.0% [")


@pytest.mark.parametrize(
    ("select", "n", "message"),
    [
        ("best", "4", "unknown selection; use one of verifier:V, tests, majority, hybrid:V"),
        ("majority", "1", "needs -n 2 or more attempts per task"),
        ("verifier", "4", "name the verifier folder"),
        ("tests:x", "4", "tests takes no argument"),
    ],
)
def test_bad_select_is_one_line_and_exit_2(tmp_path, toy_task, select, n, message):
    result = cli("eval", "missing.jsonl", "--policy", "scripted:gold", "-n", n, "--select", select,
                 "--out", str(tmp_path / "out"))  # fmt: skip
    assert result.exit_code == 2 and message in result.output
    assert len(result.output.strip().splitlines()) == 1 and not (tmp_path / "out").exists()
