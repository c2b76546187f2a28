"""The report forgers of issue 26 as a policy delivers them through the gym: a file written with the agent's
tools then submit(), an agentless SEARCH/REPLACE answer, and a window `lines` answer of one line that keeps
the bug. On a synthetic task (no test patch) and on one with a test patch, none may resolve or be paid more
than an honest attempt: a REPORT_FORGED grade is worth the fixed penalty (RewardConfig.forged_report_penalty)
and an UNRESOLVED one earns no tests term (tests/grading/test_hostile_report_forgery.py and
test_hostile_marks.py have the same attacks handed to the grader, with what each hole was at 385871c).
"""

from __future__ import annotations

from typing import Any

import pytest

import repogym.env
from repogym.grading.report import Outcome, TestStatus
from repogym.search_replace import SearchReplace, render_answer
from repogym.testing import BUGGY_SOURCE, FIXED_SOURCE

from ..support.forgers import ADD_TEST, FORGERS, SOURCE, Forger, evidence, forged_source, one_line

WAYS = ("submit", "search_replace", "lines")
_ENV_OPTIONS: dict[str, dict[str, Any]] = {
    "submit": {},
    "search_replace": {"mode": "agentless"},
    "lines": {"mode": "agentless", "context": "window", "window_lines": 1, "answer_format": "lines"},
}


def _delivery(way: str, package: str, bug_line: str) -> str:
    """What a policy sends: the package's new text (submit), a SEARCH/REPLACE answer making it, or the one
    line that replaces the bug's line."""
    if way == "submit":
        return package
    if way == "search_replace":
        return render_answer([SearchReplace(SOURCE, BUGGY_SOURCE, package)], "Fix add.")
    assert "\n" not in bug_line
    return f"<solution>\n{bug_line}\n</solution>"


@pytest.fixture
def play(task_and_runtime):
    """Play one episode of the task in `way` delivering `content` (None: an empty submit); returns
    (reward, info) of its end."""
    task, runtime = task_and_runtime
    envs: list[Any] = []

    def episode(way: str, content: str | None) -> tuple[float, dict[str, Any]]:
        env = repogym.env.make(task.instance_id, task, runtime=runtime, **_ENV_OPTIONS[way])
        envs.append(env)
        observation, _ = env.reset()
        if way == "submit":
            if content is not None:
                action = {"name": "create_file", "arguments": {"path": SOURCE, "text": content}}
                _, _, terminated, _, info = env.step(action)
                assert not terminated and not info["tool_error"], info
            _, reward, terminated, _, info = env.step({"name": "submit", "arguments": {}})
        else:
            assert content is not None
            if way == "lines":
                assert f"{SOURCE}:2:" in observation  # the bug's line is the one suspicious line
            _, reward, terminated, _, info = env.step(content)
            assert info["format_error"] is None, info["format_error"]
        assert terminated
        return reward, info

    yield episode
    for env in envs:
        env.close()


@pytest.fixture
def empty_submit_reward(play) -> float:
    """The reward of doing nothing: an empty submit in agent mode (0.0 with the default reward)."""
    reward, info = play("submit", None)
    assert info["grade"].outcome is Outcome.UNRESOLVED
    return reward


def _assert_no_pay(forger: Forger, way: str, reward: float, info: dict[str, Any], empty: float) -> None:
    grade, breakdown = info["grade"], info["reward"]
    expected = forger.outcome_one_line if way == "lines" else forger.outcome
    assert not grade.resolved and grade.outcome is expected, (grade.outcome, grade.detail)
    assert grade.fail_to_pass[ADD_TEST] is not TestStatus.PASSED
    problem = evidence(grade, forger)
    assert not problem, problem
    if grade.outcome is Outcome.REPORT_FORGED:
        assert reward == breakdown.total == -1.0 and breakdown.components["forged_report"] == -1.0, breakdown
        assert reward <= empty
    elif way == "submit":
        assert reward <= empty, breakdown
    else:
        # Agentless answers earn SWE-RL's similarity right or wrong (one that changes nothing is a format
        # error, -1, so an empty answer is no baseline there): the forgery must add nothing to it.
        assert breakdown.components["tests_pass"] == 0.0, breakdown
        assert reward <= empty + breakdown.components["patch_similarity"], breakdown


def _forged(play, forger: Forger, way: str, empty: float) -> None:
    reward, info = play(way, _delivery(way, forged_source(forger), one_line(forger)))
    _assert_no_pay(forger, way, reward, info, empty)


def test_gym_gold_fix_is_paid_on_both_shapes_of_task(play, empty_submit_reward):
    """Control: the real fix, delivered each way on the same tasks, resolves and is paid more than nothing."""
    for way in WAYS:
        reward, info = play(way, _delivery(way, FIXED_SOURCE, "    return a + b"))
        assert info["grade"].resolved, (way, info["grade"].outcome, info["grade"].detail)
        assert reward > empty_submit_reward, (way, reward)


@pytest.mark.parametrize("way", WAYS)
def test_gym_forger_swallows_assertion_error_in_runtest(play, empty_submit_reward, way):
    """Was a hole at 385871c: Function.runtest wrapped in `except AssertionError: pass` resolved (the canary
    failed through pytest.fail, no AssertionError), and on a synthetic task there was no canary at all."""
    _forged(play, FORGERS["swallows_assertion_error_in_runtest"], way, empty_submit_reward)


@pytest.mark.parametrize("way", WAYS)
def test_gym_forger_swallows_exception_in_runtest(play, empty_submit_reward, way):
    """Was a hole at 385871c: the same with `except Exception` (pytest.fail raises no Exception)."""
    _forged(play, FORGERS["swallows_exception_in_runtest"], way, empty_submit_reward)


@pytest.mark.parametrize("way", WAYS)
def test_gym_forger_strips_asserts_at_import(play, empty_submit_reward, way):
    """Was a hole at 385871c: test modules re-run without their assert statements passed every test, and
    the canary's pytest.fail still failed it."""
    _forged(play, FORGERS["strips_asserts_at_import"], way, empty_submit_reward)


@pytest.mark.parametrize("way", WAYS)
def test_gym_forger_testreport_patched_at_import(play, empty_submit_reward, way):
    """Was a hole at 385871c on synthetic tasks (no canary without a test patch): reward 0.9 through submit,
    1.68 as a one-line `lines` answer keeping the bug; on a task with a test patch it was REPORT_FORGED but
    still paid its similarity and diff terms."""
    _forged(play, FORGERS["testreport_patched_at_import"], way, empty_submit_reward)


@pytest.mark.parametrize("way", WAYS)
def test_gym_forger_adds_xfail_mark_at_run_time(play, empty_submit_reward, way):
    """Was a hole at 385871c: an xfail(raises=AssertionError) mark added to the running test made it XFAIL,
    a pass."""
    _forged(play, FORGERS["adds_xfail_mark_at_run_time"], way, empty_submit_reward)


@pytest.mark.parametrize("way", WAYS)
def test_gym_forger_patches_pytest_at_import_to_mark_xfail_at_collection(play, empty_submit_reward, way):
    """Was a hole at 385871c: a plugin registered at import marked every test xfail while they were
    collected. (As a one-line answer it runs inside a test, after collection: its marks are ignored.)"""
    _forged(play, FORGERS["patches_pytest_at_import_to_mark_xfail_at_collection"], way, empty_submit_reward)
