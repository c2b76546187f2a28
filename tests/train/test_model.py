"""`repogym model init` (documented sizes, a tokenizer trained on the corpus) and `model pretrain` (cached, resumable)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repogym.cli import app
from repogym.train.checkpoints import checkpoints, is_complete
from repogym.train.model import SIZES, check_model_folder, model_record
from repogym.train.pretrain import PRETRAIN_RECORD, PretrainConfig, pretrain

SOURCE = Path(__file__).resolve().parents[2] / "src" / "repogym"


@pytest.mark.parametrize(
    ("size", "low", "high"),
    [("tiny", 1.0e6, 2e6), ("small", 5e6, 9e6), ("base", 15e6, 30e6), ("medium", 90e6, 105e6)],
)
def test_each_size_has_the_documented_parameter_count(size, low, high):
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig

    shape = SIZES[size]
    config = LlamaConfig(**{k: v for k, v in vars(shape).items()}, tie_word_embeddings=True)
    with torch.device("meta"):
        params = sum(p.numel() for p in AutoModelForCausalLM.from_config(config).parameters())
    assert low <= params <= high


def test_model_init_writes_a_loadable_folder_with_a_tokenizer_from_the_corpus(tmp_path):
    out = tmp_path / "tiny"
    args = ["model", "init", "--tiny", str(out), "--tokenizer-corpus", str(SOURCE / "train"), "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert check_model_folder(out) == out
    record = model_record(out)
    assert record["size"] == "tiny" and 1e6 < record["params"] < 2e6
    assert (
        record["tokenizer_corpus"]["roots"] == [str(SOURCE / "train")]
        and record["tokenizer_corpus"]["files"] >= 5
    )
    from repogym.agent.backends.tokenizer import load_tokenizer

    tokenizer = load_tokenizer(out)
    text = "    def __init__(self, config):"
    assert len(tokenizer(text)["input_ids"]) <= len(text) / 3  # Python's common strings are merged
    assert "{%- generation %}" in tokenizer.chat_template


@pytest.mark.slow
def test_pretraining_lowers_the_loss_and_a_second_call_comes_from_the_cache(
    tmp_path, tiny_model, monkeypatch
):
    import shutil

    monkeypatch.setenv("REPOGYM_CACHE", str(tmp_path / "cache"))
    model = tmp_path / "m"
    shutil.copytree(tiny_model, model)
    config = PretrainConfig(str(model), budget_minutes=0.1, corpus=(str(SOURCE / "train"),), seq_len=64,
                            batch_size=4, learning_rate=3e-3, logging_steps=2)  # fmt: skip
    first = pretrain(config, progress=False)
    assert not first.cached and first.steps >= 4 and first.tokens == first.steps * 4 * 64
    rows = [
        json.loads(line) for line in next((tmp_path / "cache").glob("pretrain/*/run/metrics.jsonl")).open()
    ]
    losses = [row["loss"] for row in rows if "loss" in row]
    assert losses[-1] < losses[0] and all("tokens_per_s" in row for row in rows if "loss" in row)
    assert (model / "metrics.jsonl").read_text() == next(
        (tmp_path / "cache").glob("pretrain/*/run/metrics.jsonl")
    ).read_text()  # the curve travels with the model, where `repogym report` looks
    weights = (model / "model.safetensors").read_bytes()
    assert weights != (tiny_model / "model.safetensors").read_bytes()  # trained in place
    again = pretrain(config, progress=False)
    assert again.cached and again.key == first.key and (model / "model.safetensors").read_bytes() == weights
    elsewhere = pretrain(
        PretrainConfig(**{**vars(config), "out_dir": str(tmp_path / "copy")}), progress=False
    )
    assert elsewhere.cached and (tmp_path / "copy" / "model.safetensors").read_bytes() == weights
    assert (tmp_path / "copy" / "metrics.jsonl").is_file()


@pytest.mark.slow
def test_a_killed_pretraining_resumes_from_its_checkpoint(tmp_path, tiny_model):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "REPOGYM_CACHE": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "repogym", "model", "pretrain", str(tiny_model), "--out", str(tmp_path / "m"),
               "--corpus", str(SOURCE / "train"), "--budget", "0.15", "--seq-len", "64", "--batch-size", "4",
               "--save-steps", "2"]  # fmt: skip
    run = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240

    def done() -> list[Path]:
        return [
            c
            for run_dir in (tmp_path / "cache").glob("pretrain/*/run")
            for c in checkpoints(run_dir)
            if is_complete(c)
        ]

    while len(done()) < 2 and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    run.send_signal(signal.SIGKILL)
    _, stderr = run.communicate(timeout=30)
    assert run.returncode == -signal.SIGKILL, stderr.decode()[-2000:]
    kept = max(int(c.name.split("-")[1]) for c in done())
    finished = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stderr[-2000:]
    record = json.loads((tmp_path / "m" / PRETRAIN_RECORD).read_text())
    assert int(record["resumed_from"].split("-")[1]) >= kept and record["steps"] > kept


def test_the_default_corpus_leaves_out_repogym_itself_whose_sample_libraries_are_the_eval_tasks(
    tmp_path, monkeypatch
):
    """Installed non-editable, repogym sits in site-packages: pretraining on it would show the model the
    sample libraries' code, and with it the quickstart's held-out functions."""
    from repogym.train import corpus

    (tmp_path / "other.py").write_text("def other():\n    return 1\n")
    monkeypatch.setattr(corpus, "default_corpus_paths", lambda: [SOURCE.parent, tmp_path])
    chosen = corpus.load_corpus(max_chars=10**9)
    assert [name for name, _ in chosen.files] == ["1/other.py"]
    given = corpus.load_corpus([SOURCE / "samples"], max_chars=10**9)  # named on purpose: kept
    assert given.files and all(name.startswith("0/") for name, _ in given.files)
