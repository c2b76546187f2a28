"""`repogym model init DIR` and `repogym model pretrain DIR --corpus PATH... --budget MINUTES`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from repogym.cli.common import add_command, add_group, console, err_console, print_json
from repogym.cli.options import Json, NowFirstArgument, Seed
from repogym.train.corpus import load_corpus
from repogym.train.model import init_model, model_record
from repogym.train.pretrain import PretrainConfig, pretrain

HELP = (
    "Build repogym's own small models: a random-weight model with a locally trained tokenizer, then "
    "pretraining.\n\n"
    "Example: repogym model init checkpoints/tiny && repogym model pretrain checkpoints/tiny --budget 10"
)

ModelDir = Annotated[
    Path,
    typer.Argument(metavar="DIR", help="The model folder (a Hugging Face model folder).", show_default=False),
]


def register(app: typer.Typer) -> None:
    group = add_group(app, "model", HELP)
    add_command(group, "init", init_command, NowFirstArgument(("--tiny",), "DIR [--size tiny|small|base]"))
    add_command(group, "pretrain", pretrain_command)


def init_command(
    model_dir: ModelDir,
    size: Annotated[str, typer.Option("--size", help="tiny (~1.4M parameters), small (~6.9M) or base (~20M).")] = "tiny",
    arch: Annotated[str, typer.Option("--arch", help="llama or qwen2.")] = "llama",
    seed: Seed = 0,
    tokenizer_corpus: Annotated[list[Path] | None, typer.Option("--tokenizer-corpus", help="Python files/folders the BPE is trained on (default: the standard library).")] = None,
    tokenizer_chars: Annotated[int, typer.Option("--tokenizer-chars", help="Characters of source the BPE reads.")] = 4_000_000,
    json_out: Json = False,
) -> None:  # fmt: skip
    """Write a random-weight Llama of the given size and a byte-level BPE trained on local Python source.

    DIR is created (a random-weight model of --size, its tokenizer and config); it loads anywhere a local
    model does (--policy hf:DIR, repogym serve DIR, train sft/rl). `--tiny DIR`, the old spelling, still works.

    Example: repogym model init checkpoints/tiny --size small
    """
    with err_console.status("reading the tokenizer corpus and training the BPE..."):
        corpus = load_corpus(
            [str(p) for p in tokenizer_corpus] if tokenizer_corpus else None, tokenizer_chars
        )
        folder = init_model(
            model_dir,
            size=size,
            arch=arch,
            seed=seed,
            tokenizer_texts=corpus.texts,
            tokenizer_corpus=corpus.describe(),
        )
    record = model_record(folder)
    if json_out:
        print_json(record)
        return
    shape = record["shape"]
    console.print(
        f"{folder}: {record['size']} {record['arch']}, {record['params']:,} parameters "
        f"(hidden {shape['hidden_size']}, {shape['num_hidden_layers']} layers, vocab {shape['vocab_size']}); "
        f"tokenizer trained on {corpus.chars:,} characters of {len(corpus.files)} files",
        soft_wrap=True, markup=False,
    )  # fmt: skip


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
