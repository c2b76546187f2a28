"""repogym's env registered in skyrl-gym 0.4.0 and played as SkyRL plays an env, on `repogym export verl`'s rows.

skyrl-gym lives in a virtual environment of its own ($REPOGYM_SKYRL_VENV, default .venv-skyrl, made by
scripts/setup_bridges.sh); without it these tests skip, quoting why. `skyrl_checks.py` runs there and reports
each episode's steps, compared here with `repogym grade` and repogym's own rewards of the same answers.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet
import pytest

from repogym.integrations.verl import compute_score

from .bridge_venv import ROOT, bridge_python, run_checks
from .test_openrlhf import FIX, SOURCE, WRONG_ANSWER, WRONG_FIX, diff_file, tool_call

CHECKS = Path(__file__).resolve().parent / "skyrl_checks.py"
VENV = Path(os.environ.get("REPOGYM_SKYRL_VENV", ROOT / ".venv-skyrl"))
MAX_TURNS = 3
REPLIES = {
    "gold": [tool_call("view_file", path=SOURCE), tool_call("str_replace", **FIX), tool_call("submit")],
    "wrong": [tool_call("str_replace", **WRONG_FIX), tool_call("submit")],
    "out_of_turns": [tool_call("str_replace", **FIX), "thinking", "still thinking", "never reached"],
    "broken": [
        tool_call("str_replace", path=SOURCE, old="return a - b", new="return a +"),
        tool_call("submit"),
    ],
    "gave_up": [tool_call("submit")],
    # SkyRL stops this one past max_input_length after two replies, and never tells the env
    "cut_for_length": [tool_call("str_replace", **WRONG_FIX), "thinking"],
}
#: The agent mode's floor with the env's default reward (tests 1.0, compile 0.5, diff 0.1): SkyRL's reward is
#: repogym's minus it, so that a trajectory cut for length (0.0) earns no more than any graded attempt.
AGENT_FLOOR = -1.6
AGENTLESS_FLOOR = -2.6


@pytest.fixture(scope="module")
def seen(agentless_export, agent_export, gold_answer, tmp_path_factory) -> dict:
    """What skyrl-gym's envs returned, from one run of skyrl_checks.py in its venv."""
    python = bridge_python(VENV, "skyrl_gym", "REPOGYM_SKYRL_VENV")
    inputs = {
        "agentless_parquet": str(agentless_export.parquet),
        "agent_parquet": str(agent_export.parquet),
        "gold_answer": gold_answer,
        "wrong_answer": WRONG_ANSWER,
        "agent_replies": REPLIES,
        "max_turns": MAX_TURNS,
    }
    return run_checks(python, CHECKS, inputs, tmp_path_factory.mktemp("skyrl-checks"))


def truth_of(export) -> str:
    return pyarrow.parquet.read_table(export.parquet).to_pylist()[0]["reward_model"]["ground_truth"]


def test_skyrl_gym_makes_repogyms_env_by_name(seen):
    assert seen["registered"]
    played = [seen[name] for name in seen if name.startswith(("agentless_", "agent_"))]
    assert {(p["class"], p["is_base_text_env"], p["prompt_kept"]) for p in played} == {
        ("RepogymTextEnv", True, True)
    }
    assert all(p["episodes_open_after"] == 0 for p in played)


def test_an_agentless_reply_is_rewarded_as_repogym_grade_grades_its_diff(
    seen, agentless_export, gold_answer, cli_grade, tmp_path
):
    (gold,) = seen["agentless_gold"]["steps"]
    expected = compute_score("repogym", gold_answer, truth_of(agentless_export), {})
    assert cli_grade("--gold")["outcome"] == expected["outcome"] == "RESOLVED"
    assert expected["score"] == 2.0
    assert gold == {"observations": [], "reward": 2.0 - AGENTLESS_FLOOR, "done": True, "metadata": expected}
    (wrong,) = seen["agentless_wrong"]["steps"]
    assert (
        cli_grade("--patch", diff_file(tmp_path, "    return a * b", "    return b * a"))["outcome"]
        == "UNRESOLVED"
    )
    assert wrong["metadata"] == compute_score("repogym", WRONG_ANSWER, truth_of(agentless_export), {})


def test_an_agent_episode_is_rewarded_as_repogym_grade_grades_its_diff(seen, cli_grade, tmp_path):
    steps = seen["agent_gold"]["steps"]
    assert [(step["done"], step["reward"]) for step in steps] == [(False, 0.0), (False, 0.0), (True, 2.6)]
    assert steps[2]["metadata"]["score"] == 1.0 == 2.6 + AGENT_FLOOR
    assert (
        steps[1]["observations"][0]["role"] == "user"
        and "return a + b" in steps[1]["observations"][0]["content"]
    )
    assert steps[2]["metadata"]["outcome"] == cli_grade("--gold")["outcome"] == "RESOLVED"
    assert seen["agent_gold"]["metrics"] == {"turns": 3, "resolved": 1.0, "format_error": 0.0}
    wrong = seen["agent_wrong"]["steps"][-1]
    outcome = cli_grade("--patch", diff_file(tmp_path, "    return a - b", "    return a * b"))["outcome"]
    assert (wrong["done"], wrong["reward"], wrong["metadata"]["outcome"]) == (True, 1.6, outcome)
    assert wrong["metadata"]["score"] == 0.0
    cut = seen["agent_out_of_turns"]["steps"]  # fixed, never submitted: graded at SkyRL's max_turns
    assert len(cut) == MAX_TURNS and cut[-1]["done"] and cut[-1]["metadata"]["outcome"] == "RESOLVED"


def test_a_trajectory_cut_for_length_earns_no_more_than_a_graded_broken_patch(seen):
    """The attack: a policy holding a broken edit talks past SkyRL's length budget instead of submitting it, since
    SkyRL stops such a trajectory without stepping the env again, and an ungraded trajectory earned 0.0 while the
    submitted patch that does not compile earned -0.5. Read in both of SkyRL's reward modes: the last step's
    reward, and the sum of the per-turn rewards."""
    broken = seen["agent_broken"]["steps"][-1]
    # the module no longer imports: its tests never run
    assert broken["done"] and broken["metadata"]["outcome"] == "TESTS_DID_NOT_RUN"
    assert broken["metadata"]["score"] == -0.5  # the compile term: repogym's own reward of the attempt
    cut = [step["reward"] for step in seen["agent_cut_for_length"]["steps"]]
    assert len(cut) == 2 and not any(step["done"] for step in seen["agent_cut_for_length"]["steps"])
    graded = [
        seen[f"agent_{name}"]["steps"][-1]["reward"] for name in ("gold", "wrong", "broken", "out_of_turns")
    ]
    assert max(sum(cut), cut[-1]) <= min(graded)
    assert min(graded) == broken["reward"] > 0.0  # strictly: submitting anything beats running out the budget
    gave_up = seen["agent_gave_up"]["steps"][-1]  # an empty submission: 0.0 as repogym grades it
    assert gave_up["metadata"]["score"] == 0.0 and gave_up["reward"] > max(sum(cut), cut[-1])
