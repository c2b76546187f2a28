"""`repogym report RUN_DIR... --out report.html`: one self-contained page from run folders."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from repogym.cli.common import add_command, console, err_console, print_json
from repogym.cli.options import Json
from repogym.errors import ConfigError
from repogym.evaluate.report import build_report

#: The packages of the `report` extra (pyproject.toml), which a plain install lacks.
REPORT_EXTRA = ("matplotlib", "jinja2")


def register(app: typer.Typer) -> None:
    add_command(app, "report", report_command)


def report_command(
    run_dirs: Annotated[list[Path], typer.Argument(help="Run folders: eval, training, rollout, mining/validation outputs.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The HTML file to write.")] = Path("report.html"),
    max_attempts: Annotated[int, typer.Option("--max-attempts", help="Trajectories shown per rollout (first attempts of every task first).")] = 100,
    json_out: Json = False,
) -> None:  # fmt: skip
    """Write one self-contained HTML page (opens offline) from run folders; plots also as PNGs beside it.

    Sections: training curves, before/after resolve rate per split, funnels, a per-task table and a
    trajectory viewer (messages, tool calls, the diff, test results). PNGs go to OUT-stem_plots/.

    What each RUN_DIR may hold (searched a few folders deep): an eval folder (summary.json from
    `repogym eval`, its stage and split label the before/after table), a training run's
    metrics.jsonl, a `repogym rollout` folder, funnel files (*funnel*.json), a `repogym verify` folder (its
    reliability diagram, AUC and ECE).

    Example: repogym report runs/eval-baseline runs/eval-sft runs/sft runs/mine --out report.html
    """
    progress = Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err_console,
    )  # fmt: skip
    bars: dict[str, int] = {}

    def on_progress(what: str, done: int, total: int) -> None:
        if what not in bars:
            bars[what] = progress.add_task(what, total=total)
        progress.update(bars[what], completed=done)

    try:
        with progress:
            result = build_report(run_dirs, out, max_attempts=max_attempts, on_progress=on_progress)
    except ModuleNotFoundError as exc:  # the extra's packages are imported where the page draws
        if (exc.name or "").split(".")[0] not in REPORT_EXTRA:
            raise
        raise ConfigError(
            f"repogym report needs the report extra ({exc.name} is missing): pip install 'repogym[report]'"
        ) from None
    found = result.inputs
    for warning in found.warnings:
        err_console.print(Text(f"warning: {warning}"), soft_wrap=True)
    if json_out:
        print_json({
            "out": str(out), "bytes": out.stat().st_size, "plots_dir": str(result.plots_dir),
            "plots": [str(plot) for plot in result.plots], "evals": len(found.evals),
            "trainings": len(found.trainings), "funnels": len(found.funnels), "verifiers": len(found.verifies), "attempts_shown": result.attempts_shown,
            "warnings": list(found.warnings),
        })  # fmt: skip
        return
    console.print(Text(
        f"wrote {out} ({out.stat().st_size / 1024:.0f} KiB) and {len(result.plots)} plot(s) in {result.plots_dir}: "
        f"{len(found.evals)} eval(s), {len(found.trainings)} training run(s), {len(found.funnels)} funnel(s), "
        f"{result.attempts_shown} trajectory attempt(s) shown"
    ), soft_wrap=True)  # fmt: skip
