"""`repogym data ...`: the group of the training-data commands (`data sft`, `data commits`, each its own module)."""

from __future__ import annotations

import typer

from repogym.cli.common import add_group

HELP = (
    "Build training data: SFT chat rows from rollouts and gold demonstrations, commit data from repositories.\n\n"
    "Examples:\n\n  repogym data sft runs/gold tasks.jsonl --out sft.jsonl\n\n"
    "  repogym data commits ../calc --out commits.jsonl"
)


def register(app: typer.Typer) -> None:
    add_group(app, "data", HELP)
