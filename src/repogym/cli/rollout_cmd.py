"""`repogym rollout`: N attempts of a policy per task, each stored as a trajectory the moment it finishes."""

from __future__ import annotations

import time
from typing import Annotated

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from repogym.cli.attempt_options import AttemptOptions
from repogym.cli.common import add_command, console, err_console, print_json
from repogym.cli.options import Json, OutDir, Tasks
from repogym.files import write_json
from repogym.rollout.run import RolloutConfig, RolloutSummary, plan_rollout, run_rollout


def register(app: typer.Typer) -> None:
    add_command(app, "rollout", rollout_command)


def rollout_command(
    tasks_file: Tasks,
    attempts: AttemptOptions,
    out: OutDir,
    keep: Annotated[str, typer.Option("--keep", help="all, or resolved (writes the rejection-sampled SFT set).")] = "all",
    json_out: Json = False,
) -> None:  # fmt: skip
    """Run N attempts of a policy on every task; store each as a trajectory the moment it finishes.

    Records are the *.jsonl files under --out (one row per attempt, `instance_id` and `attempt` at
    the top). A run killed at any point and started again with the same command skips what is
    done. Failures of single attempts (endpoint down, no tool call, never submits, env build
    failed) are counted in the summary; only bad arguments stop the run.

    Exit status: 0 when attempts ran and were graded (resolved or not); 1 when every attempt run
    now ended without a graded patch (endpoint unreachable, env build failed, ...): nothing was
    produced, and the message says the first reason; 2 on bad arguments.

    Examples:
      repogym rollout tasks.jsonl --policy scripted:gold -n 1 --out runs/gold
      repogym rollout tasks.jsonl --policy openai:tiny --base-url http://127.0.0.1:8000/v1 -n 4 --out runs/tiny -j 4
      repogym rollout tasks.jsonl --policy hf:ckpt --executor ray -j 2 -n 8 --keep resolved --out runs/sft
      repogym rollout tasks.jsonl --policy hf:runs/rl --mode agentless -n 4 --temperature 1 --out runs/al
    """
    env_options = attempts.env_options()
    if attempts.context is not None:
        env_options["context"] = attempts.context
    config = RolloutConfig(
        tasks=str(tasks_file), policy=attempts.policy_config(), out=str(out), n=attempts.n, jobs=attempts.jobs,
        executor=attempts.executor, ray_address=attempts.ray_address, keep=keep,
        instance_ids=attempts.instance_ids, settings_sampling=attempts.sampling(), limits=attempts.limits(),
        sandbox=attempts.sandbox, repos_dir=attempts.repos, prompts_dir=attempts.prompts_dir,
        reward=attempts.reward(), env_options=env_options, mode=attempts.mode,
    )  # fmt: skip
    summary = run_with_progress(config)
    write_json(out / "summary.json", summary.to_dict())
    if json_out:
        print_json(summary.to_dict())
    else:
        console.print(summary_table(summary))
    if summary.produced_nothing:
        err_console.print(
            f"error: produced nothing: none of the {summary.ran_now} attempt(s) run now reached grading; "
            f"the first said {summary.first_failure}",
            markup=False,
            soft_wrap=True,
        )
        raise typer.Exit(1)


def run_with_progress(config: RolloutConfig) -> RolloutSummary:
    """`repogym rollout`'s run: plan (config errors surface here), then run with a live bar: done/total, rate,
    ETA, resolve rate. (The library's own stages report through callbacks instead: see progress.LiveBars.)"""
    with err_console.status("checking the configuration and loading the policy..."):
        plan = plan_rollout(config)
    if plan.skipped:
        err_console.print(
            f"resuming: {plan.skipped} attempt(s) already in {config.out}, {len(plan.jobs)} to run"
        )
    progress = _progress()
    bar = progress.add_task("rollout", total=len(plan.jobs), rate="", resolved="0/0")
    started, counts = time.monotonic(), {"done": 0, "resolved": 0}

    def on_result(trajectory) -> None:  # type: ignore[no-untyped-def]
        counts["done"] += 1
        counts["resolved"] += trajectory.resolved
        per_min = counts["done"] / max(time.monotonic() - started, 1e-9) * 60
        share = counts["resolved"] / counts["done"]
        resolved = f"{counts['resolved']}/{counts['done']} ({share:.0%})"
        progress.update(bar, advance=1, rate=f"{per_min:.1f}/min", resolved=resolved)

    with progress:
        return run_rollout(config, on_result=on_result, plan=plan)


def _progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TextColumn("resolved {task.fields[resolved]}"),
        console=err_console,
    )


def summary_table(summary) -> Table:  # type: ignore[no-untyped-def]
    """The end-of-run table: rates, means, and a count for every way an attempt ended."""
    table = Table(title="rollout summary", show_header=True)
    table.add_column("metric")
    table.add_column("value", justify="right")
    rows = [
        ("attempts (ran now / already done)", f"{summary.attempts} ({summary.ran_now} / {summary.skipped})"),
        ("resolve rate", f"{summary.resolve_rate:.1%} ({summary.resolved}/{summary.attempts})"),
        ("tasks resolved at least once", f"{summary.tasks_resolved}/{summary.tasks}"),
        ("mean reward", f"{summary.mean_reward:+.3f}"),
        *((f"  mean {name}", f"{value:+.3f}") for name, value in summary.mean_components.items()),
        ("mean steps", f"{summary.mean_steps:.1f}"),
        ("mean tokens", f"{summary.mean_tokens:.0f}"),
        ("trajectories kept", str(summary.kept)),
        *((f"attempt outcome: {name}", str(count)) for name, count in sorted(summary.outcomes.items())),
        *((f"grade: {name}", str(count)) for name, count in sorted(summary.grade_outcomes.items())),
        *((f"format error: {name}", str(count)) for name, count in sorted(summary.format_errors.items())),
        *_endpoint_rows(summary.endpoint),
    ]
    for metric, value in rows:
        table.add_row(metric, value)
    return table


def _endpoint_rows(endpoint) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """The openai policy's settings and traffic, and the server's counters when it is `repogym serve`."""
    if endpoint is None:
        return []
    rows = [("policy", endpoint.client_line())]
    if endpoint.server:
        rows.append(("server (repogym serve)", endpoint.server_line()))
    return rows
