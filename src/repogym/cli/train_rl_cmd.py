"""`repogym train rl CONFIG [key=value ...]`: GRPO with the sandbox in the loop."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from repogym.cli.common import add_command, console, err_console, print_json, subgroup
from repogym.cli.options import Json
from repogym.config import RunConfig, load_config
from repogym.train.grpo import train_rl
from repogym.train.rl_verifier import VerifierScores
from repogym.verifier.score import diff_scorer


def register(app: typer.Typer) -> None:
    add_command(subgroup(app, "train"), "rl", rl_command)


def rl_command(
    config: Annotated[Path, typer.Argument(help="Run config YAML (the seed's section 9.1 format).")],
    overrides: Annotated[list[str] | None, typer.Argument(help="key.path=value overrides, e.g. total_steps=20.", show_default=False)] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the run in output_dir from its last finished checkpoint.")] = False,
    json_out: Json = False,
) -> None:  # fmt: skip
    """Train a policy with GRPO (TRL) against the sandbox: the completions of each group graded in parallel.

    Writes checkpoint-N/ every grpo.save_steps steps, metrics.jsonl (one row per logged step: reward
    and each reward term, resolve rate, format-error rate, lengths, KL, clip ratio, the step's
    generate / grade / update seconds), TensorBoard logs, and the final model, all in output_dir.
    Killed at any point, the same command with --resume continues at the last checkpoint's step.
    With reward.verifier set, its verifier is loaded once here and scores the completions of tasks that have no
    FAIL_TO_PASS tests (the tests alone judge the others).

    Example:
      repogym train rl examples/seed_grpo.yaml base_model=/tmp/tiny env.task_set=qs/tasks.jsonl \\
        env.mode=agentless total_steps=20 batch_size=16 rollout.num_candidates=8 output_dir=runs/rl
    """
    run = load_config(config, overrides or [])
    with contextlib.redirect_stdout(
        sys.stderr
    ):  # transformers prints its logs; stdout keeps the summary only
        result = train_rl(
            run,
            resume=resume,
            notify=lambda line: err_console.print(line, soft_wrap=True),
            verifier_scores=reward_verifier(run),
        )
    summary = rl_summary(result.metrics, result.global_step, result.resumed_from, str(result.output_dir))
    if json_out:
        print_json(summary)
    else:
        console.print(summary_table("train rl", summary))


def reward_verifier(run: RunConfig) -> VerifierScores | None:
    """`reward.verifier` loaded once for the whole run (train does not import the verifier package: it is handed
    the scoring function); None when the config sets none."""
    settings = run.reward.verifier
    if settings is None:
        return None
    return diff_scorer(settings.path, "reward.verifier.path", settings.batch_size)


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
