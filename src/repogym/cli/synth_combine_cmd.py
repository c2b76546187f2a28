"""`repogym synth combine`: validated bugs that apply together, merged into harder candidates."""

from __future__ import annotations

from typing import Annotated

import typer

from repogym.cli.common import add_command, console, nothing_produced, print_json, subgroup
from repogym.cli.options import Json, OutTasks, Seed, Tasks
from repogym.dataset import load_tasks, save_tasks
from repogym.synth.combine import combine


def register(app: typer.Typer) -> None:
    add_command(subgroup(app, "synth"), "combine", combine_command)


def combine_command(
    tasks_file: Tasks,
    out: OutTasks,
    same: Annotated[str, typer.Option("--same", help="Combine bugs of the same 'file' or the same 'module' (folder).")] = "file",
    max_parts: Annotated[int, typer.Option("--max", min=2, help="Most bugs in one combined task.")] = 3,
    seed: Seed = 0,
    json_out: Json = False,
) -> None:  # fmt: skip
    """Merge validated bugs whose injections apply together into harder candidates (each bug used once).

    TASKS are validated synthetic tasks (from `repogym validate`); validate the combined candidates next.

    Example: repogym synth combine tasks.jsonl --same file --max 3 --out combined.jsonl && repogym validate combined.jsonl --out hard.jsonl
    """
    combined = combine(list(load_tasks(tasks_file)), same=same, max_parts=max_parts, seed=seed)
    if not combined:
        raise nothing_produced(f"no two validated bugs of one {same} apply together; {out} was not written")
    save_tasks(combined, out)
    if json_out:
        print_json({"out": str(out), "candidates": len(combined)})
        return
    console.print(
        f"[green]wrote[/] {len(combined)} combined candidates to {out}; validate them next", markup=False
    )
