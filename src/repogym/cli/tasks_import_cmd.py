"""`repogym tasks import`: read tasks in any supported format, fill their envs from specs, write them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.text import Text

from repogym.cli.common import add_command, console, print_json, subgroup
from repogym.cli.options import Json, OutTasks, Tasks
from repogym.data import SpecsApplied, apply_specs, builtin_specs, installed_pythons, missing_interpreters
from repogym.dataset import format_for_path, load_tasks, save_tasks
from repogym.envfile import load_env_file


def register(app: typer.Typer) -> None:
    add_command(subgroup(app, "tasks"), "import", import_tasks)


def import_tasks(
    tasks_file: Tasks,
    out: OutTasks,
    specs: Annotated[
        str | None,
        typer.Option(
            "--specs",
            help="Fill each task's env (python, packages, install, test command, parser, test variables) from "
            "built-in specs keyed by (repo, version): 'swebench' = SWE-bench's per-version specs for its "
            "Python repositories.",
        ),
    ] = None,
    env_file: Annotated[
        Path | None,
        typer.Option(
            "--env-file", help="An env file of your own (repogym.toml format), applied after --specs."
        ),
    ] = None,
    json_out: Json = False,
) -> None:
    """Read tasks in any supported format and write them in repogym's form.

    Example: repogym tasks import swe-bench-lite.json --specs swebench --out tasks.jsonl
    """
    format_for_path(out)  # a bad suffix fails before the input is read
    files = [builtin_specs(specs)] if specs else []
    if env_file is not None:
        files.append(load_env_file(env_file))
    tasks = list(load_tasks(tasks_file))
    applied = None
    if files:
        applied = apply_specs(tasks, *files)
        tasks = applied.tasks
        _print_specs_summary(applied, specs or str(env_file))
    count = save_tasks(tasks, out)
    if json_out:
        print_json(
            {"out": str(out), "tasks": count, "specs": _specs_summary(applied, specs or str(env_file))}
        )
        return
    console.print(f"[green]wrote[/] {count} tasks to {escape(str(out))}", soft_wrap=True)


def _specs_summary(applied: SpecsApplied | None, name: str) -> dict[str, Any] | None:
    if applied is None:
        return None
    return {
        "source": name,
        "shaped": applied.shaped,
        "unmatched": applied.unmatched,
        "missing_pythons": missing_interpreters(applied.tasks),
    }


def _print_specs_summary(applied: SpecsApplied, name: str) -> None:
    console.print(f"env from {escape(name)}: {applied.shaped} of {len(applied.tasks)} tasks", soft_wrap=True)
    if applied.unmatched:
        shown = ", ".join(f"{key} ({n})" for key, n in sorted(applied.unmatched.items())[:8])
        more = f" and {len(applied.unmatched) - 8} more" if len(applied.unmatched) > 8 else ""
        console.print(Text(f"no spec for {shown}{more}: those tasks keep their own env"), style="yellow")
    missing = missing_interpreters(applied.tasks)
    for version, count in sorted(missing.items()):
        console.print(
            Text(
                f"{count} task(s) need Python {version}, which is not installed here ({installed_pythons()}): "
                "their environments will not build until it is (e.g. `pyenv install`)"
            ),
            style="yellow",
        )
