"""`repogym train sft CONFIG [key=value ...]`: supervised fine-tuning with TRL's SFTTrainer."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add `sft` to the `train` sub-app (filled in by the SFT work)."""
