"""Supervised fine-tuning on chat rows with TRL's SFTTrainer: `repogym train sft CONFIG [key=value ...]`.

What repogym adds around TRL (and nothing else: the loss, masking, packing and LoRA are TRL's
and peft's):

- `preflight` checks, before any training starts, everything that would otherwise fail minutes
  in or silently: a base_model that is not a causal-LM folder, a tokenizer without a chat
  template, `assistant_only_loss` with a template that has no `{% generation %}` markers and that
  TRL cannot patch (Qwen2.5, Llama 3, ... it can), no usable rows in `data`, unknown `trl` keys.
  Each is a ConfigError naming the key and the fix.
- Checkpoints every `save_steps` (weights, optimizer, scheduler, RNG, trainer state). `resume`
  continues from the newest *complete* one (trainer_state.json is written last; a checkpoint cut
  by a SIGKILL lacks it and is set aside), at the same global step, so a kill loses at most the
  steps since the last checkpoint. Without `resume`, an output_dir holding checkpoints is refused.
- Logging: `<output_dir>/metrics.jsonl` (repogym.train.metrics), TensorBoard always, W&B when it is
  installed and configured (report_to: auto), a rich progress bar.
- The end: the final model (LoRA merged, unless `lora.merge` is false) and tokenizer in output_dir
  itself, so `--policy hf:OUTPUT_DIR`, `repogym serve OUTPUT_DIR` and `train rl base_model=OUTPUT_DIR`
  load it; `repogym_sft.json` records the configuration and the run's figures.

The processing class (tokenizer) is always passed to TRL: never let a trainer guess it (see
DESIGN.md's pitfall with qwen2 folders).
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib.util
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repogym.agent.backends.tokenizer import load_tokenizer
from repogym.errors import ConfigError
from repogym.files import write_json
from repogym.train.chat_rows import LoadedRows, read_chat_rows
from repogym.train.checkpoints import resume_point
from repogym.train.metrics import metrics_callback
from repogym.train.model import check_model_folder
from repogym.train.progress import use_rich_progress
from repogym.train.sft_config import SFTRunConfig

SUMMARY_FILE = "repogym_sft.json"
#: Top-level keys that the `trl:` pass-through may not set (they have their own key here).
OWN_KEYS = {
    "output_dir": "output_dir", "max_steps": "max_steps", "learning_rate": "learning_rate",
    "per_device_train_batch_size": "batch_size", "max_length": "max_length", "packing": "packing",
    "assistant_only_loss": "assistant_only_loss", "save_steps": "save_steps", "seed": "seed",
    "report_to": "report_to", "logging_steps": "logging_steps", "bf16": "bf16", "use_cpu": "device",
}  # fmt: skip


@dataclass
class Prepared:
    """What preflight found: the model folder, the tokenizer (template set), and the rows."""

    model_dir: Path
    tokenizer: Any
    data: LoadedRows


@dataclass(frozen=True)
class SFTSummary:
    output_dir: str
    global_step: int
    resumed_from: str | None
    rows: int
    dropped: dict[str, int]
    truncated_rows: int
    final_loss: float | None
    train_runtime_s: float
    world_size: int = 1
    """Processes that trained (2 under `accelerate launch --num_processes 2`)."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# -- preflight ------------------------------------------------------------------------------------


def preflight(config: SFTRunConfig) -> Prepared:
    """Check the model folder, the tokenizer's chat template and the data; ConfigError on the first problem."""
    check_trl_keys(config.trl)
    if config.lora is not None and importlib.util.find_spec("peft") is None:
        raise ConfigError("lora: needs peft (pip install 'repogym[train]'), or remove the lora key")
    model_dir, tokenizer = chat_model(config.base_model, chat_template=config.chat_template)
    if config.assistant_only_loss:
        check_generation_markers(tokenizer, model_dir)
    data = read_chat_rows(config.data_files)
    if not data.rows:
        reasons = (
            ", ".join(f"{count} {reason}" for reason, count in data.dropped.most_common())
            or "the files are empty"
        )
        raise ConfigError(
            f"data: no usable rows in {', '.join(config.data_files)} ({data.total} row(s): {reasons}); "
            "fix: build the file with `repogym data sft ROLLOUT_DIR_OR_TASKS... --out FILE`"
        )
    return Prepared(model_dir, tokenizer, data)


