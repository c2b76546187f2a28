"""`repogym eval compare A B`: per-task deltas of two eval folders with a paired-bootstrap interval."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from repogym.cli.common import add_command, console, print_json, subgroup
from repogym.cli.options import BootstrapSeed, Json, OutReport, Resamples
from repogym.evaluate.bootstrap import BootstrapSettings
from repogym.evaluate.compare import compare_runs
from repogym.files import write_json


def register(app: typer.Typer) -> None:
    add_command(subgroup(app, "eval"), "compare", compare_command)


def compare_command(
    run_a: Annotated[Path, typer.Argument(help="Eval folder A (the before).")],
    run_b: Annotated[Path, typer.Argument(help="Eval folder B (the after).")],
    bootstrap: Resamples = 1000,
    bootstrap_seed: BootstrapSeed = 0,
    out: OutReport = None,
    json_out: Json = False,
) -> None:
    """Per-task resolve rate of B minus A on the tasks both measured, with a paired-bootstrap 95% interval.

    Example: repogym eval compare runs/eval-baseline runs/eval-sft --out sft-vs-baseline.json
    """
    comparison = compare_runs(run_a, run_b, BootstrapSettings(resamples=bootstrap, seed=bootstrap_seed))
    data = comparison.to_dict()
    if out is not None:
        write_json(out, data)
    if json_out:
        print_json(data)
        return
    low, high = comparison.interval
    console.print(Text(
        f"B - A = {comparison.mean_delta:+.1%} [{low:+.1%}, {high:+.1%}] over {len(comparison.deltas)} task(s) "
        f"(A {comparison.mean_a:.1%}, B {comparison.mean_b:.1%}; paired bootstrap, {bootstrap} resamples); "
        f"{data['improved']} improved, {data['regressed']} regressed"
    ), soft_wrap=True)  # fmt: skip
    changed = comparison.changed()
    if changed:
        table = Table(title="tasks that changed")
        for column in ("task", "A", "B", "B - A"):
            table.add_column(column, justify="left" if column == "task" else "right")
        for d in changed:
            table.add_row(Text(d.instance_id), f"{d.a:.0%}", f"{d.b:.0%}", f"{d.delta:+.0%}")
        console.print(table)
    for name, ids in (("only in A", comparison.only_a), ("only in B", comparison.only_b)):
        if ids:
            console.print(Text(f"{name} (not compared): {', '.join(ids)}"), soft_wrap=True)
