"""`repogym quickstart`: the whole pipeline on built-in sample repositories."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from repogym.cli.common import check_sandbox, console, err_console, exits_on_error


def register(app: typer.Typer) -> None:
    app.command("quickstart")(exits_on_error(quickstart))


def quickstart(
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Folder for repos, candidates, tasks and reports.")
    ] = Path("repogym-quickstart"),
    seed: Annotated[int, typer.Option(help="Seed of the generated sample repositories.")] = 0,
    repos: Annotated[int, typer.Option("--repos", min=1, max=8, help="How many sample repositories.")] = 2,
    workers: Annotated[
        int, typer.Option("--workers", "-j", min=1, help="Parallel validations and gradings.")
    ] = 2,
    sandbox: Annotated[
        str, typer.Option(callback=check_sandbox, help="bwrap (isolated) or local (NO isolation).")
    ] = "bwrap",
) -> None:
    """Generate sample repos, mine their history, prove each candidate in the sandbox, grade gold and empty patches.

    Everything runs on this machine; only the sample repos' test environments reach the package index.
    Re-running with the same --out resumes where it stopped.

    Example: repogym quickstart --out /tmp/qs -j 2
    """
    from repogym.quickstart import run_quickstart

    result = run_quickstart(
        out, n_repos=repos, seed=seed, workers=workers, sandbox=sandbox, notify=lambda m: err_console.print(m)
    )
    table = Table(title=f"repogym quickstart -> {out}")
    table.add_column("stage")
    table.add_column("result", justify="right")
    table.add_column("seconds", justify="right")
    table.add_row(
        "sample repos",
        f"{len(result.repos)} ({result.planted_fixes} planted fixes)",
        _s(result, "generate_s"),
    )
    table.add_row(
        "mined", f"{result.candidates} candidates / {result.commits_scanned} commits", _s(result, "mine_s")
    )
    table.add_row("validated", f"{result.validated} proved by their tests", _s(result, "validate_s"))
    table.add_row("privacy scrub", f"{result.privacy_dropped} dropped (secrets, licence)", "")
    table.add_row("tasks written", f"{len(result.tasks)}", "")
    n = len(result.tasks)
    table.add_row("gold patches", f"{result.gold_resolved}/{n} resolved", _s(result, "grade_s"))
    table.add_row("empty patches", f"{result.empty_resolved}/{n} resolved", "")
    console.print(table)
    console.print(
        f"tasks: {out / 'tasks.jsonl'}   reports: {out / 'report.gold.json'}, {out / 'report.empty.json'}\n"
        f"next: repogym tasks stats {out / 'tasks.jsonl'}   |   "
        f"repogym grade {out / 'tasks.jsonl'} --instance ID --patch my.diff",
        markup=False,
    )
    if n == 0 or result.gold_resolved != n or result.empty_resolved != 0:
        err_console.print(
            "[red]quickstart: the pipeline did not behave as expected (see the reports above)[/]"
        )
        sys.exit(1)


def _s(result, key: str) -> str:  # type: ignore[no-untyped-def]
    value = result.timings.get(key)
    return f"{value:.1f}" if value is not None else ""
