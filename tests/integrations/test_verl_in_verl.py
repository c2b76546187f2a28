"""The export, the reward function and the agent classes as verl 0.9.1's own classes use them.

verl's pins differ from repogym's (transformers, ray, torch's CUDA wheels), so verl lives in a virtual
environment of its own: $REPOGYM_VERL_VENV, default .venv-verl in this checkout, which scripts/setup_bridges.sh
makes (CI runs it).
Without it these tests skip, saying why; with it, `verl_checks.py` runs there (this checkout's src/ on its
path) and reports what verl saw, compared here with repogym's own grades of the same answers.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pyarrow.parquet
import pytest

from repogym.env.tools import tool_names
from repogym.integrations.verl import compute_score
from repogym.integrations.verl_agent import NO_EPISODE
from repogym.integrations.verl_export import AGENT_LOOP_CLASS, AGENT_LOOP_NAME

from .bridge_venv import ROOT, bridge_python, run_checks

EXAMPLES = ("grpo_agentless.sh", "grpo_agent.sh")
CHECKS = Path(__file__).resolve().parent / "verl_checks.py"
VENV = Path(os.environ.get("REPOGYM_VERL_VENV", ROOT / ".venv-verl"))
SOURCE = "src/calc/__init__.py"
FIX = {"path": SOURCE, "old": "return a - b", "new": "return a + b"}


def example_overrides(script: str, stubs: Path) -> list[str]:
    """The overrides examples/verl/SCRIPT hands verl's trainer: the script run with `repogym` and `python3`
    standing in (the export it runs first is tested above; the trainer needs a GPU), its arguments kept."""
    stubs.mkdir(exist_ok=True)
    for name in ("repogym", "python3"):
        (stubs / name).write_text(
            f'#!/bin/sh\n[ "{name}" = python3 ] && printf "%s\\n" "$@" > "{stubs}/args"\nexit 0\n'
        )
        (stubs / name).chmod(0o755)
    environment = {
        "PATH": f"{stubs}:{os.environ['PATH']}",
        "MODEL": "m",
        "TASKS": "t.jsonl",
        "VAL_TASKS": "v.jsonl",
    }
    run = subprocess.run(
        ["bash", ROOT / "examples" / "verl" / script], env=environment, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    arguments = (stubs / "args").read_text().splitlines()
    assert arguments[:2] == ["-m", "verl.trainer.main_ppo"], arguments[:2]
    return arguments[2:]


@pytest.fixture(scope="module")
def seen(agentless_export, agent_export, gold_answer, tmp_path_factory) -> dict:
    """What verl's classes saw, from one run of verl_checks.py in the verl venv (about 15 s)."""
    python = bridge_python(VENV, "verl", "REPOGYM_VERL_VENV")
    work = tmp_path_factory.mktemp("verl-checks")
    inputs = {
        "agentless_parquet": str(agentless_export.parquet),
        "agent_parquet": str(agent_export.parquet),
        "tool_config": str(agent_export.tool_config),
        "agent_loop_class": AGENT_LOOP_CLASS,
        "cache": str(work / "verl-cache"),
        "gold_answer": gold_answer,
        "source": SOURCE,
        "fix": FIX,
        "example_overrides": {script: example_overrides(script, work / "stubs") for script in EXAMPLES},
    }
    return run_checks(python, CHECKS, inputs, work)


def test_verls_dataset_class_reads_the_exported_rows_as_written(seen, agentless_export, agent_export):
    row = pyarrow.parquet.read_table(agentless_export.parquet).to_pylist()[0]
    assert seen["agentless_len"] == 1
    assert seen["agentless_row"] == {
        "raw_prompt": row["prompt"],
        "reward_model": row["reward_model"],
        "extra_info": row["extra_info"],
        "index": 0,
    }
    agent_row = pyarrow.parquet.read_table(agent_export.parquet).to_pylist()[0]
    assert seen["agent_row"] == {
        "agent_name": AGENT_LOOP_NAME,
        "tools_kwargs": agent_row["extra_info"]["tools_kwargs"],
        "index": 0,
    }
    assert seen["dataset_tool_names"] == tool_names()  # verl built repogym's tools from the exported config


def test_verls_reward_manager_gets_the_grades_reward(seen, agentless_export, gold_answer, cli_grade):
    truth = pyarrow.parquet.read_table(agentless_export.parquet).to_pylist()[0]["reward_model"][
        "ground_truth"
    ]
    expected = compute_score("repogym", gold_answer, truth, {})
    assert seen["manager"] == "verl.experimental.reward_loop.reward_manager.naive.NaiveRewardManager"
    assert seen["gold"] == {"reward_score": expected["score"], "reward_extra_info": expected}
    assert seen["gold"]["reward_extra_info"]["outcome"] == cli_grade("--gold")["outcome"] == "RESOLVED"
    assert seen["garbage"]["reward_score"] == -1.0
    assert seen["garbage"]["reward_extra_info"]["outcome"] == "FORMAT_ERROR"


def test_the_agent_classes_run_a_scripted_episode_scored_like_grade_gold(seen, cli_grade):
    resolved = {"score": 1.0, "acc": 1.0, "format_error": 0.0, "outcome": cli_grade("--gold")["outcome"]}
    assert seen["agent_loop_is_a_tool_agent_loop"] and all(seen["tools_are_verl_base_tools"])
    assert seen["calc_reward"] == 1.0
    assert seen["outside_an_episode"] == [NO_EPISODE, 0.0]
    for trajectory in ("submitted", "never_submitted"):  # an unsubmitted diff is graded when the loop ends
        assert seen[trajectory]["episodes_open_after"] == 0
        assert seen[trajectory]["reward"] == {"reward_score": 1.0, "reward_extra_info": resolved}
        assert "return a + b" in seen[trajectory]["observations"][1]
    assert seen["submitted"]["observations"][2].startswith("Submitted")


def test_the_example_grpo_scripts_name_only_keys_verl_has(seen):
    for script in EXAMPLES:
        assert seen["examples"][script] == {
            "error": None,
            "reward_function": {"path": "pkg://repogym.integrations.verl", "name": "compute_score"},
            "adv_estimator": "grpo",
        }, script
