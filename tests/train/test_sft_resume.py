"""kill -9 during `repogym train sft`, then `--resume`: the run ends at max_steps with no checkpoint lost."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from repogym.errors import ConfigError
from repogym.train.checkpoints import checkpoints, is_complete, resume_point
from repogym.train.metrics import read_metrics

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sft.yaml"
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def _complete(out: Path) -> set[str]:
    return {c.name for c in checkpoints(out) if is_complete(c)}


@pytest.mark.slow
def test_sigkill_mid_run_then_resume_reaches_max_steps_keeping_every_checkpoint(
    tmp_path, tiny_model, window_rows
):
    out = tmp_path / "sft"
    command = [sys.executable, "-m", "repogym", "train", "sft", str(EXAMPLE), f"base_model={tiny_model}",
               f"data={window_rows}", f"output_dir={out}", "max_steps=40", "save_steps=4", "logging_steps=1",
               "batch_size=2", "max_length=256"]  # fmt: skip
    run = subprocess.Popen(command, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    while "checkpoint-8" not in _complete(out) and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    run.send_signal(signal.SIGKILL)
    _, stderr = run.communicate(timeout=30)
    assert run.returncode == -signal.SIGKILL, stderr.decode()[-2000:]  # killed mid-run, not finished
    before = _complete(out)
    assert "checkpoint-8" in before and "checkpoint-40" not in before

    with pytest.raises(ConfigError, match="pass --resume"):  # without it, the folder is not trained over
        resume_point(out, resume=False)

    resumed = subprocess.run([*command, "--resume"], env=ENV, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    after = _complete(out)
    assert before <= after and {f"checkpoint-{n}" for n in range(4, 41, 4)} == after
    state = json.loads((out / "checkpoint-40" / "trainer_state.json").read_text())
    assert state["global_step"] == 40
    summary = json.loads((out / "repogym_sft.json").read_text())["summary"]
    newest_before = max(before, key=lambda name: int(name.split("-")[1]))
    assert summary["resumed_from"] == newest_before and summary["global_step"] == 40
    steps = [row["step"] for row in read_metrics(out) if "loss" in row]
    assert steps == list(
        range(1, 41)
    )  # every step logged once: rows past the checkpoint were re-run, not doubled
