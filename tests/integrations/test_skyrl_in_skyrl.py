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
}


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
    assert gold == {"observations": [], "reward": 2.0, "done": True, "metadata": expected}
    (wrong,) = seen["agentless_wrong"]["steps"]
    assert (
        cli_grade("--patch", diff_file(tmp_path, "    return a * b", "    return b * a"))["outcome"]
        == "UNRESOLVED"
    )
    assert wrong["metadata"] == compute_score("repogym", WRONG_ANSWER, truth_of(agentless_export), {})


def test_an_agent_episode_is_rewarded_as_repogym_grade_grades_its_diff(seen, cli_grade, tmp_path):
    steps = seen["agent_gold"]["steps"]
    assert [(step["done"], step["reward"]) for step in steps] == [(False, 0.0), (False, 0.0), (True, 1.0)]
    assert (
        steps[1]["observations"][0]["role"] == "user"
        and "return a + b" in steps[1]["observations"][0]["content"]
    )
    assert steps[2]["metadata"]["outcome"] == cli_grade("--gold")["outcome"] == "RESOLVED"
    assert seen["agent_gold"]["metrics"] == {"turns": 3, "resolved": 1.0, "format_error": 0.0}
    wrong = seen["agent_wrong"]["steps"][-1]
    outcome = cli_grade("--patch", diff_file(tmp_path, "    return a - b", "    return a * b"))["outcome"]
    assert (wrong["done"], wrong["reward"], wrong["metadata"]["outcome"]) == (True, 0.0, outcome)
    cut = seen["agent_out_of_turns"]["steps"]  # fixed, never submitted: graded at SkyRL's max_turns
    assert len(cut) == MAX_TURNS and cut[-1]["done"] and cut[-1]["metadata"]["outcome"] == "RESOLVED"
