"""`repogym config check`: validate a run configuration and print it fully resolved."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
import yaml
from rich.markup import escape

from repogym.cli.common import add_command, console, print_json, subgroup
from repogym.cli.options import Json
from repogym.config import config_to_dict, load_config
from repogym.verifier.score import check_diff_verifier, check_verifier_folder

VERIFIER_KEY = "reward.verifier.path"


def register(app: typer.Typer) -> None:
    add_command(subgroup(app, "config"), "check", check)


def check(
    file: Annotated[Path, typer.Argument(help="YAML run configuration.")],
    overrides: Annotated[
        list[str] | None,
        typer.Argument(help="key.path=value overrides, applied in order.", show_default=False),
    ] = None,
    json_out: Json = False,
) -> None:
    """Validate a run configuration and print it fully resolved (defaults filled in); a reward.verifier folder is
    checked too (model, tokenizer, chat template), without loading its weights.

    Example: repogym config check examples/seed_grpo.yaml rollout.max_steps=20 learning_rate=5e-6
    """
    config = load_config(file, overrides or [])
    if config.reward.verifier is not None:  # the folder is checked now, not when training reaches it
        check_diff_verifier(check_verifier_folder(config.reward.verifier.path, VERIFIER_KEY), VERIFIER_KEY)
    resolved = config_to_dict(config)
    if json_out:
        print_json(resolved)
        return
    console.print(f"[green]ok[/] {escape(str(file))}", soft_wrap=True)
    console.print(yaml.safe_dump(resolved, sort_keys=False), end="", markup=False, soft_wrap=True)
