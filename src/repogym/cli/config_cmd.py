"""`repogym config ...`: check and print run configurations."""

from __future__ import annotations

from pathlib import Path

import typer
import yaml

from repogym.cli.common import console
from repogym.config import config_to_dict, load_config

app = typer.Typer(help="Check run configurations.", no_args_is_help=True)


@app.command("check")
def check(
    file: Path = typer.Argument(..., help="YAML run configuration."),
    overrides: list[str] = typer.Argument(None, help="key.path=value overrides, applied in order."),
) -> None:
    """Validate a run configuration and print it fully resolved (defaults filled in).

    Example: repogym config check examples/seed_grpo.yaml rollout.max_steps=20 learning_rate=5e-6
    """
    config = load_config(file, overrides or [])
    console.print(f"[green]ok[/] {file}", highlight=False)
    console.print(yaml.safe_dump(config_to_dict(config), sort_keys=False), end="", markup=False)
