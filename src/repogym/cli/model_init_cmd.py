"""`repogym model init DIR`: a random-weight model and a byte-level BPE trained on local Python source."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from repogym.cli.common import add_command, console, err_console, print_json, subgroup
from repogym.cli.options import Json, ModelDir, NowFirstArgument, Seed
from repogym.train.corpus import load_corpus
from repogym.train.model import init_model, model_record


def register(app: typer.Typer) -> None:
    old = NowFirstArgument(("--tiny",), "DIR [--size tiny|small|base|medium]")
    add_command(subgroup(app, "model"), "init", init_command, old)


def init_command(
    model_dir: ModelDir,
    size: Annotated[str, typer.Option("--size", help="tiny (~1.4M parameters), small (~6.9M), base (~20M) or medium (~97M, for a GPU).")] = "tiny",
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
