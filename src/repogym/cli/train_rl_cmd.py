"""`repogym train rl CONFIG [key=value ...]` and `repogym train flywheel`: GRPO with the sandbox in the loop."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from repogym.cli.common import console, err_console, exits_on_error, print_json


def register(app: typer.Typer) -> None:
    """Add `rl` and `flywheel` to the `train` sub-app."""
    app.command("rl")(rl_command)
    app.command("flywheel")(flywheel_command)


@exits_on_error
def rl_command(
    config: Path = typer.Argument(..., help="Run config YAML (the seed's section 9.1 format)."),
    overrides: list[str] = typer.Argument(None, help="key.path=value overrides, e.g. total_steps=20."),
    resume: bool = typer.Option(
        False, "--resume", help="Continue the run in output_dir from its last finished checkpoint."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Train a policy with GRPO (TRL) against the sandbox: the completions of each group graded in parallel.

    Writes checkpoint-N/ every grpo.save_steps steps, metrics.jsonl (one row per logged step: reward
    and each reward term, resolve rate, format-error rate, lengths, KL, clip ratio, the step's
    generate / grade / update seconds), TensorBoard logs, and the final model, all in output_dir.
    Killed at any point, the same command with --resume continues at the last checkpoint's step.

    Example:
      repogym train rl examples/seed_grpo.yaml base_model=/tmp/tiny env.task_set=qs/tasks.jsonl \\
        env.mode=agentless total_steps=20 batch_size=16 rollout.num_candidates=8 output_dir=runs/rl
    """
    from repogym.config import load_config
    from repogym.train.grpo import train_rl

    run = load_config(config, overrides or [])
    with contextlib.redirect_stdout(
        sys.stderr
    ):  # transformers prints its logs; stdout keeps the summary only
        result = train_rl(run, resume=resume, notify=lambda line: err_console.print(line, soft_wrap=True))
    summary = rl_summary(result.metrics, result.global_step, result.resumed_from, str(result.output_dir))
    if json_out:
        print_json(summary)
    else:
        console.print(summary_table("train rl", summary))


@exits_on_error
def flywheel_command(
    config: Path = typer.Argument(..., help="Run config YAML with a `flywheel:` section."),
    overrides: list[str] = typer.Argument(None, help="key.path=value overrides."),
    rounds: int = typer.Option(..., "--rounds", help="Rounds of rollout -> SFT -> GRPO -> eval."),
    json_out: bool = typer.Option(False, "--json", help="Print the per-round table as JSON."),
) -> None:
    """The SFT -> RL flywheel: each round rolls out the policy on the train tasks, fine-tunes on what resolved
    (plus gold demonstrations in round 0), runs GRPO, and evaluates on flywheel.eval_task_set.

    Every stage's output lands under output_dir/round-K/, its result recorded in its own folder as it
    finishes, so the same command after a kill resumes where it stopped; output_dir/flywheel.json holds
    the per-round table.

    Example:
      repogym train flywheel examples/seed_grpo.yaml --rounds 2 base_model=/tmp/tiny \\
        env.task_set=train.jsonl flywheel.eval_task_set=heldout.jsonl env.mode=agentless output_dir=runs/fw
    """
    from repogym.config import load_config
    from repogym.pipeline.flywheel import run_flywheel
    from repogym.pipeline.runner import Hooks

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


def rl_summary(rows: list[dict[str, Any]], step: int, resumed_from: int, output_dir: str) -> dict[str, Any]:
    """First and last logged values and mean step split of a run's metrics rows."""
    logged = [row for row in rows if "reward" in row]

    def mean(key: str) -> float | None:
        values = [row[key] for row in logged if isinstance(row.get(key), int | float)]
        return sum(values) / len(values) if values else None

    first, last = (logged[0], logged[-1]) if logged else ({}, {})
    return {
        "output_dir": output_dir,
        "global_step": step,
        "resumed_from": resumed_from,
        "reward_first": first.get("reward"),
        "reward_last": last.get("reward"),
        "resolve_rate_first": first.get("resolve_rate"),
        "resolve_rate_last": last.get("resolve_rate"),
        "format_error_rate_last": last.get("format_error_rate"),
        "completion_length_mean": mean("completions/mean_length"),
        "step_s_mean": mean("time/step_s"),
        "generate_s_mean": mean("time/generate_s"),
        "grade_s_mean": mean("time/grade_s"),
        "update_s_mean": mean("time/update_s"),
        "peak_rss_mb": max((row.get("memory/peak_rss_mb") or 0.0 for row in logged), default=None),
    }


def summary_table(title: str, summary: dict[str, Any]) -> Table:
    table = Table(title=title, show_header=True)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in summary.items():
        shown = f"{value:.3f}" if isinstance(value, float) else ("-" if value is None else str(value))
        table.add_row(key, shown)
    return table
