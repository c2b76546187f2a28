"""`repogym train verifier ROLLOUT_DIRS... --base-model M --out DIR`: a YES/NO verifier of finished attempts."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from repogym.cli.common import add_command, console, print_json, subgroup
from repogym.cli.options import Json, Seed
from repogym.verifier.train import MANIFEST_FILE, VerifierTrainConfig, train_verifier


def register(app: typer.Typer) -> None:
    add_command(subgroup(app, "train"), "verifier", verifier_command)


def verifier_command(
    rollout_dirs: Annotated[list[Path], typer.Argument(metavar="ROLLOUT_DIR", help="Folders of `repogym rollout` or `repogym eval`: their graded attempts are the data.", show_default=False)],
    base_model: Annotated[Path, typer.Option("--base-model", help="A local causal-LM folder with a chat template (`repogym model init`'s or an instruct model's).", show_default=False)],
    out: Annotated[Path, typer.Option("--out", "-o", help="The verifier folder (model, tokenizer, chat template, repogym_verifier.json); must be new.", show_default=False)],
    heldout_share: Annotated[float, typer.Option("--heldout-share", help="Share of the tasks held out of training (split by task).")] = 0.25,
    split: Annotated[Path | None, typer.Option("--split", help="JSON file with `train` and `heldout` lists of instance ids, instead of a drawn split.")] = None,
    seed: Seed = 0,
    include_trajectory: Annotated[bool, typer.Option("--include-trajectory", help="Show the attempt's turns in the prompt too, not only its final diff.")] = False,
    max_steps: Annotated[int, typer.Option("--max-steps", help="Optimizer steps.")] = 100,
    learning_rate: Annotated[float, typer.Option("--learning-rate", help="Peak learning rate (2e-5 for a real model; ~1e-3 for the tiny one).")] = 2e-5,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Rows per device per step.")] = 4,
    max_length: Annotated[int, typer.Option("--max-length", help="Tokens per row; a longer prompt is cut (its longest section first).")] = 2048,
    lora_rank: Annotated[int | None, typer.Option("--lora-rank", help="Train LoRA adapters of this rank (merged at the end) instead of every weight.", show_default=False)] = None,
    device: Annotated[str, typer.Option("--device", help="auto (a GPU when there is one) or cpu.")] = "auto",
    json_out: Json = False,
) -> None:  # fmt: skip
    """Fine-tune a verifier: reads a task's issue and an attempt's final diff, answers YES (resolved) or NO.

    Rows are balanced (the larger side downsampled, seeded) and split by task, so no task is both trained on
    and held out; the loss is on the answer alone (TRL's SFTTrainer, prompt-completion rows). Measure it with
    `repogym verify`, which scores only the tasks it held out.

    Example: repogym train verifier runs/eval-sft runs/rollout-gold --base-model /tmp/tiny --out runs/verifier --learning-rate 1e-3 --max-steps 40
    """
    config = VerifierTrainConfig(
        rollout_dirs=tuple(str(folder) for folder in rollout_dirs), base_model=str(base_model), out=str(out),
        heldout_share=heldout_share, split_file=str(split) if split else None, seed=seed,
        include_trajectory=include_trajectory, max_steps=max_steps, learning_rate=learning_rate,
        batch_size=batch_size, max_length=max_length, lora_rank=lora_rank, device=device,
    )  # fmt: skip
    manifest = train_verifier(config, progress=not json_out)
    if json_out:
        print_json(manifest)
        return
    balance, split_ids, training = manifest["balance"], manifest["split"], manifest["training"]
    table = Table(title="train verifier", show_header=False)
    for key, value in (
        ("verifier (repogym verify --verifier)", str(out)),
        ("rows trained on", f"{manifest['rows']['train']} ({balance['after']['resolved']} YES / "
                            f"{balance['after']['unresolved']} NO)"),
        ("before balancing", f"{balance['before']['resolved']} resolved / {balance['before']['unresolved']} unresolved"),
        ("tasks", f"{len(split_ids['train'])} trained on, {len(split_ids['heldout'])} held out"),
        ("steps", str(training["steps"])),
        ("last logged loss", "-" if training["final_loss"] is None else f"{training['final_loss']:.4f}"),
        ("manifest", str(out / MANIFEST_FILE)),
    ):  # fmt: skip
        table.add_row(key, value)
    console.print(table)
