"""Causal-LM pretraining of a small model on local Python source: `repogym model pretrain DIR --budget MINUTES`.

The seed's first stage: before SFT, the tiny model learns to read and copy code. It uses
transformers' `Trainer` (plain next-token prediction on fixed-length blocks of the tokenized
corpus, files joined by the end-of-text token); TRL adds nothing for this.

- Budget: `budget_minutes` of *training* time (tokenizing the corpus and a three-step speed
  calibration are not counted). The calibration fixes `max_steps` so the cosine schedule ends
  with the budget; a time check stops training if the machine turns out slower.
- Cache: the run lives under `$REPOGYM_CACHE/pretrain/<key>`, the key hashing the corpus digest,
  the model's config, tokenizer and starting weights, the budget, the seed and the training
  shape. A second call with the same inputs copies the finished model at once; DIR pretrained in
  place by the same call is recognised from its `repogym_pretrain.json` and left as it is.
- Resumable: checkpoints every `save_steps`; a killed run started again with the same command
  continues from its newest complete checkpoint (repogym.train.checkpoints), with its elapsed
  budget carried in the checkpoint.
- Progress: a rich bar with steps, tokens/s, loss and ETA; metrics.jsonl and TensorBoard under
  the run folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from filelock import FileLock

from repogym.agent.backends.tokenizer import load_tokenizer
from repogym.errors import ConfigError
from repogym.files import METRICS_FILE, write_json
from repogym.sandbox.cache import cache_dir
from repogym.train.budget import calibrate_step_s, time_budget_callback
from repogym.train.checkpoints import resume_point
from repogym.train.corpus import Corpus, load_corpus
from repogym.train.metrics import metrics_callback
from repogym.train.model import MODEL_RECORD, check_model_folder, has_weights
from repogym.train.progress import use_rich_progress
from repogym.train.sft import quiet_library_bars

PRETRAIN_RECORD = "repogym_pretrain.json"
MODEL_FILES = ("config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
               "special_tokens_map.json", "chat_template.jinja", MODEL_RECORD)  # fmt: skip
CACHE_VERSION = 1


@dataclass(frozen=True)
class PretrainConfig:
    """One `model pretrain` call."""

    model_dir: str
    budget_minutes: float
    corpus: tuple[str, ...] = ()
    """Files or folders of Python source (empty: the standard library and site-packages)."""
    out_dir: str | None = None
    """Where the pretrained model goes (None: replace the weights in model_dir)."""
    seed: int = 0
    seq_len: int = 256
    batch_size: int = 16
    learning_rate: float = 1e-3
    max_chars: int = 24_000_000
    """Corpus characters read (a deterministic sample of the files when there is more)."""
    save_steps: int | None = None
    """Checkpoint interval (None: about every 5% of the planned steps)."""
    logging_steps: int = 10


@dataclass(frozen=True)
class PretrainResult:
    out_dir: str
    cached: bool
    key: str
    steps: int
    tokens: int
    final_loss: float | None
    train_s: float
    corpus: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def pretrain(config: PretrainConfig, progress: bool = True) -> PretrainResult:
    """Pretrain (or fetch from the cache) and write the model to out_dir; see the module docstring."""
    if config.budget_minutes <= 0:
        raise ConfigError(f"--budget {config.budget_minutes}: give the training time in minutes (> 0)")
    model_dir = Path(config.model_dir).expanduser().resolve()
    if not (model_dir / "config.json").is_file() or not has_weights(model_dir):
        check_model_folder(model_dir, "DIR")  # raises the error that says what is missing
    out_dir = Path(config.out_dir).expanduser().resolve() if config.out_dir else model_dir
    corpus = load_corpus(config.corpus or None, config.max_chars, config.seed)
    start_weights = _starting_weights(model_dir)
    key = cache_key(config, corpus, model_dir, start_weights)
    record = _record(model_dir)
    if out_dir == model_dir and record.get("key") == key:
        return _result(record, out_dir, cached=True)
    root = cache_dir("pretrain", key[:24])
    with FileLock(str(root / ".lock")):
        if not (root / "model" / PRETRAIN_RECORD).is_file():
            check_model_folder(model_dir, "DIR")  # the full check imports transformers: only when training
            _train(config, corpus, model_dir, root, key, start_weights, progress)
            cached = False
        else:
            cached = True
    record = _record(root / "model")
    out_dir.mkdir(parents=True, exist_ok=True)
    # In place, only the weights change: DIR's config and tokenizer are the key's inputs and stay as they are.
    names = ("model.safetensors",) if out_dir == model_dir else MODEL_FILES
    for name in names:
        if (root / "model" / name).is_file():
            shutil.copy2(root / "model" / name, out_dir / name)
    # The curve travels with the model: `repogym report` finds it there.
    if (root / "run" / METRICS_FILE).is_file():
        shutil.copy2(root / "run" / METRICS_FILE, out_dir / METRICS_FILE)
    shutil.copy2(root / "model" / PRETRAIN_RECORD, out_dir / PRETRAIN_RECORD)  # last: marks the copy complete
    return _result(record, out_dir, cached=cached)


def cache_key(config: PretrainConfig, corpus: Corpus, model_dir: Path, start_weights: str) -> str:
    inputs = {
        "version": CACHE_VERSION,
        "corpus": corpus.digest,
        "config": _sha256(model_dir / "config.json"),
        "tokenizer": _sha256(model_dir / "tokenizer.json") if (model_dir / "tokenizer.json").exists() else "",
        "weights": start_weights,
        "budget_minutes": config.budget_minutes,
        "seed": config.seed,
        "shape": [config.seq_len, config.batch_size, config.learning_rate, config.max_chars],
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def _starting_weights(model_dir: Path) -> str:
    """The digest of the weights training starts from (for a folder we pretrained in place: its input weights)."""
    current = _weights_digest(model_dir)
    record = _record(model_dir)
    if record.get("output_weights") == current:
        return str(record["input_weights"])
    return current


def _weights_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.safetensors")) + sorted(folder.glob("pytorch_model*.bin")):
        digest.update(path.name.encode() + b"\0" + _sha256(path).encode())
    return digest.hexdigest()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _record(folder: Path) -> dict[str, Any]:
    try:
        return json.loads((folder / PRETRAIN_RECORD).read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def _result(record: dict[str, Any], out_dir: Path, cached: bool) -> PretrainResult:
    return PretrainResult(
        out_dir=str(out_dir), cached=cached, key=record["key"], steps=record["steps"], tokens=record["tokens"],
        final_loss=record.get("final_loss"), train_s=record["train_s"], corpus=record["corpus"],
    )  # fmt: skip


# -- the training run -----------------------------------------------------------------------------


def token_blocks(corpus: Corpus, tokenizer: Any, seq_len: int) -> Any:
    """The corpus as one int32 array of token ids (files joined by end-of-text), cached per corpus and tokenizer."""

    eos = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    eos = tokenizer.eos_token_id if not isinstance(eos, int) or eos == tokenizer.unk_token_id else eos
    name = f"{corpus.digest[:20]}-{hashlib.sha256(tokenizer.backend_tokenizer.to_str().encode()).hexdigest()[:20]}.npy"
    path = cache_dir("pretrain-data") / name
    if not path.exists():
        ids: list[int] = []
        texts = corpus.texts
        for start in range(0, len(texts), 256):
            for encoded in tokenizer(texts[start : start + 256], add_special_tokens=False)["input_ids"]:
                ids.extend(encoded)
                ids.append(eos)
        tmp = path.with_suffix(".tmp.npy")
        np.save(tmp, np.asarray(ids, dtype=np.int32))
        os.replace(tmp, path)
    tokens = np.load(path, mmap_mode="r")
    if len(tokens) < seq_len + 1:
        raise ConfigError(f"--corpus: only {len(tokens)} tokens, fewer than one block of {seq_len}")
    return tokens


class BlockDataset:
    """Fixed-length blocks of the token array; labels are the inputs (the model shifts them)."""

    def __init__(self, tokens: Any, seq_len: int) -> None:
        self.tokens, self.seq_len = tokens, seq_len

    def __len__(self) -> int:
        return len(self.tokens) // self.seq_len

    def __getitem__(self, index: int) -> dict[str, Any]:
        import torch

        block = torch.from_numpy(
            self.tokens[index * self.seq_len : (index + 1) * self.seq_len].astype("int64")
        )
        return {"input_ids": block, "labels": block.clone()}


def _train(
    config: PretrainConfig,
    corpus: Corpus,
    model_dir: Path,
    root: Path,
    key: str,
    start_weights: str,
    progress: bool,
) -> None:
    import torch
    from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

    quiet_library_bars()
    tokenizer = load_tokenizer(model_dir)
    tokens = token_blocks(corpus, tokenizer, config.seq_len)
    run = root / "run"
    run.mkdir(parents=True, exist_ok=True)
    budget_s = config.budget_minutes * 60
    on_gpu = torch.cuda.is_available()
    bf16 = on_gpu and torch.cuda.is_bf16_supported()  # as SFT and GRPO train on a GPU
    plan = _plan(
        run, budget_s, lambda: calibrate_step_s(model_dir, config.batch_size, config.seq_len, bf16=bf16)
    )
    save_steps = config.save_steps or max(10, plan["max_steps"] // 20)
    args = TrainingArguments(
        output_dir=str(run), max_steps=plan["max_steps"], per_device_train_batch_size=config.batch_size,
        learning_rate=config.learning_rate, lr_scheduler_type="cosine", warmup_steps=0.02, weight_decay=0.1,
        save_strategy="steps", save_steps=save_steps, logging_steps=config.logging_steps, logging_first_step=True,
        seed=config.seed, report_to=["tensorboard"], use_cpu=not on_gpu, bf16=bf16,
        disable_tqdm=True, dataloader_drop_last=True,
    )  # fmt: skip
    start_from = resume_point(run, resume=True)
    budget = time_budget_callback(
        budget_s, tokens_per_step=config.batch_size * config.seq_len, start_from=start_from
    )
    trainer = Trainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32),
        args=args,
        train_dataset=BlockDataset(tokens, config.seq_len),
        processing_class=tokenizer,
        callbacks=[budget, metrics_callback()],
    )

    use_rich_progress(trainer, "pretrain", show=progress)
    started = time.monotonic()
    trainer.train(resume_from_checkpoint=str(start_from) if start_from else None)
    final = root / "model"
    trainer.save_model(str(final))
    if (model_dir / MODEL_RECORD).is_file():
        shutil.copy2(model_dir / MODEL_RECORD, final / MODEL_RECORD)
    losses = [row["loss"] for row in trainer.state.log_history if "loss" in row]
    record = {
        "key": key, "steps": trainer.state.global_step, "planned_steps": plan["max_steps"],
        "tokens": trainer.state.global_step * config.batch_size * config.seq_len,
        "final_loss": float(losses[-1]) if losses else None, "train_s": round(budget.elapsed(), 1),
        "this_call_s": round(time.monotonic() - started, 1), "corpus": corpus.describe(),
        "input_weights": start_weights, "output_weights": _weights_digest(final),
        "config": asdict(config), "resumed_from": start_from.name if start_from else None,
    }  # fmt: skip
    write_json(final / PRETRAIN_RECORD, record)


def _plan(run: Path, budget_s: float, calibrate: Any) -> dict[str, Any]:
    """max_steps for the budget, fixed by the first call's calibration (a resumed run keeps its schedule)."""
    plan_file = run / "plan.json"
    if plan_file.exists():
        return json.loads(plan_file.read_text())
    step_s = calibrate()
    plan = {"max_steps": max(1, int(budget_s / step_s)), "calibrated_step_s": step_s}
    write_json(plan_file, plan)
    return plan
