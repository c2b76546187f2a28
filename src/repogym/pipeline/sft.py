"""The SFT stages: chat rows (`repogym data sft`) and supervised fine-tuning on them (`repogym train sft`).

- `sft_data_stage`: rows from task files (gold demonstrations: SWE-RL answers in the env's context, or the
  `scripted:gold` policy's tool calls), rollout folders (the resolved attempts: rejection sampling) and chat
  files, deduplicated -> the input's `rows_file` (+ `.summary.json`); the record is FOLDER/sft_data.json;
- `sft_stage`: TRL's SFTTrainer with an assistant-only loss -> the config's output_dir, a folder that loads
  as `hf:PATH` and as the next stage's base model; the record is output_dir/stage.json.

Guarantees: no rows is a PipelineError with the input's own message (which says what to change), never an
empty training run; a `resume` SFT killed midway continues at its last complete checkpoint, a fresh one
starts over in an emptied folder. Not guaranteed: that rows longer than max_length are learned whole
(`repogym.train.sft` counts the truncated ones).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from repogym.pipeline.record import StageResult
from repogym.pipeline.runner import Hooks, PipelineError
from repogym.train.sft import run_sft
from repogym.train.sft_config import SFTRunConfig
from repogym.train.sft_data import SFTDataOptions, build_sft_data, write_sft_data


@dataclass(frozen=True)
class SFTDataInput:
    sources: tuple[Path, ...]
    """Task files, rollout folders or chat-row files, read in this order (the first copy of a row is kept)."""
    options: SFTDataOptions
    rows_file: Path
    empty_message: str
    """The error when no row could be built: what is empty and what to change."""

    @property
    def folder(self) -> Path:
        return self.rows_file.parent


@dataclass(frozen=True)
class SFTDataResult(StageResult):
    RECORD: ClassVar[str] = "sft_data.json"
    rows: int
    resolved: int
    """Rows from resolved rollout attempts."""
    gold: int
    """Rows from the gold demonstrations (and chat files)."""


def sft_data_stage(given: SFTDataInput, hooks: Hooks) -> SFTDataResult:
    data = build_sft_data(list(given.sources), given.options, given.rows_file)
    if not data.rows:
        raise PipelineError(given.empty_message)
    write_sft_data(data, given.rows_file)
    resolved = sum(report.kept for report in data.reports if report.kind == "rollout")
    return SFTDataResult(rows=len(data.rows), resolved=resolved, gold=len(data.rows) - resolved)


@dataclass(frozen=True)
class SFTInput:
    config: SFTRunConfig
    resume: bool
    """Continue a killed run from its last checkpoint; False empties output_dir first (a fresh run)."""

    @property
    def folder(self) -> Path:
        return Path(self.config.output_dir)


@dataclass(frozen=True)
class SFTResult(StageResult):
    model_dir: str
    steps: int
    final_loss: float | None
    rows: int


def sft_stage(given: SFTInput, hooks: Hooks) -> SFTResult:
    if not given.resume:
        shutil.rmtree(given.folder, ignore_errors=True)  # an SFT killed midway starts over
    summary = run_sft(given.config, resume=given.resume, progress=hooks.trainer_bars)
    return SFTResult(model_dir=summary.output_dir, steps=summary.global_step, final_loss=summary.final_loss,
                     rows=summary.rows)  # fmt: skip
