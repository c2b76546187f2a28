"""`repogym train flywheel`: a round of rollout -> SFT -> GRPO -> held-out eval, resumable after a crash.

Sample-repository tasks split into train and held-out; agentless mode; the tiny model. The first
run dies inside the SFT stage (its SFT raises, as a kill would end it); the second run skips what
was finished (baseline eval, rollout, SFT data) and completes the round; a third does nothing.
"""

from __future__ import annotations

import json

import pytest
from rl_support import fast_settings

from repogym.config import validate_config
from repogym.dataset import load_tasks, save_tasks
from repogym.rollout.store import load_trajectories
from repogym.train.flywheel import STATE_FILE, run_flywheel
from repogym.train.flywheel_seams import run_sft

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]  # several model loads


class Killed(Exception):
    pass


def test_a_round_runs_every_stage_and_resumes_after_a_crash(tiny_model, sample_tasks_file, tmp_path):
    tasks = list(load_tasks(sample_tasks_file))
    train, held_out = tmp_path / "train.jsonl", tmp_path / "held_out.jsonl"
    save_tasks(tasks[:2], train)
    save_tasks(tasks[2:3], held_out)
    config = validate_config({
        "base_model": str(tiny_model), "env": {"task_set": str(train), "mode": "agentless"},
        "rollout": {"num_candidates": 2}, "batch_size": 2, "total_steps": 2, "output_dir": str(tmp_path / "fw"),
        "flywheel": {"eval_task_set": str(held_out), "attempts": 2, "sft_steps": 3, "max_reply_tokens": 16},
        "grpo": fast_settings(),
    })  # fmt: skip

    def crashing_sft(*args, **kwargs):
        raise Killed("the SFT stage was killed")

    with pytest.raises(Killed):
        run_flywheel(config, 1, sft=crashing_sft)
    done_before = json.loads((tmp_path / "fw" / STATE_FILE).read_text())["stages"]
    assert sorted(done_before) == ["baseline", "round-0/rollout", "round-0/sft_data"]
    assert done_before["round-0/sft_data"]["gold"] == 2, "round 0 fine-tunes on the gold demonstrations"
    assert (tmp_path / "fw" / "round-0" / "sft.jsonl").is_file()

    lines: list[str] = []
    (row,) = run_flywheel(config, 1, sft=run_sft, notify=lines.append)
    for stage in ("baseline", "round-0/rollout", "round-0/sft_data"):
        assert f"{stage}: done earlier, skipped" in lines
    assert "round-0/sft: running" in lines and "round-0/grpo: running" in lines
    assert len(load_trajectories(tmp_path / "fw" / "round-0" / "rollout")) == 2 * 2, "no attempt ran twice"
    assert row.round == 0 and row.sft_rows >= 2
    assert 0.0 <= row.eval_resolve_rate <= 1.0 and 0.0 <= row.baseline_resolve_rate <= 1.0
    assert row.policy.endswith("round-0/grpo")
    grpo_rows = [json.loads(line) for line in (tmp_path / "fw" / "round-0" / "grpo" / "metrics.jsonl").open()]
    assert [r["step"] for r in grpo_rows if "reward" in r] == [1, 2]
    run = json.loads((tmp_path / "fw" / "round-0" / "grpo" / "run.json").read_text())
    assert run["config"]["base_model"].endswith("round-0/sft"), "GRPO starts from the round's SFT model"

    again: list[str] = []
    assert run_flywheel(config, 1, notify=again.append) == [row]
    assert all(line.endswith("done earlier, skipped") for line in again)
