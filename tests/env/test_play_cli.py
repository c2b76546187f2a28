"""`repogym play`: a human types tool calls and sees observations, then the grade."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from repogym import save_tasks
from repogym.cli import app
from repogym.search_replace import answer_from_patch
from repogym.testing import BUGGY_SOURCE


@pytest.fixture(scope="module")
def tasks_file(toy_task, toy_runtime, tmp_path_factory):
    """The toy task as a file (toy_runtime has built its environment, so play only reuses it)."""
    path = tmp_path_factory.mktemp("play") / "tasks.jsonl"
    save_tasks([toy_task], path)
    return path


def play(tasks_file, keys: str, *args: str):
    return CliRunner().invoke(app, ["play", str(tasks_file), "toy__calc-1", *args], input=keys)


def test_playing_the_toy_task_to_a_resolved_grade(tasks_file):
    keys = (
        "view_file('src/calc/__init__.py',\n  '1:2')\n"  # a call continued on a second line
        ":tools\n"
        "str_replace('src/calc/__init__.py', 'a - b', 'a + b')\n"
        "submit\n"
    )
    result = play(tasks_file, keys)
    assert result.exit_code == 0, result.output
    assert "add(2, 3) returns -1 instead of 5." in result.output
    assert "src/calc/__init__.py lines 1-2 of 6" in result.output and "return a - b" in result.output
    assert "edit_file(path, lines, text)" in result.output
    assert "toy__calc-1: RESOLVED" in result.output and "tests/test_calc.py::test_add" in result.output
    assert "reward 1 (tests_pass=+1, compile_pass=+0, minimal_diff=+0)" in result.output


def test_malformed_input_is_answered_and_quitting_grades_nothing(tasks_file):
    result = play(
        tasks_file, 'this is not a call\n{"name": "bash"\n, "arguments": {"command": "ls"}}\n:quit\n'
    )
    assert result.exit_code == 0, result.output
    assert "Format error: the action is not a tool call" in result.output
    assert "README.md" in result.output  # the JSON call, completed on its second line, ran
    assert "left without submitting" in result.output and "RESOLVED" not in result.output


def test_agentless_play_and_an_unknown_id(tasks_file, toy_task):
    answer = answer_from_patch(toy_task.patch, {"src/calc/__init__.py": BUGGY_SOURCE})
    result = play(tasks_file, answer + "\n", "--mode", "agentless")
    assert result.exit_code == 0, result.output
    assert "--- BEGIN FILE ---" in result.output and "toy__calc-1: RESOLVED" in result.output
    assert "patch_similarity=+1" in result.output
    missing = CliRunner().invoke(app, ["play", str(tasks_file), "toy__calc"])
    assert missing.exit_code == 2 and "closest: toy__calc-1" in missing.output
