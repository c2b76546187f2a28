"""`repogym train sft` on the tiny model with TRL's real SFTTrainer: it learns, its mask is assistant-only,
its output loads as a policy, and bad input is refused before training starts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from repogym.errors import ConfigError
from repogym.train.sft import build_trainer, preflight, run_sft
from repogym.train.sft_config import load_sft_config

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sft.yaml"


def config_for(tiny_model: Path, rows: Path, output_dir: Path, *overrides: str):
    return load_sft_config(
        EXAMPLE, [f"base_model={tiny_model}", f"data={rows}", f"output_dir={output_dir}", *overrides]
    )


def test_the_loss_mask_covers_exactly_the_assistant_answer(tmp_path, tiny_model, window_rows):
    config = config_for(tiny_model, window_rows, tmp_path / "sft", "max_steps=1")
    prepared = preflight(config)
    trainer = build_trainer(config, prepared, progress=False)
    row = json.loads(window_rows.read_text().splitlines()[0])
    example = trainer.train_dataset[0]
    trained = [
        token for token, label in zip(example["input_ids"], example["labels"], strict=True) if label != -100
    ]
    assert prepared.tokenizer.decode(trained) == row["messages"][1]["content"] + "<|im_end|>"
    assert row["messages"][0]["content"] in prepared.tokenizer.decode(example["input_ids"])


@pytest.mark.slow
def test_sft_fits_a_handful_of_tasks_and_the_output_replays_their_gold_answers_greedily(
    tmp_path, tiny_model, window_rows
):
    from repogym.agent.policies import PolicyConfig, PolicyRequest, SamplingParams, make_policy
    from repogym.train.metrics import read_metrics

    out = tmp_path / "sft"
    three = tmp_path / "three.jsonl"  # three tasks: the fewest tokens a step that still shows fitting several
    three.write_text("".join(window_rows.read_text().splitlines(keepends=True)[:3]))
    overrides = ["max_steps=70", "learning_rate=5e-3", "batch_size=3", "warmup_steps=5", "logging_steps=10",
                 "save_steps=1000", "lr_scheduler_type=constant_with_warmup"]  # fmt: skip
    summary = run_sft(config_for(tiny_model, three, out, *overrides), progress=False)
    assert summary.global_step == 70 and summary.rows == 3
    losses = [row["loss"] for row in read_metrics(out) if "loss" in row]
    assert losses[0] > 5 and losses[-1] < 0.05 * losses[0]
    policy = make_policy(PolicyConfig(spec=f"hf:{out}", device="cpu", concurrency=5))
    try:
        rows = [json.loads(line) for line in three.read_text().splitlines()]
        for row in rows:
            prompt, gold = row["messages"][0], row["messages"][1]["content"]
            turn = policy.act(
                PolicyRequest(messages=[prompt], tools=[], sampling=SamplingParams(max_tokens=160))
            )
            assert turn.text == gold, row["instance_id"]
    finally:
        policy.close()


def test_a_folder_that_is_not_a_model_is_refused_with_the_fix(tmp_path, window_rows):
    (tmp_path / "empty").mkdir()
    with pytest.raises(
        ConfigError, match=r"base_model: .* is not a model folder .*`repogym model init DIR`"
    ):
        preflight(config_for(tmp_path / "empty", window_rows, tmp_path / "o"))
    (tmp_path / "empty" / "config.json").write_text(json.dumps({"model_type": "llama"}))
    with pytest.raises(ConfigError, match="has a config but no weights"):
        preflight(config_for(tmp_path / "empty", window_rows, tmp_path / "o"))


def _copy_with_template(tiny_model: Path, folder: Path, template: str | None) -> Path:
    shutil.copytree(tiny_model, folder)
    (folder / "chat_template.jinja").unlink(missing_ok=True)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config.pop("chat_template", None)
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    if template is not None:
        (folder / "chat_template.jinja").write_text(template)
    return folder


def test_a_tokenizer_without_a_chat_template_is_refused_with_the_fix(tmp_path, tiny_model, window_rows):
    folder = _copy_with_template(tiny_model, tmp_path / "m", None)
    with pytest.raises(
        ConfigError, match=r"base_model: the tokenizer .* has no chat template.*chat_template=PATH"
    ):
        preflight(config_for(folder, window_rows, tmp_path / "o"))


def test_a_template_without_generation_markers_is_refused_for_assistant_only_loss(
    tmp_path, tiny_model, window_rows
):
    plain = "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
    folder = _copy_with_template(tiny_model, tmp_path / "m", plain)
    with pytest.raises(
        ConfigError, match=r"assistant_only_loss: .*\{% generation %\}.*chat_template=that.jinja"
    ):
        preflight(config_for(folder, window_rows, tmp_path / "o"))
    preflight(config_for(folder, window_rows, tmp_path / "o", "assistant_only_loss=false"))  # the other fix


def test_qwen25s_own_template_works_unchanged_through_trls_training_version(
    tmp_path, tiny_model, window_rows
):
    """A real model's template (Qwen2.5's, as TRL ships it) trains with the assistant-only mask."""
    import trl

    qwen = (Path(trl.__file__).parent / "chat_templates" / "qwen2_5.jinja").read_text()
    folder = _copy_with_template(tiny_model, tmp_path / "qwen-template", qwen)
    config = config_for(folder, window_rows, tmp_path / "o", "max_steps=1")
    prepared = preflight(config)
    example = build_trainer(config, prepared, progress=False).train_dataset[0]
    trained = [
        token for token, label in zip(example["input_ids"], example["labels"], strict=True) if label != -100
    ]
    answer = json.loads(window_rows.read_text().splitlines()[0])["messages"][1]["content"]
    # Qwen2.5's training template puts the newlines around the turn inside the span too; nothing of the prompt is.
    assert prepared.tokenizer.decode(trained).strip() == answer + "<|im_end|>"


def test_data_with_no_usable_rows_and_bad_keys_are_refused_before_training(tmp_path, tiny_model):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"messages": [{"role": "user", "content": "q"}]}) + "\n")
    with pytest.raises(ConfigError, match=r"data: no usable rows .*1 no assistant turn.*repogym data sft"):
        preflight(config_for(tiny_model, rows, tmp_path / "o"))
    with pytest.raises(ConfigError, match=r"max_step: unknown key; did you mean 'max_steps'"):
        config_for(tiny_model, rows, tmp_path / "o", "max_step=3")
    with pytest.raises(ConfigError, match=r"trl.max_seq_length: not a trl.SFTConfig argument"):
        preflight(config_for(tiny_model, rows, tmp_path / "o", "trl.max_seq_length=3"))
    with pytest.raises(
        ConfigError, match=r"trl.learning_rate: set it with the top-level key 'learning_rate'"
    ):
        preflight(config_for(tiny_model, rows, tmp_path / "o", "trl.learning_rate=3"))


@pytest.mark.slow
def test_lora_with_packing_saves_a_merged_model_that_loads_as_a_plain_one(tmp_path, tiny_model, window_rows):
    import torch
    from transformers import AutoModelForCausalLM

    out = tmp_path / "lora"
    overrides = [
        "max_steps=3",
        "learning_rate=1e-2",
        "packing=true",
        "max_length=512",
        "lora.r=4",
        "save_steps=3",
    ]
    summary = run_sft(config_for(tiny_model, window_rows, out, *overrides), progress=False)
    assert summary.global_step == 3 and (out / "adapter" / "adapter_config.json").is_file()
    merged = AutoModelForCausalLM.from_pretrained(out)
    base = AutoModelForCausalLM.from_pretrained(tiny_model)
    assert not any("lora" in name for name, _ in merged.named_parameters())
    name = "model.layers.0.self_attn.q_proj.weight"
    assert not torch.equal(merged.state_dict()[name], base.state_dict()[name])  # the adapter was merged in


def test_rows_longer_than_max_length_are_refused_naming_max_length_not_a_torch_error(tmp_path, tiny_model):
    """Was a traceback at 385871c: TRL dropped every row whose answer truncation cut away (whole trajectories from
    `repogym data sft` without `--context window`) and torch died with `num_samples=0`."""
    long_prompt = "fix this:\n" + "x = 1\n" * 400
    rows = tmp_path / "rows.jsonl"
    row = {"messages": [{"role": "user", "content": long_prompt}, {"role": "assistant", "content": "ok"}]}
    rows.write_text(json.dumps(row) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(ConfigError, match=r"max_length: every row \(2\) was dropped.*fix: set max_length=\d{4}"):
        run_sft(config_for(tiny_model, rows, tmp_path / "o", "max_length=256", "max_steps=1"), progress=False)
    assert not list((tmp_path / "o").glob("checkpoint-*"))


def test_a_run_that_keeps_some_rows_counts_the_ones_max_length_dropped(tmp_path, tiny_model, window_rows):
    from repogym.train.sft import NO_ANSWER_WITHIN_MAX_LENGTH

    rows = tmp_path / "rows.jsonl"
    long_row = {"messages": [{"role": "user", "content": "y = 2\n" * 400}, {"role": "assistant", "content": "ok"}]}
    rows.write_text(window_rows.read_text().splitlines(keepends=True)[0] + json.dumps(long_row) + "\n")
    summary = run_sft(config_for(tiny_model, rows, tmp_path / "o", "max_length=256", "max_steps=1"), progress=False)
    assert summary.rows == 2 and summary.dropped == {NO_ANSWER_WITHIN_MAX_LENGTH: 1}
