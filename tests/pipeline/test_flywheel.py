"""`repogym train flywheel`: a round of rollout -> SFT data -> SFT -> GRPO -> held-out eval, resumable after a crash.

Sample-repository tasks split into train and held-out; agentless mode; the tiny model. The first run is
killed as the SFT stage starts (its "running" line raises, as a kill would end it there); the second run
reads the finished stages back from their folders (baseline eval, rollout, SFT data) and completes the
round; a third runs nothing and reads back every stage's result equal to what the second computed.
"""

from __future__ import annotations

import json

import pytest

from repogym.config import validate_config
from repogym.dataset import load_tasks, save_tasks
from repogym.pipeline.flywheel import STATE_FILE, run_flywheel
from repogym.pipeline.record import StageResult
from repogym.pipeline.runner import Hooks
from repogym.pipeline.sft import SFTDataResult
from repogym.rollout.store import load_trajectories

pytest.importorskip("trl", reason="training needs the 'train' extra")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]  # several model loads

#: GRPO settings that keep a CPU test short (tiny completions, no TensorBoard, no recomputation).
FAST_GRPO = {"max_completion_length": 16, "gradient_checkpointing": False, "report_to": [], "save_steps": 1000}


class Killed(Exception):
    pass


def kill_at(line: str):  # type: ignore[no-untyped-def]
    def notify(message: str) -> None:
        if message == line:
            raise Killed(message)

    return notify


def test_a_round_runs_every_stage_and_resumes_after_a_crash(tiny_model, sample_data, tmp_path):
    tasks = list(load_tasks(sample_data.tasks_file))
    train, held_out = tmp_path / "train.jsonl", tmp_path / "held_out.jsonl"
    save_tasks(tasks[:2], train)
    save_tasks(tasks[2:3], held_out)
    fw = tmp_path / "fw"
    config = validate_config({
        "base_model": str(tiny_model), "env": {"task_set": str(train), "mode": "agentless"},
        "rollout": {"num_candidates": 2}, "batch_size": 2, "total_steps": 2, "output_dir": str(fw),
        "flywheel": {"eval_task_set": str(held_out), "attempts": 2, "sft_steps": 3, "max_reply_tokens": 16},
        "grpo": FAST_GRPO,
    })  # fmt: skip

    with pytest.raises(Killed):
        run_flywheel(config, 1, Hooks(notify=kill_at("round-0/sft: running")))
    assert (fw / "baseline-eval" / "summary.json").is_file() and (fw / "round-0" / "rollout" / "stage.json").is_file()
    assert SFTDataResult.find(fw / "round-0").gold == 2, "round 0 fine-tunes on the gold demonstrations"
    assert (fw / "round-0" / "sft.jsonl").is_file() and not (fw / "round-0" / "sft" / "stage.json").exists()

    lines: list[str] = []
    computed: dict[str, StageResult] = {}
    (row,) = run_flywheel(config, 1, Hooks(notify=lines.append, finished=computed.__setitem__))
    for stage in ("baseline", "round-0/rollout", "round-0/sft_data"):
        assert f"{stage}: done earlier, skipped" in lines
    assert "round-0/sft: running" in lines and "round-0/grpo: running" in lines
    assert len(load_trajectories(fw / "round-0" / "rollout")) == 2 * 2, "no attempt ran twice"
    assert row.round == 0 and row.sft_rows >= 2
    assert 0.0 <= row.eval_resolve_rate <= 1.0 and 0.0 <= row.baseline_resolve_rate <= 1.0
    assert row.policy.endswith("round-0/grpo")
    grpo_rows = [json.loads(line) for line in (fw / "round-0" / "grpo" / "metrics.jsonl").open()]
    assert [r["step"] for r in grpo_rows if "reward" in r] == [1, 2]
    run = json.loads((fw / "round-0" / "grpo" / "run.json").read_text())
    assert run["config"]["base_model"].endswith("round-0/sft"), "GRPO starts from the round's SFT model"
    assert json.loads((fw / STATE_FILE).read_text())["rounds"] == [row.to_dict()]

    again: list[str] = []
    read_back: dict[str, StageResult] = {}
    assert run_flywheel(config, 1, Hooks(notify=again.append, finished=read_back.__setitem__)) == [row]
    assert again and all(line.endswith("done earlier, skipped") for line in again)
    assert read_back == computed  # every stage's result, read back from its folder, equals what it returned
    assert sorted(read_back) == ["baseline", *(f"round-0/{s}" for s in ("eval", "grpo", "rollout", "sft", "sft_data"))]
