"""`repogym train rl CONFIG [key=value ...]` and `repogym train flywheel`: GRPO with the sandbox in the loop."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add `rl` and `flywheel` to the `train` sub-app (filled in by the GRPO work)."""
