"""`repogym report RUN_DIR... --out report.html`: one self-contained page from run folders."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from repogym.cli.common import console, err_console, exits_on_error
from repogym.errors import ConfigError


def register(app: typer.Typer) -> None:
    app.command("report")(report_command)


@exits_on_error
def report_command(
    run_dirs: list[Path] = typer.Argument(
        ..., help="Run folders: eval, training, rollout, mining/validation outputs."
    ),
    out: Path = typer.Option(Path("report.html"), "--out", "-o", help="The HTML file to write."),
    max_attempts: int = typer.Option(
        100, "--max-attempts", help="Trajectories shown per rollout (first attempts of every task first)."
    ),
) -> None:
    """Write one self-contained HTML page (opens offline) from run folders; plots also as PNGs beside it.

    Sections: training curves, before/after resolve rate per split, funnels, a per-task table and a
    trajectory viewer (messages, tool calls, the diff, test results). PNGs go to OUT-stem_plots/.

    What each RUN_DIR may hold (searched a few folders deep): an eval folder (summary.json from
    `repogym eval`, its stage and split label the before/after table), a training run's
    metrics.jsonl, a `repogym rollout` folder, funnel files (*funnel*.json).

    Example: repogym report runs/eval-baseline runs/eval-sft runs/sft runs/mine --out report.html
    """
    try:
        from repogym.evaluate.report import build_report
    except ImportError as exc:
        raise ConfigError(
            f"repogym report needs the report extra ({exc.name} is missing): pip install 'repogym[report]'"
        ) from None
    progress = Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err_console,
    )  # fmt: skip
    bars: dict[str, int] = {}

    def on_progress(what: str, done: int, total: int) -> None:
        if what not in bars:
            bars[what] = progress.add_task(what, total=total)
        progress.update(bars[what], completed=done)

    with progress:
        result = build_report(run_dirs, out, max_attempts=max_attempts, on_progress=on_progress)
    found = result.inputs
    for warning in found.warnings:
        err_console.print(Text(f"warning: {warning}"), soft_wrap=True)
    console.print(Text(
        f"wrote {out} ({out.stat().st_size / 1024:.0f} KiB) and {len(result.plots)} plot(s) in {result.plots_dir}: "
        f"{len(found.evals)} eval(s), {len(found.trainings)} training run(s), {len(found.funnels)} funnel(s), "
        f"{result.attempts_shown} trajectory attempt(s) shown"
    ), soft_wrap=True)  # fmt: skip