def chat_model(
    path: str,
    key: str = "base_model",
    chat_template: str | None = None,
    fix: str = "set chat_template=PATH.jinja (the model family's template), or use the instruct model's tokenizer",
) -> tuple[Path, Any]:
    """A causal-LM folder and its tokenizer, which must have a chat template (`chat_template`, a .jinja file,
    replaces the folder's); a ConfigError naming `key` and the `fix` otherwise."""
    model_dir = check_model_folder(path, key)
    try:
        tokenizer = load_tokenizer(model_dir)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{key}: cannot load the tokenizer in {model_dir}: {exc}") from None
    if chat_template:
        template = Path(chat_template)
        if not template.is_file():
            raise ConfigError(f"chat_template: {template} is not a file (give a .jinja chat template)")
        tokenizer.chat_template = template.read_text(encoding="utf-8")
    if not tokenizer.chat_template:
        raise ConfigError(
            f"{key}: the tokenizer in {model_dir} has no chat template, so chat rows cannot be rendered; fix: {fix}"
        )
    return model_dir, tokenizer


def check_generation_markers(tokenizer: Any, model_dir: Path) -> None:
    """ConfigError when the template has no {% generation %} markers and TRL has no training version of it."""
    from trl.chat_template_utils import get_training_chat_template, has_generation_markers

    if has_generation_markers(tokenizer.chat_template):
        return
    try:
        get_training_chat_template(tokenizer)
    except ValueError:
        raise ConfigError(
            f"assistant_only_loss: the chat template of {model_dir} has no {{% generation %}} markers and TRL knows "
            "no training version of it, so the loss cannot be limited to assistant turns; fix: copy the template to "
            "a .jinja file, wrap each assistant turn's text (and its end-of-turn token) in "
            "{% generation %}...{% endgeneration %}, and set chat_template=that.jinja; or set "
            "assistant_only_loss=false to train on whole conversations"
        ) from None


def check_trl_keys(extra: dict[str, Any]) -> None:
    from trl import SFTConfig

    known = {field.name for field in dataclasses.fields(SFTConfig)}
    for key in extra:
        if key in OWN_KEYS:
            raise ConfigError(f"trl.{key}: set it with the top-level key {OWN_KEYS[key]!r} instead")
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ConfigError(f"trl.{key}: not a trl.SFTConfig argument{hint}")


# -- the trainer ----------------------------------------------------------------------------------


def report_targets(report_to: str | list[str]) -> list[str]:
    """TensorBoard always; wandb with 'auto' when it is installed and has a key or an offline mode."""
    targets = ["tensorboard"] if report_to == "auto" else list(dict.fromkeys(["tensorboard", *report_to]))
    if report_to == "auto" and importlib.util.find_spec("wandb") is not None and wandb_configured():
        targets.append("wandb")
    return targets


def wandb_configured() -> bool:
    if os.environ.get("WANDB_API_KEY") or os.environ.get("WANDB_MODE") in ("offline", "online"):
        return True
    netrc = Path.home() / ".netrc"
    return netrc.is_file() and "api.wandb.ai" in netrc.read_text(errors="replace")


def sft_arguments(config: SFTRunConfig) -> Any:
    """The trl.SFTConfig of a run (CPU/GPU and precision decided here)."""
    import torch
    from trl import SFTConfig

    on_cpu = config.device == "cpu" or not torch.cuda.is_available()
    bf16 = config.bf16 if config.bf16 is not None else (not on_cpu and torch.cuda.is_bf16_supported())
    if bf16 and on_cpu:
        raise ConfigError(
            "bf16: true needs a CUDA GPU with bfloat16; set bf16=false (or leave it unset) on CPU"
        )
    # transformers 5.2x renamed gradient_checkpointing to activation_checkpointing (the old name stays as a
    # deprecated alias until v6); earlier 5.x releases, which the train extra allows, know only the old name.
    known = {field.name for field in dataclasses.fields(SFTConfig)}
    checkpointing = (
        "activation_checkpointing" if "activation_checkpointing" in known else "gradient_checkpointing"
    )
    return SFTConfig(
        output_dir=config.output_dir,
        max_steps=config.max_steps,
        learning_rate=config.learning_rate,
        lr_scheduler_type=config.lr_scheduler_type,
        warmup_steps=config.warmup_steps,
        weight_decay=config.weight_decay,
        per_device_train_batch_size=config.batch_size,
        gradient_accumulation_steps=config.gradient_accumulation_steps,
        max_length=config.max_length,
        assistant_only_loss=config.assistant_only_loss,
        packing=config.packing,
        save_strategy="steps",
        save_steps=config.save_steps,
        save_total_limit=config.save_total_limit,
        logging_steps=config.logging_steps,
        logging_first_step=True,
        seed=config.seed,
        report_to=report_targets(config.report_to),
        use_cpu=on_cpu,
        bf16=bf16,
        **{checkpointing: config.gradient_checkpointing},
        dataloader_num_workers=config.dataloader_num_workers,
        disable_tqdm=True,
        ddp_find_unused_parameters=False,  # every parameter of a causal LM takes part in every step
        **config.trl,
    )


