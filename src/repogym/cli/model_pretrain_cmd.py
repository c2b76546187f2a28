"""`repogym model pretrain DIR --budget MINUTES`: causal-LM pretraining on local Python source, cached and resumable."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from repogym.cli.common import add_command, console, print_json, subgroup
from repogym.cli.options import Json, ModelDir, Seed
from repogym.train.pretrain import PretrainConfig, pretrain


def register(app: typer.Typer) -> None:
    add_command(subgroup(app, "model"), "pretrain", pretrain_command)


def pretrain_command(
    model_dir: ModelDir,
    budget: Annotated[float, typer.Option("--budget", help="Training time in minutes.")],
    corpus: Annotated[list[Path] | None, typer.Option("--corpus", help="Python files/folders to pretrain on (repeatable; default: stdlib + site-packages).")] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write the pretrained model here (default: replace DIR's weights).")] = None,
    seed: Seed = 0,
    seq_len: Annotated[int, typer.Option("--seq-len", help="Tokens per training block.")] = 256,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Blocks per step.")] = 16,
    learning_rate: Annotated[float, typer.Option("--learning-rate", help="Peak learning rate (cosine schedule).")] = 1e-3,
    max_chars: Annotated[int, typer.Option("--max-chars", help="Corpus characters read (a fixed sample beyond).")] = 24_000_000,
    save_steps: Annotated[int | None, typer.Option("--save-steps", help="Checkpoint interval (default: ~5% of the steps).")] = None,
    json_out: Json = False,
) -> None:  # fmt: skip
    """Pretrain a small model on local Python source (causal LM), cached by its inputs, resumable after a kill.

    A second call with the same inputs returns at once (the cache is under $REPOGYM_CACHE/pretrain);
    a killed call started again continues from its last checkpoint.

    Example: repogym model pretrain checkpoints/tiny --corpus ~/src/our-repo --corpus /usr/lib/python3.11 --budget 10
    """
    config = PretrainConfig(
        model_dir=str(model_dir), budget_minutes=budget, corpus=tuple(str(p) for p in corpus or ()),
        out_dir=str(out) if out else None, seed=seed, seq_len=seq_len, batch_size=batch_size,
        learning_rate=learning_rate, max_chars=max_chars, save_steps=save_steps,
    )  # fmt: skip
    result = pretrain(config)
    if json_out:
        print_json(result.to_dict())
        return
    table = Table(title="model pretrain", show_header=False)
    rows = [
        ("model", result.out_dir),
        ("from the cache", "yes (same inputs ran before)" if result.cached else "no"),
        ("steps", str(result.steps)),
        ("tokens", f"{result.tokens:,}"),
        ("training time", f"{result.train_s:.0f} s"),
        ("tokens/s", f"{result.tokens / result.train_s:,.0f}" if result.train_s else "-"),
        ("last logged loss", "-" if result.final_loss is None else f"{result.final_loss:.3f}"),
        (
            "corpus",
            f"{result.corpus['files']} files, {result.corpus['chars']:,} chars, digest {str(result.corpus['digest'])[:12]}",
        ),
    ]
    for key, value in rows:
        table.add_row(key, value)
    console.print(table)
