"""`repogym train sft` under `accelerate launch`: two CPU processes (DDP over gloo), and the example configs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "sft.yaml"


@pytest.mark.parametrize(("name", "kind"), [("ddp", "MULTI_GPU"), ("zero2", "DEEPSPEED"), ("zero3", "DEEPSPEED"),
                                            ("fsdp2", "FSDP"), ("cpu_ddp", "MULTI_GPU")])  # fmt: skip
def test_the_example_accelerate_configs_load_as_accelerate_reads_them(name, kind):
    from accelerate.commands.config.config_args import load_config_from_file

    config = load_config_from_file(str(ROOT / "examples" / "accelerate" / f"{name}.yaml"))
    assert config.distributed_type.value == kind and config.num_processes >= 2
    if kind == "DEEPSPEED":
        assert config.deepspeed_config["zero_stage"] == int(name[-1])
    if kind == "FSDP":
        assert config.fsdp_config["fsdp_version"] == 2
    assert config.mixed_precision == ("no" if name == "cpu_ddp" else "bf16")


@pytest.mark.slow
def test_two_cpu_processes_train_sft_together(tmp_path, tiny_model, window_rows):
    accelerate = shutil.which("accelerate", path=str(Path(sys.executable).parent)) or shutil.which(
        "accelerate"
    )
    assert accelerate, "accelerate's launcher is installed with the train extra"
    out = tmp_path / "sft"
    # examples/accelerate/cpu_ddp.yaml: torchrun's two processes, DDP over gloo (accelerate's --cpu flag
    # would start only one process: it picks the single-process launcher).
    config = ROOT / "examples" / "accelerate" / "cpu_ddp.yaml"
    command = [accelerate, "launch", "--config_file", str(config), "-m", "repogym", "train", "sft", str(EXAMPLE),
               f"base_model={tiny_model}", f"data={window_rows}", f"output_dir={out}", "max_steps=3",
               "batch_size=1", "save_steps=3", "logging_steps=1", "max_length=256", "--json"]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout)["world_size"] == 2  # printed once, by rank 0
    summary = json.loads((out / "repogym_sft.json").read_text())["summary"]
    assert summary["world_size"] == 2 and summary["global_step"] == 3
    state = json.loads((out / "checkpoint-3" / "trainer_state.json").read_text())
    assert state["train_batch_size"] == 1 and state["global_step"] == 3
    assert (out / "model.safetensors").is_file()
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows if "loss" in row] == [1, 2, 3]  # one writer: rank 0


def test_a_finished_run_ends_its_process_group_before_exit(tmp_path):
    """Gloo's threads outliving the interpreter abort a rank at exit (the CI flake of this file's
    two-process test): the CLI ends the group on the way out, while Python is alive."""
    script = (
        "import torch.distributed as dist\n"
        "from repogym.train.launch import end_process_group\n"
        f"dist.init_process_group('gloo', init_method='file://{tmp_path / 'rendezvous'}', rank=0, world_size=1)\n"
        "assert dist.is_initialized()\n"
        "end_process_group()\n"
        "print('initialized after:', dist.is_initialized())\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "initialized after: False"
