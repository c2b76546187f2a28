"""`repogym model init --tiny DIR` and `repogym model pretrain DIR --corpus PATH... --budget MINUTES`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from repogym.cli.common import console, err_console, exits_on_error, print_json

app = typer.Typer(
    help="Build repogym's own small models: a random-weight model with a locally trained tokenizer, then pretraining.\n\n"
    "Example: repogym model init --tiny checkpoints/tiny && repogym model pretrain checkpoints/tiny --budget 10",
    no_args_is_help=True,
)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="model")


@app.command("init")
@exits_on_error
def init_command(
    tiny: Path = typer.Option(
        ..., "--tiny", help="Folder to write the model to (a Hugging Face model folder)."
    ),
    size: str = typer.Option("tiny", "--size", help="tiny (~1.4M parameters), small (~6.9M) or base (~20M)."),
    arch: str = typer.Option("llama", "--arch", help="llama or qwen2."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random weights."),
    tokenizer_corpus: list[Path] = typer.Option(
        None,
        "--tokenizer-corpus",
        help="Python files/folders the BPE is trained on (default: the standard library).",
    ),
    tokenizer_chars: int = typer.Option(
        4_000_000, "--tokenizer-chars", help="Characters of source the BPE reads."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print the model record as JSON."),
) -> None:
    """Write a random-weight Llama of the given size and a byte-level BPE trained on local Python source.

    The folder loads anywhere a local model does (--policy hf:DIR, repogym serve DIR, train sft/rl).

    Example: repogym model init --tiny checkpoints/tiny --size small
    """
    from repogym.train.corpus import load_corpus
    from repogym.train.model import init_model, model_record

    with err_console.status("reading the tokenizer corpus and training the BPE..."):
        corpus = load_corpus(
            [str(p) for p in tokenizer_corpus] if tokenizer_corpus else None, tokenizer_chars
        )
        folder = init_model(
            tiny,
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


@app.command("pretrain")
@exits_on_error
def pretrain_command(
    model_dir: Path = typer.Argument(..., help="A model folder (from `repogym model init`)."),
    corpus: list[Path] = typer.Option(
        None,
        "--corpus",
        help="Python files/folders to pretrain on (repeatable; default: stdlib + site-packages).",
    ),
    budget: float = typer.Option(..., "--budget", help="Training time in minutes."),
    out: Path = typer.Option(
        None, "--out", help="Write the pretrained model here (default: replace DIR's weights)."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of data order and sampling."),
    seq_len: int = typer.Option(256, "--seq-len", help="Tokens per training block."),
    batch_size: int = typer.Option(16, "--batch-size", help="Blocks per step."),
    learning_rate: float = typer.Option(
        1e-3, "--learning-rate", help="Peak learning rate (cosine schedule)."
    ),
    max_chars: int = typer.Option(
        24_000_000, "--max-chars", help="Corpus characters read (a fixed sample beyond)."
    ),
    save_steps: int = typer.Option(None, "--save-steps", help="Checkpoint interval (default: ~5% of the steps)."),
    json_out: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Pretrain a small model on local Python source (causal LM), cached by its inputs, resumable after a kill.

    A second call with the same inputs returns at once (the cache is under $REPOGYM_CACHE/pretrain);
    a killed call started again continues from its last checkpoint.

    Example: repogym model pretrain checkpoints/tiny --corpus ~/src/our-repo --corpus /usr/lib/python3.11 --budget 10
    """
    from repogym.train.pretrain import PretrainConfig, pretrain

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
