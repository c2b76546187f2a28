"""kill -9 during `repogym train rl`, then `--resume`: the run ends at its step count as if never killed.

A reference run goes uninterrupted (in the test's process); a second run of the same config, a
`repogym train rl` process, is killed (SIGKILL) as soon as its first checkpoint is complete, then
continued with --resume. With a fixed seed, the resumed
run must log the same learning rate, loss and reward at every step and end with the same weights:
that holds only if the model, optimiser, scheduler and RNG states all came back from the checkpoint.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from safetensors.torch import load_file

from repogym.config import load_config
from repogym.train.grpo import train_rl

from ..support.rl import fast_settings, write_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]  # several model loads

STEPS, SAVE_EVERY = 4, 2


def command(config: Path, *extra: str) -> list[str]:
    return [str(Path(sys.executable).with_name("repogym")), "train", "rl", str(config), *extra]


#: One torch thread, as in this test process (conftest's one_torch_thread): the same arithmetic.
ONE_THREAD = {**os.environ, "OMP_NUM_THREADS": "1"}


def rows_by_step(output_dir: Path) -> dict[int, dict]:
    rows = [json.loads(line) for line in (output_dir / "metrics.jsonl").read_text().splitlines()]
    steps = [row["step"] for row in rows if "reward" in row]
    assert steps == sorted(set(steps)), f"a step was logged twice: {steps}"
    return {row["step"]: row for row in rows if "reward" in row}


def finished_checkpoints(output_dir: Path) -> list[int]:
    return sorted(
        int(path.parent.name.removeprefix("checkpoint-"))
        for path in output_dir.glob("checkpoint-*/trainer_state.json")
    )


def test_sigkill_then_resume_ends_at_the_step_count_with_nothing_lost(tiny_model, toy_tasks_file, tmp_path):
    def config(name: str) -> Path:
        return write_config(tmp_path / f"{name}.yaml", {
            "base_model": str(tiny_model), "env": {"task_set": str(toy_tasks_file), "mode": "agentless"},
            "rollout": {"num_candidates": 2}, "batch_size": 2, "total_steps": STEPS, "learning_rate": 0.01,
            "output_dir": str(tmp_path / name), "seed": 3,
            "reward": {"components": [{"name": "short", "fn": "overlong", "kwargs": {"max_chars": 80, "buffer_chars": 80}}]},
            "grpo": fast_settings(save_steps=SAVE_EVERY),
        })  # fmt: skip

    reference = train_rl(load_config(config("reference")))  # in this process: one start-up fewer
    assert reference.global_step == STEPS

    killed_dir = tmp_path / "killed"
    process = subprocess.Popen(
        command(config("killed")), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ONE_THREAD
    )
    deadline = time.monotonic() + 600
    while not finished_checkpoints(killed_dir) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=60)
    assert process.returncode == -signal.SIGKILL, "the run ended on its own before it could be killed"
    kept = finished_checkpoints(killed_dir)
    assert kept and kept[-1] < STEPS

    resumed = subprocess.run(
        command(config("killed"), "--resume"), capture_output=True, text=True, timeout=900, env=ONE_THREAD
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resuming from checkpoint-{kept[-1]}" in resumed.stderr

    assert finished_checkpoints(killed_dir) == list(range(SAVE_EVERY, STEPS + 1, SAVE_EVERY)), (
        "a checkpoint was lost"
    )
    state = json.loads((killed_dir / f"checkpoint-{STEPS}" / "trainer_state.json").read_text())
    assert state["global_step"] == STEPS
    ours, theirs = rows_by_step(killed_dir), rows_by_step(tmp_path / "reference")
    assert sorted(ours) == list(range(1, STEPS + 1))
    for step in range(1, STEPS + 1):
        for key in ("learning_rate", "loss", "reward"):
            assert ours[step][key] == pytest.approx(theirs[step][key], rel=1e-4, abs=1e-6), (step, key)
    final, expected = (
        load_file(killed_dir / "model.safetensors"),
        load_file(tmp_path / "reference" / "model.safetensors"),
    )
    assert all((final[name] - expected[name]).abs().max() < 1e-5 for name in expected)