def build_trainer(config: SFTRunConfig, prepared: Prepared, progress: bool = True) -> Any:
    """The SFTTrainer over the prepared rows (tests look at its tokenized dataset and labels)."""
    from datasets import Dataset
    from trl import SFTTrainer

    args = sft_arguments(config)  # before the model: DeepSpeed ZeRO-3 must see it first
    peft_config = None
    if config.lora is not None:
        from peft import LoraConfig

        peft_config = LoraConfig(
            r=config.lora.r, lora_alpha=config.lora.alpha, lora_dropout=config.lora.dropout,
            target_modules=config.lora.target_modules, task_type="CAUSAL_LM",
        )  # fmt: skip
    trainer = SFTTrainer(
        model=str(prepared.model_dir),
        args=args,
        train_dataset=Dataset.from_list(prepared.data.rows),
        processing_class=prepared.tokenizer,
        peft_config=peft_config,
        callbacks=[metrics_callback()],
    )

    use_rich_progress(trainer, "sft", show=progress)
    return trainer


# -- the run --------------------------------------------------------------------------------------


def run_sft(config: SFTRunConfig, resume: bool = False, progress: bool = True) -> SFTSummary:
    """Preflight, train to max_steps (from the last complete checkpoint with `resume`), save the final model."""
    prepared = preflight(config)
    quiet_library_bars()
    output_dir = Path(config.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    start_from = resume_point(output_dir, resume)
    trainer = build_trainer(config, prepared, progress=progress)
    dropped = {**prepared.data.dropped, **check_rows_survived(config, prepared, len(trainer.train_dataset))}
    truncated = (
        sum(len(ids) >= config.max_length for ids in trainer.train_dataset["input_ids"])
        if not config.packing
        else 0
    )
    started = time.monotonic()
    result = trainer.train(resume_from_checkpoint=str(start_from) if start_from else None)
    runtime = time.monotonic() - started
    save_final_model(trainer, config, output_dir)
    losses = [row["loss"] for row in trainer.state.log_history if "loss" in row]
    summary = SFTSummary(
        output_dir=str(output_dir),
        global_step=trainer.state.global_step,
        resumed_from=start_from.name if start_from else None,
        rows=len(prepared.data.rows),
        dropped=dropped,
        truncated_rows=int(truncated),
        final_loss=float(losses[-1]) if losses else None,
        train_runtime_s=round(runtime, 3),
        world_size=trainer.args.world_size,
    )
    if trainer.is_world_process_zero():
        write_json(
            output_dir / SUMMARY_FILE,
            {"config": config.model_dump(mode="json"), "summary": summary.to_dict(), "train": result.metrics},
        )
    return summary


#: The `dropped` reason of rows TRL removes after truncation left none of their answer to learn from.
NO_ANSWER_WITHIN_MAX_LENGTH = "answer beyond max_length"


def check_rows_survived(config: SFTRunConfig, prepared: Prepared, kept: int) -> dict[str, int]:
    """{reason: count} of the rows the trainer dropped while preparing its dataset; ConfigError when it dropped all.

    TRL truncates each row to `max_length` and then drops the rows whose assistant answer was cut away entirely
    (a whole agent trajectory, an issue text with whole files): with nothing left, torch would die later with
    `num_samples=0`, naming neither the rows nor the setting.
    """
    lost = len(prepared.data.rows) - kept
    if lost <= 0 or config.packing:
        return {}
    if kept == 0:
        longest = max(_rendered_tokens(prepared, row) for row in prepared.data.rows[:1000])
        raise ConfigError(
            f"max_length: every row ({lost}) was dropped: its assistant answer starts after token {config.max_length} "
            f"once rendered (the longest of the first 1,000 rows is {longest} tokens); fix: set max_length={longest} "
            "or more, or build shorter rows (`repogym data sft ... --context window`, or agentless rows instead of "
            "whole trajectories)"
        )
    return {NO_ANSWER_WITHIN_MAX_LENGTH: lost}


def _rendered_tokens(prepared: Prepared, row: dict[str, Any]) -> int:
    ids = prepared.tokenizer.apply_chat_template(row["messages"], tokenize=True)
    return len(ids["input_ids"] if hasattr(ids, "keys") else ids)  # a BatchEncoding in transformers 5


def quiet_library_bars() -> None:
    """datasets' and transformers' own tqdm bars would interleave with repogym's rich one."""
    import datasets
    import transformers

    datasets.disable_progress_bars()
    transformers.utils.logging.disable_progress_bar()


def save_final_model(trainer: Any, config: SFTRunConfig, output_dir: Path) -> None:
    """The loadable result in output_dir: full weights (LoRA merged) and the tokenizer."""
    if config.lora is None:
        trainer.save_model(str(output_dir))
        return
    trainer.save_model(str(output_dir / "adapter"))
    if config.lora.merge and trainer.is_world_process_zero():
        merged = trainer.model.merge_and_unload()
        merged.save_pretrained(output_dir)
        trainer.processing_class.save_pretrained(output_dir)
