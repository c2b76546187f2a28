"""`repogym quickstart`: the whole loop on built-in sample repositories, from git history to a before/after table."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from repogym.cli.common import add_command, console, err_console, print_json, track
from repogym.cli.options import Jobs, Json, OutDir, Renamed, Seed
from repogym.cli.progress import LiveBars
from repogym.cli.sandbox_option import Sandbox
from repogym.pipeline.data import DataResult
from repogym.pipeline.plan import QuickstartPlan, make_plan
from repogym.pipeline.quickstart import QuickstartRun, before_after_rows, run_quickstart
from repogym.pipeline.record import StageResult
from repogym.pipeline.runner import Hooks, PipelineError


def register(app: typer.Typer) -> None:
    add_command(app, "quickstart", quickstart, Renamed("--workers", "--jobs"))


def quickstart(
    out: OutDir = Path("repogym-quickstart"),
    fast: Annotated[
        bool,
        typer.Option("--fast", help="The CI form: 2 repos, few bugs, tiny steps; every stage still runs."),
    ] = False,
    budget: Annotated[
        float | None,
        typer.Option(
            "--budget", help="Training minutes (pretrain + SFT + GRPO); default 7, 0.8 with --fast."
        ),
    ] = None,
    seed: Seed = 0,
    repos: Annotated[
        int | None,
        typer.Option("--repos", min=2, max=8, help="Sample repositories (the last one is held out)."),
    ] = None,
    jobs: Jobs = 2,
    sandbox: Sandbox = "bwrap",
    json_out: Json = False,
) -> None:
    """Run the whole loop: sample repos -> mine + synth -> validate -> split -> tiny model -> baseline eval
    -> SFT -> GRPO -> eval on held-out functions and a held-out repo -> OUT/report.html.

    Everything runs on this machine; only the sample repos' test environments reach the package index.
    The default finishes within about 15 minutes on 2 cores; re-running with the same options resumes
    (finished stages are skipped). Exit status 1 when the pipeline misbehaves (e.g. a gold patch does
    not resolve).

    Example: repogym quickstart --fast --out /tmp/qs && xdg-open /tmp/qs/report.html
    """
    plan = make_plan(fast=fast, budget_minutes=budget, repos=repos, seed=seed)
    saved = track("quickstart stages done")
    started = time.monotonic()
    bars = LiveBars()

    def finished(_label: str, result: StageResult) -> None:
        saved.done += 1
        if isinstance(result, DataResult):
            bars.pause()
            console.print(data_table(result, out))

    hooks = Hooks(
        notify=lambda message: bars.say(f"[{_clock(started)}] {message}"), progress=bars, finished=finished,
        trainer_bars=True,
    )  # fmt: skip
    try:
        with bars:
            result = run_quickstart(out, plan, workers=jobs, sandbox=sandbox, hooks=hooks)
    except PipelineError as exc:
        err_console.print(Text(f"quickstart: {exc}", style="red"), soft_wrap=True)
        sys.exit(1)
    if json_out:
        print_json(_summary(result, out))
        return
    console.print(before_after_table(result, plan))
    console.print(
        f"tasks: {out / 'tasks.jsonl'}   report: {result.report}   ({_clock(started)} this run)\n"
        f"next: repogym eval {out / 'split' / 'heldout-functions.jsonl'} --policy hf:{out / 'train' / 'grpo'} "
        f"--mode agentless {' '.join(_eval_options(plan.env_options))} -n 4 --out my-eval",
        markup=False, soft_wrap=True,
    )  # fmt: skip


def _summary(result: QuickstartRun, out: Path) -> dict[str, Any]:
    """--json: where everything is, the split's sizes and each held-out evaluation (split, stage, numbers)."""
    return {
        "out": str(out),
        "tasks": str(out / "tasks.jsonl"),
        "report": str(result.report),
        "split": result.split.to_dict(),
        "scores": [
            {"split": split, "stage": stage, **score.to_dict()}
            for (split, stage), score in result.scores.items()
        ],
    }


_ANSWERS = {"lines": "the suspicious line rewritten", "search_replace": "SEARCH/REPLACE blocks"}


def _eval_options(options: dict[str, Any]) -> list[str]:
    """`repogym eval` options giving the prompts the quickstart trained on.

    >>> _eval_options({"context": "window", "window_lines": 1, "localize": "oracle", "answer_format": "lines"})
    ['--context window', '--env-option window_lines=1', '--env-option localize=oracle', '--env-option answer_format=lines']
    """
    rest = [f"--env-option {key}={value}" for key, value in options.items() if key != "context"]
    return [f"--context {options['context']}", *rest] if "context" in options else rest


def data_table(data: DataResult, out: Path) -> Table:
    table = Table(title=f"repogym quickstart: data -> {out}")
    table.add_column("stage")
    table.add_column("result", justify="right")
    table.add_column("seconds", justify="right")
    seconds = lambda key: f"{data.timings[key]:.1f}" if key in data.timings else ""  # noqa: E731
    n = data.tasks
    table.add_row(
        "sample repos", f"{len(data.repos)} ({data.planted_fixes} planted fixes)", seconds("generate_s")
    )
    table.add_row(
        "mined", f"{data.candidates} candidates / {data.commits_scanned} commits", seconds("mine_s")
    )
    table.add_row("synth", f"{data.synth_candidates} single-line bugs", seconds("synth_s"))
    table.add_row("validated", f"{data.validated} proved by their tests", seconds("validate_s"))
    table.add_row("privacy scrub", f"{data.privacy_dropped} dropped (secrets, licence)", "")
    table.add_row("tasks written", f"{n}", "")
    table.add_row("gold patches", f"{data.gold_resolved}/{n} resolved", seconds("grade_s"))
    table.add_row("empty patches", f"{data.empty_resolved}/{n} resolved", "")
    return table


def before_after_table(result: QuickstartRun, plan: QuickstartPlan) -> Table:
    table = Table(
        title="before / after: resolved on held-out tasks (pass@1, bootstrap 95% interval)",
        caption=f"trained on {result.split.train} tasks; agentless, 3-line window at the gold patch's lines "
        f"(perfect fault localization){', no issue text' if plan.prompt_style == 'compact' else ''}, answers: {_ANSWERS.get(plan.answer_format, plan.answer_format)}; "
        f"tiny model, {plan.budget_minutes:g} training minutes",
    )  # fmt: skip
    for name in ("held-out split", "one operator swap", "model before", "after SFT", "after SFT+GRPO"):
        table.add_column(name, justify="left" if name == "held-out split" else "right")
    for row in before_after_rows(result.scores):
        table.add_row(*row)
    return table


def _clock(started: float) -> str:
    seconds = int(time.monotonic() - started)
    return f"{seconds // 60:02d}:{seconds % 60:02d}"
