"""`repogym train verifier ROLLOUT_DIRS... --base-model M --out DIR`: a verifier fine-tuned on graded attempts.

Graded attempts -> a split by task -> the training side balanced -> one chat row per attempt (system and user
prompt, then the answer YES or NO) -> TRL's SFTTrainer with the loss on the answer alone (prompt-completion
rows: `completion_only_loss`, which needs no `{% generation %}` markers, so any chat model's folder trains as
it is) -> the model, its tokenizer and chat template in DIR, with `repogym_verifier.json` beside them.

Where it departs from SWE-Gym's verifier recipe: the rows are balanced by downsampling the majority rather
than kept as drawn (SWE-Gym found its extra negatives made the verifier too conservative); the split is by
task, so the held-out figures of `repogym verify` never score a task the verifier was trained on.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repogym.config import validate_config
from repogym.errors import ConfigError
from repogym.files import write_json, write_jsonl
from repogym.train.chat_rows import LoadedRows
from repogym.train.checkpoints import resume_point
from repogym.train.sft import Prepared, build_trainer, chat_model, quiet_library_bars, save_final_model
from repogym.train.sft_config import LoraSettings, SFTRunConfig
from repogym.verifier.data import (
    Attempt,
    TaskSplit,
    answer_messages,
    answer_token_ids,
    balance,
    check_both_labels,
    draw_split,
    label_counts,
    prompt_messages,
    read_attempts,
    read_split,
)

MANIFEST_FILE = "repogym_verifier.json"
MANIFEST_KIND = "repogym.verifier"
ROWS_FILE = "train_rows.jsonl"


@dataclass(frozen=True)
class VerifierTrainConfig:
    """One `repogym train verifier` run."""

    rollout_dirs: tuple[str, ...]
    """Rollout or eval folders whose graded attempts are the data."""
    base_model: str
    """A local causal-LM folder with a chat template (repogym's tiny model or any instruct model)."""
    out: str
    """The verifier folder: model, tokenizer, chat template and the manifest."""
    heldout_share: float = 0.25
    """Share of the tasks kept out of training (a drawn split); ignored when `split_file` is given."""
    split_file: str | None = None
    """A JSON file with `train` and `heldout` lists of instance ids, instead of a drawn split."""
    seed: int = 0
    """Seeds the split, the balance and training."""
    include_trajectory: bool = False
    """Show the attempt's turns in the prompt too, not only its final diff."""
    max_steps: int = 100
    learning_rate: float = 2e-5
    """2e-5 suits full fine-tuning of a real model; the tiny model from scratch wants ~1e-3."""
    batch_size: int = 4
    max_length: int = 2048
    """Tokens of prompt and answer; a longer prompt is cut (its longest section first)."""
    lora_rank: int | None = None
    """Train LoRA adapters of this rank (merged into the saved model) instead of every weight."""
    device: str = "auto"
    """'cpu' forces CPU training even when a GPU is present."""


def train_verifier(config: VerifierTrainConfig, progress: bool = True) -> dict[str, Any]:
    """Read, split, balance, train and save; returns the manifest written to OUT/repogym_verifier.json."""
    out = Path(config.out)
    if (out / MANIFEST_FILE).exists():
        raise ConfigError(f"--out {out}: already holds a verifier ({MANIFEST_FILE}); give a new folder")
    model_dir, tokenizer = chat_model(
        config.base_model, key="--base-model", fix="give an instruct model's folder"
    )
    yes_id, no_id = answer_token_ids(tokenizer)
    attempts = read_attempts(config.rollout_dirs, config.include_trajectory)
    check_both_labels(attempts, ", ".join(config.rollout_dirs))
    split = read_split(config.split_file) if config.split_file else draw_split(
        (a.instance_id for a in attempts), config.heldout_share, config.seed)  # fmt: skip
    training = [attempt for attempt in attempts if attempt.instance_id in set(split.train)]
    check_both_labels(training, f"the training side of the split ({len(set(split.train))} task(s))")
    rows = [_row(attempt, tokenizer, config.max_length) for attempt in balance(training, config.seed)]
    out.mkdir(parents=True, exist_ok=True)
    resume_point(out, resume=False)  # refuses a folder holding another run's checkpoints
    write_jsonl(out / ROWS_FILE, rows)
    sft_config = sft_config_of(config, out)
    trainer = build_verifier_trainer(sft_config, model_dir, tokenizer, rows, progress)
    trainer.train()
    save_final_model(trainer, sft_config, out)
    tokenizer.save_pretrained(out)  # the chat template travels with the verifier, whatever the trainer saved
    for checkpoint in out.glob("checkpoint-*"):
        shutil.rmtree(checkpoint)  # optimizer state: the verifier is the final model, and no run resumes
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    manifest = _manifest(config, attempts, split, rows, (yes_id, no_id), losses, trainer.state.global_step)
    write_json(out / MANIFEST_FILE, manifest)
    return manifest


def build_verifier_trainer(
    sft_config: SFTRunConfig,
    model_dir: Path,
    tokenizer: Any,
    rows: list[dict[str, Any]],
    progress: bool = True,
) -> Any:
    """TRL's SFTTrainer over prompt-completion rows (its `completion_only_loss` leaves the prompt out of the
    loss); tests read its tokenized rows and labels."""
    quiet_library_bars()
    return build_trainer(sft_config, Prepared(model_dir, tokenizer, LoadedRows(rows=rows)), progress=progress)


def _row(attempt: Attempt, tokenizer: Any, max_length: int) -> dict[str, Any]:
    return {"prompt": prompt_messages(attempt, tokenizer, max_length), "completion": answer_messages(attempt)}


def sft_config_of(config: VerifierTrainConfig, out: Path) -> SFTRunConfig:
    """The SFT settings of the run, checked by SFTRunConfig (a bad learning rate names its field)."""
    values = {
        "base_model": config.base_model, "data": str(out / ROWS_FILE), "output_dir": str(out),
        "max_steps": config.max_steps, "learning_rate": config.learning_rate, "batch_size": config.batch_size,
        "max_length": config.max_length, "assistant_only_loss": False, "save_steps": config.max_steps,
        "logging_steps": max(1, config.max_steps // 20), "seed": config.seed, "device": config.device,
        "lora": None if config.lora_rank is None else LoraSettings(r=config.lora_rank, alpha=2 * config.lora_rank),
        "trl": {"completion_only_loss": True},
    }  # fmt: skip
    return validate_config(values, SFTRunConfig, source="train verifier")  # type: ignore[return-value]


def _manifest(
    config: VerifierTrainConfig, attempts: list[Attempt], split: TaskSplit, rows: list[dict[str, Any]],
    answer_ids: tuple[int, int], losses: list[float], steps: int,
) -> dict[str, Any]:  # fmt: skip
    held = [attempt for attempt in attempts if attempt.instance_id in set(split.heldout)]
    unsplit = sorted({a.instance_id for a in attempts} - set(split.train) - set(split.heldout))
    trained = [row["completion"][0]["content"] for row in rows]
    return {
        "kind": MANIFEST_KIND, "schema_version": 1, "base_model": config.base_model,
        "rollout_dirs": list(config.rollout_dirs),
        "rows": {"train": len(rows), "graded_attempts": len(attempts), "heldout_attempts": len(held)},
        "balance": {
            "before": label_counts([a for a in attempts if a.instance_id in set(split.train)]),
            "after": {"resolved": trained.count("YES"), "unresolved": trained.count("NO")},
            "method": "majority downsampled, seeded",
        },
        "split": {**split.to_dict(), "source": config.split_file or "drawn", "heldout_share": config.heldout_share,
                  "tasks_in_neither": unsplit},
        "prompt": {"include_trajectory": config.include_trajectory, "max_length": config.max_length,
                   "answers": ["YES", "NO"], "answer_token_ids": list(answer_ids)},
        "training": {"max_steps": config.max_steps, "steps": steps, "learning_rate": config.learning_rate,
                     "batch_size": config.batch_size, "lora_rank": config.lora_rank, "seed": config.seed,
                     "final_loss": losses[-1] if losses else None, "loss": "answer token(s) only"},
    }  # fmt: skip
