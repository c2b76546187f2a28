"""The export, reward_func.py and agent_func.py as OpenRLHF 0.11.2's own classes use them.

OpenRLHF pins deepspeed, flash-attn and vllm, which do not install without CUDA (`pip install openrlhf==0.11.2`
stops at flash-attn's build), so its venv ($REPOGYM_OPENRLHF_VENV, default .venv-openrlhf, made by
scripts/setup_bridges.sh) holds OpenRLHF without dependencies plus what its dataset and agent modules import.
Without it these tests skip, quoting why; with it, `openrlhf_checks.py` runs there and reports what OpenRLHF
saw, compared here with `repogym grade` and repogym's own rewards of the same answers.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from repogym.files import read_jsonl_records
from repogym.integrations.verl import compute_score

from .bridge_venv import ROOT, bridge_python, run_checks
from .test_openrlhf import FIX, SOURCE, WRONG_ANSWER, WRONG_FIX, diff_file, tool_call

CHECKS = Path(__file__).resolve().parent / "openrlhf_checks.py"
RUNBOOK = ROOT / "docs" / "integrations-openrlhf.md"
VENV = Path(os.environ.get("REPOGYM_OPENRLHF_VENV", ROOT / ".venv-openrlhf"))
REPLIES = {
    "gold": [tool_call("view_file", path=SOURCE), tool_call("str_replace", **FIX), tool_call("submit")],
    "wrong": [tool_call("str_replace", **WRONG_FIX), tool_call("submit")],
    "out_of_tokens": [tool_call("str_replace", **FIX)],
}


@pytest.fixture(scope="module")
def seen(openrlhf_agentless_export, openrlhf_agent_export, gold_answer, tmp_path_factory) -> dict:
    """What OpenRLHF's classes saw, from one run of openrlhf_checks.py in its venv."""
    python = bridge_python(VENV, "openrlhf.utils.agent", "REPOGYM_OPENRLHF_VENV")
    inputs = {
        "agentless_jsonl": str(openrlhf_agentless_export.dataset),
        "agent_jsonl": str(openrlhf_agent_export.dataset),
        "reward_func": str(openrlhf_agentless_export.user_file),
        "agent_func": str(openrlhf_agent_export.user_file),
        "gold_answer": gold_answer,
        "wrong_answer": WRONG_ANSWER,
        "agent_replies": REPLIES,
    }
    return run_checks(python, CHECKS, inputs, tmp_path_factory.mktemp("openrlhf-checks"))


def test_openrlhfs_prompt_dataset_reads_the_exported_rows(
    seen, openrlhf_agentless_export, openrlhf_agent_export
):
    (row,) = read_jsonl_records(openrlhf_agentless_export.dataset)
    assert seen["agentless_row"]["len"] == 1 and seen["agentless_row"]["datasource"] == "repogym"
    assert seen["agentless_row"]["label"] == row["label"]  # the task record arrives whole
    assert row["prompt"][0]["content"] in seen["agentless_row"]["prompt"]  # through the chat template
    (agent_row,) = read_jsonl_records(openrlhf_agent_export.dataset)
    assert seen["agent_row"]["label"] == agent_row["label"]


def test_openrlhfs_single_turn_executor_rewards_completions_as_repogym_grades_them(
    seen, openrlhf_agentless_export, gold_answer, cli_grade, tmp_path
):
    (row,) = read_jsonl_records(openrlhf_agentless_export.dataset)
    gold = compute_score("repogym", gold_answer, row["label"], {})
    assert cli_grade("--gold")["outcome"] == gold["outcome"] == "RESOLVED"
    assert seen["reward_gold"] == {
        "reward": [gold["score"]],
        "scores": [1.0],
        "extra_logs": {"repogym_resolved": [1.0], "repogym_format_error": [0.0]},
    }
    wrong = compute_score("repogym", WRONG_ANSWER, row["label"], {})
    assert (
        cli_grade("--patch", diff_file(tmp_path, "    return a * b", "    return b * a"))["outcome"]
        == "UNRESOLVED"
    )
    assert seen["reward_wrong"]["reward"] == pytest.approx([wrong["score"]]) and seen["reward_wrong"][
        "scores"
    ] == [0.0]


def test_openrlhfs_multi_turn_executor_runs_the_agent_and_rewards_it_as_grade_does(seen, cli_grade, tmp_path):
    assert seen["agent_classes"] == {"executor_is_multi_turn": True, "instance_is_agent_instance": True}
    resolved = {"repogym_resolved": 1.0, "repogym_format_error": 0.0}
    assert cli_grade("--gold")["outcome"] == "RESOLVED"
    gold = seen["agent_gold"]
    assert (gold["reward"], gold["scores"], gold["extra_logs"], gold["turns"]) == (1.0, 1.0, resolved, 3)
    assert (
        "<tool_response>" in gold["text"] and "return a + b" in gold["text"]
    )  # the tools' output was fed back
    assert (
        cli_grade("--patch", diff_file(tmp_path, "    return a - b", "    return a * b"))["outcome"]
        == "UNRESOLVED"
    )
    wrong = seen["agent_wrong"]
    assert (wrong["reward"], wrong["scores"], wrong["turns"]) == (0.0, 0.0, 2)
    cut = seen["agent_out_of_tokens"]  # fixed, never submitted: graded when the budget ran out
    assert (cut["reward"], cut["scores"], cut["turns"]) == (1.0, 1.0, 2)
    assert all(seen[f"agent_{name}"]["episodes_open_after"] == 0 for name in REPLIES)


def test_the_runbooks_commands_name_only_flags_openrlhfs_trainer_has(seen):
    commands = re.findall(r"openrlhf\.cli\.train_ppo_ray(.*?)```", RUNBOOK.read_text(), re.DOTALL)
    flags = {flag for command in commands for flag in re.findall(r"(--[a-z_.]+)", command)}
    assert len(commands) == 2 and "--train.agent_func_path" in flags and "--reward.remote_url" in flags
    assert flags - set(seen["trainer_flags"]) == set()
