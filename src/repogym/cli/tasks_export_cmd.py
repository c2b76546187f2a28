"""`repogym tasks export`: tasks in SWE-bench's exact form (or repogym's), for other harnesses."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from repogym.cli.common import add_command, console, print_json, subgroup
from repogym.cli.options import Json, OutTasks, Tasks
from repogym.dataset import Style, format_for_path, load_tasks, save_tasks


def register(app: typer.Typer) -> None:
    add_command(subgroup(app, "tasks"), "export", export_tasks)


def export_tasks(
    tasks_file: Tasks,
    out: OutTasks,
    format: Annotated[
        Style,
        typer.Option("--format", "-f", help="swebench: exactly SWE-bench's fields; repogym: all fields."),
    ] = Style.SWEBENCH,
    json_out: Json = False,
) -> None:
    """Write tasks in SWE-bench's exact form (test lists JSON-encoded), for SWE-bench's own harness.

    Example: repogym tasks export examples/tasks.jsonl --format swebench --out tasks.swebench.json
    """
    format_for_path(out)
    count = save_tasks(load_tasks(tasks_file), out, style=format)
    if json_out:
        print_json({"out": str(out), "tasks": count, "format": format.value})
        return
    console.print(
        f"[green]wrote[/] {count} tasks to {escape(str(out))} ({format.value} form)", soft_wrap=True
    )
