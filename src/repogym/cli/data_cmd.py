"""`repogym data ...`: training data from the pipeline's outputs (SFT rows; commit data lands here too).

Each command lives in its own module and adds itself here (data_sft_cmd: `data sft`).
"""

from __future__ import annotations

import typer

from repogym.cli import data_sft_cmd

app = typer.Typer(
    help="Build training data: SFT chat rows from rollouts, gold demonstrations and commit data.\n\n"
    "Example: repogym data sft runs/gold tasks.jsonl --out sft.jsonl",
    no_args_is_help=True,
)

data_sft_cmd.register(app)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="data")
