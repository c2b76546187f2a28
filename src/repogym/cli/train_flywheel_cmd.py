"""`repogym train flywheel CONFIG --rounds N [key=value ...]`: rounds of rollout -> SFT -> GRPO -> eval."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from repogym.cli.common import add_command, console, err_console, print_json, subgroup
from repogym.cli.options import Json
from repogym.config import load_config
from repogym.pipeline.flywheel import run_flywheel
from repogym.pipeline.runner import Hooks


def register(app: typer.Typer) -> None:
    add_command(subgroup(app, "train"), "flywheel", flywheel_command)


def flywheel_command(
    config: Annotated[Path, typer.Argument(help="Run config YAML with a `flywheel:` section.")],
    rounds: Annotated[int, typer.Option("--rounds", help="Rounds of rollout -> SFT -> GRPO -> eval.")],
    overrides: Annotated[list[str] | None, typer.Argument(help="key.path=value overrides.", show_default=False)] = None,
    json_out: Json = False,
) -> None:  # fmt: skip
    """The SFT -> RL flywheel: each round rolls out the policy on the train tasks, fine-tunes on what resolved
    (plus gold demonstrations in round 0), runs GRPO, and evaluates on flywheel.eval_task_set.

    Every stage's output lands under output_dir/round-K/, its result recorded in its own folder as it
    finishes, so the same command after a kill resumes where it stopped; output_dir/flywheel.json holds
    the per-round table.

    Example:
      repogym train flywheel examples/seed_grpo.yaml --rounds 2 base_model=/tmp/tiny \\
        env.task_set=train.jsonl flywheel.eval_task_set=heldout.jsonl env.mode=agentless output_dir=runs/fw
    """
    run = load_config(config, overrides or [])
    with contextlib.redirect_stdout(sys.stderr):
        table = run_flywheel(run, rounds, Hooks(notify=lambda line: err_console.print(line, soft_wrap=True)))
    rows = [row.to_dict() for row in table]
    if json_out:
        print_json(rows)
        return
    view = Table(title="flywheel", show_header=True)
    for column in ("round", "sft rows", "rollout resolve", "grpo reward (first -> last)", "held-out resolve"):
        view.add_column(column, justify="right")
    for row in table:
        view.add_row(
            str(row.round), str(row.sft_rows), f"{row.rollout_resolve_rate:.1%}",
            f"{row.grpo_reward_first:+.3f} -> {row.grpo_reward_last:+.3f}", f"{row.eval_resolve_rate:.1%}",
        )  # fmt: skip
    console.print(view)
