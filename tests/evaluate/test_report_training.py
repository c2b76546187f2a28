"""Training curves from a metrics.jsonl written by a real trainer (transformers' Trainer on a tiny
Llama with repogym's MetricsJsonlCallback, the callback `repogym train sft` and GRPO add)."""

from __future__ import annotations

import json

import pytest

from ..support.cli import cli

pytestmark = pytest.mark.slow


def test_report_draws_the_curves_a_real_trainer_logged(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from repogym.train.metrics import METRICS_FILE, MetricsJsonlCallback

    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=2, max_position_embeddings=32,
    ))  # fmt: skip
    rows = [{"input_ids": ids, "labels": ids} for ids in torch.randint(0, 64, (16, 12)).tolist()]
    output = tmp_path / "sft"
    args = transformers.TrainingArguments(
        output_dir=str(output), max_steps=6, logging_steps=1, per_device_train_batch_size=4, learning_rate=1e-2,
        use_cpu=True, report_to=[], save_strategy="no", disable_tqdm=True,
    )  # fmt: skip
    transformers.Trainer(model=model, args=args, train_dataset=rows, callbacks=[MetricsJsonlCallback()]).train()
    logged = [json.loads(line) for line in (output / METRICS_FILE).read_text().splitlines()]
    assert [row["step"] for row in logged if "loss" in row] == [1, 2, 3, 4, 5, 6]

    out = tmp_path / "report.html"
    result = cli("report", str(output), "--out", str(out))
    assert result.exit_code == 0, result.output
    html = out.read_text()
    assert "sft: loss" in html and "sft: learning rate" in html and "sft: grad norm" in html
    plots = sorted(p.name for p in (tmp_path / "report_plots").glob("*.png"))
    assert plots == ["train-sft-grad-norm.png", "train-sft-learning-rate.png", "train-sft-loss.png"]


def test_the_pretraining_curve_beside_a_model_folder_is_drawn_first(tmp_path):
    """`model pretrain --out model/pretrained` leaves its metrics.jsonl there; the quickstart's report
    walks OUT and must draw that curve before SFT's and GRPO's (ranked by the stage word's prefix)."""
    from repogym.evaluate.report.collect import collect

    for folder, loss in (("train/sft", 2.0), ("model/pretrained", 8.0), ("train/grpo", 0.5)):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "metrics.jsonl").write_text(json.dumps({"step": 1, "loss": loss}) + "\n")
    inputs = collect([tmp_path])  # the folder's own name (this test's) holds "pretraining": it must not count
    assert [run.label.split("/", 1)[1] for run in inputs.ordered_trainings()] == [
        "model/pretrained", "train/sft", "train/grpo"
    ]
