"""The seed's section 9.1 YAML, unchanged but for the interface's overrides, runs two GRPO steps on sample tasks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def test_seed_yaml_runs_two_grpo_steps_on_the_sample_tasks(
    examples_dir, tiny_model, sample_tasks_file, tmp_path
):
    out = tmp_path / "seed-run"
    repogym = Path(sys.executable).with_name("repogym")
    done = subprocess.run(
        [
            str(repogym), "train", "rl", str(examples_dir / "seed_grpo.yaml"),
            f"base_model={tiny_model}", f"env.task_set={sample_tasks_file}", "total_steps=2",
            "rollout.num_candidates=2", "batch_size=2", f"output_dir={out}",
            # CPU-sized: short completions, no activation recomputation on a 2M-parameter model
            "grpo.max_completion_length=24", "grpo.gradient_checkpointing=false",
            "grpo.beta=0.04",  # a KL term to the starting model, so the run also logs `kl`
            "--json",
        ],
        capture_output=True, text=True, timeout=1200, env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    summary = json.loads(done.stdout)
    assert summary["global_step"] == 2
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps = [row for row in rows if "reward" in row]
    assert [row["step"] for row in steps] == [1, 2]
    for name in ("tests_pass", "compile_pass", "minimal_diff"):  # the seed's terms, each logged
        assert f"rewards/{name}/mean" in steps[0]
    assert "tools/call_frequency" in steps[0], "the seed's env (swegym) is the multi-turn agent mode"
    assert "kl" in steps[0] and "clip_ratio/region_mean" in steps[0]
    run = json.loads((out / "run.json").read_text())
    assert run["config"]["env"]["type"] == "swegym" and run["config"]["learning_rate"] == 1e-6
    assert (out / "model.safetensors").is_file() and list((out / "runs").iterdir()), (
        "model and TensorBoard logs"
    )
