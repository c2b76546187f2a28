"""`repogym config ...`: check and print run configurations."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
import yaml
from rich.markup import escape

from repogym.cli.common import console, exits_on_error
from repogym.config import config_to_dict, load_config

app = typer.Typer(
    help="Check run configurations.\n\nExample: repogym config check examples/seed_grpo.yaml rollout.max_steps=20",
    no_args_is_help=True,
)


@app.command("check")
@exits_on_error
def check(
    file: Annotated[Path, typer.Argument(help="YAML run configuration.")],
    overrides: Annotated[
        list[str] | None,
        typer.Argument(help="key.path=value overrides, applied in order.", show_default=False),
    ] = None,
) -> None:
    """Validate a run configuration and print it fully resolved (defaults filled in).

    Example: repogym config check examples/seed_grpo.yaml rollout.max_steps=20 learning_rate=5e-6
    """
    config = load_config(file, overrides or [])
    console.print(f"[green]ok[/] {escape(str(file))}", soft_wrap=True)
    console.print(
        yaml.safe_dump(config_to_dict(config), sort_keys=False), end="", markup=False, soft_wrap=True
    )
