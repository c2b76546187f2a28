"""`repogym train sft`'s configuration: one pydantic model, each key documented once, checked early.

The YAML file (examples/sft.yaml) and `key=value` overrides are validated here; an unknown key
gets a "did you mean" and the list of allowed keys. What a value means for the trainer is in
`repogym.train.sft.sft_arguments`; what can only be checked against the model, the tokenizer or
the data (a folder that is not a model, a chat template without `{% generation %}` markers, a
dataset with no usable rows) is checked by `repogym.train.sft.preflight` before training starts.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import Field, field_validator

from repogym.config import ConfigModel, apply_overrides, load_yaml, validate_config


class LoraSettings(ConfigModel):
    """Low-rank adapters (peft) instead of full fine-tuning; merged into the saved model at the end."""

    r: int = Field(default=16, ge=1)
    """Rank of each adapter."""
    alpha: int = Field(default=32, ge=1)
    """Scale of the adapters' update (lora_alpha)."""
    dropout: float = Field(default=0.05, ge=0, lt=1)
    """Dropout on the adapters' input."""
    target_modules: str | list[str] = "all-linear"
    """Which modules get adapters: 'all-linear' or module names such as [q_proj, v_proj]."""
    merge: bool = True
    """Save the merged full model (loads with hf:PATH, serve and train rl); the adapter is kept in adapter/."""


class SFTRunConfig(ConfigModel):
    """One SFT run: which model, which data, where the result goes, how long to train."""

    base_model: str
    """A local Hugging Face causal-LM folder (config.json, weights, tokenizer): `repogym model init`'s, or any other."""
    data: str | list[str]
    """Chat-row JSONL file(s) (`messages`, optional `tools`), as `repogym data sft` writes them."""
    output_dir: str
    """Where checkpoints, metrics.jsonl, TensorBoard logs and the final model go."""
    max_steps: int = Field(default=100, ge=1)
    """Optimizer steps in all; `--resume` continues to this step count."""
    learning_rate: float = Field(default=2e-5, gt=0, lt=1)
    """Peak learning rate (2e-5 suits full fine-tuning of a real model; a tiny model from scratch wants ~1e-3)."""
    lr_scheduler_type: str = "cosine"
    """A transformers scheduler name: cosine, linear, constant, constant_with_warmup, ..."""
    warmup_steps: int | float = Field(default=0, ge=0)
    """Warm-up steps (an int) or a fraction of max_steps (a float below 1)."""
    weight_decay: float = Field(default=0.0, ge=0)
    """AdamW weight decay."""
    batch_size: int = Field(default=4, ge=1)
    """Rows per device per micro-batch (per_device_train_batch_size)."""
    gradient_accumulation_steps: int = Field(default=1, ge=1)
    """Micro-batches per optimizer step; the global batch is batch_size x this x processes."""
    max_length: int = Field(default=2048, ge=16)
    """Tokens per row after the chat template; longer rows are truncated (the summary counts them)."""
    assistant_only_loss: bool = True
    """Train only on assistant turns (needs {% generation %} markers in the chat template, or one TRL can patch)."""
    packing: bool = False
    """Pack several rows into each max_length sequence (TRL's best-fit packing) for throughput."""
    lora: LoraSettings | None = None
    """Set (e.g. `lora: {r: 16}`) to train LoRA adapters instead of every weight."""
    chat_template: str | None = None
    """A .jinja file replacing the tokenizer's chat template (e.g. one with {% generation %} markers)."""
    save_steps: int = Field(default=50, ge=1)
    """Write a checkpoint (weights, optimizer, scheduler, RNG) every this many steps, and at the end."""
    save_total_limit: int | None = Field(default=None, ge=1)
    """Keep only the newest N checkpoints (None keeps all)."""
    logging_steps: int = Field(default=10, ge=1)
    """Log (metrics.jsonl, TensorBoard, W&B) every this many steps."""
    seed: int = 0
    """Seed of initialisation, data order and dropout."""
    report_to: Literal["auto"] | list[str] = "auto"
    """'auto': TensorBoard, plus wandb when it is installed and configured; or an explicit list (TensorBoard is always added)."""
    bf16: bool | None = None
    """bfloat16 mixed precision; None: on when a CUDA GPU supports it."""
    gradient_checkpointing: bool = False
    """Trade compute for memory (worth it for real models on GPUs)."""
    device: Literal["auto", "cpu"] = "auto"
    """'cpu' forces CPU training even when a GPU is present."""
    dataloader_num_workers: int = Field(default=0, ge=0)
    """Data-loading worker processes."""
    trl: dict[str, Any] = Field(default_factory=dict)
    """Extra trl.SFTConfig arguments passed through unchanged (e.g. {neftune_noise_alpha: 5}); checked against SFTConfig."""

    @field_validator("data")
    @classmethod
    def _data_not_empty(cls, value: str | list[str]) -> str | list[str]:
        if not value:
            raise ValueError(
                "give at least one JSONL file of chat rows (repogym data sft ... --out sft.jsonl)"
            )
        return value

    @property
    def data_files(self) -> list[str]:
        return [self.data] if isinstance(self.data, str) else list(self.data)


def load_sft_config(path: str | os.PathLike[str] | None, overrides: Iterable[str] = ()) -> SFTRunConfig:
    """The YAML file (or no file: overrides alone) with `key=value` overrides, validated."""
    data = load_yaml(path) if path is not None else {}
    data = apply_overrides(data, overrides)
    source = str(path) if path is not None else "train sft overrides"
    return validate_config(data, SFTRunConfig, source=source)  # type: ignore[arg-type]
