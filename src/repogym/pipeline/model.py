"""The model stage: `repogym model init` then `repogym model pretrain` -> FOLDER/init, FOLDER/pretrained.

A random tiny Llama with a BPE trained on local Python source, pretrained on the standard library and
site-packages (never on the sample repositories) within a wall-clock budget.

Guarantees: initialisation is deterministic in the seed, so the pretraining cache key repeats and a second
run with the same seed and budget reads the pretrained weights from $REPOGYM_CACHE/pretrain (`cached`).
Not guaranteed: the same number of steps on another machine (the budget is minutes, not steps).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from repogym.pipeline.record import StageResult
from repogym.pipeline.runner import Hooks
from repogym.train.corpus import load_corpus
from repogym.train.model import init_model
from repogym.train.pretrain import PretrainConfig, pretrain

#: Characters of local source the tokenizer is trained on.
TOKENIZER_CHARS = 2_000_000


@dataclass(frozen=True)
class ModelInput:
    folder: Path
    seed: int
    """Seed of the initial weights, the tokenizer's corpus sample and the pretraining."""
    pretrain_minutes: float
    pretrain_chars: int
    """Characters of the pretraining corpus (`PretrainConfig.max_chars`)."""


@dataclass(frozen=True)
class ModelResult(StageResult):
    model_dir: str
    """The pretrained model folder (loads as `hf:PATH`)."""
    cached: bool
    """The weights came from the pretraining cache (an earlier run with the same key)."""
    steps: int
    final_loss: float | None
    train_s: float


def model_stage(given: ModelInput, hooks: Hooks) -> ModelResult:
    start = given.folder / "init"
    corpus = load_corpus(None, TOKENIZER_CHARS, given.seed)
    init_model(start, size="tiny", seed=given.seed, tokenizer_texts=corpus.texts,
               tokenizer_corpus=corpus.describe(), max_positions=2048)  # fmt: skip
    config = PretrainConfig(
        model_dir=str(start), out_dir=str(given.folder / "pretrained"), budget_minutes=given.pretrain_minutes,
        seed=given.seed, max_chars=given.pretrain_chars,
    )  # fmt: skip
    result = pretrain(config, progress=hooks.trainer_bars)
    return ModelResult(model_dir=result.out_dir, cached=result.cached, steps=result.steps,
                       final_loss=result.final_loss, train_s=result.train_s)  # fmt: skip
