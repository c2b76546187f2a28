"""`repogym tasks import`: read tasks in any supported format, fill their envs from specs, write them.

SWE-rebench's instances are recognised by their own recipe (`install_config`), which becomes each one's env
(repogym.data.swerebench) before any --specs or --env-file is applied.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.text import Text

from repogym.cli.common import add_command, console, print_json, subgroup
from repogym.cli.options import Json, OutTasks, Tasks
from repogym.data import SpecsApplied, apply_specs, builtin_specs, installed_pythons, missing_interpreters
from repogym.data.swerebench import InstallConfigsApplied, apply_install_configs, refusal_message
from repogym.dataset import format_for_path, load_tasks, save_tasks
from repogym.envfile import load_env_file
from repogym.errors import DatasetError
from repogym.task import Task


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
    skip_refused: Annotated[
        bool,
        typer.Option(
            "--skip-refused",
            help="Leave out the SWE-rebench instances whose install_config cannot be honoured here (each is "
            "listed with why) instead of refusing the whole file.",
        ),
    ] = False,
    json_out: Json = False,
) -> None:
    """Read tasks in any supported format and write them in repogym's form.

    SWE-rebench's instances get their env from their own install_config; an instance whose recipe needs
    what this machine cannot do without docker or root (a Debian package it lacks, conda) refuses the file,
    naming the instance and the key (exit 2), unless --skip-refused.

    Examples:
      repogym tasks import swe-bench-lite.json --specs swebench --out tasks.jsonl
      repogym tasks import swe-rebench.parquet --out tasks.jsonl --skip-refused
    """
    format_for_path(out)  # a bad suffix fails before the input is read
    files = [builtin_specs(specs)] if specs else []
    if env_file is not None:
        files.append(load_env_file(env_file))
    recipes = apply_install_configs(load_tasks(tasks_file))
    if recipes.refused and not skip_refused:
        raise DatasetError(refusal_message(str(tasks_file), recipes.refused))
    tasks = recipes.tasks
    if recipes.shaped or recipes.refused:
        _print_recipes_summary(recipes)
    applied = None
    if files:
        applied = apply_specs(tasks, *files)
        tasks = applied.tasks
        _print_specs_summary(applied, specs or str(env_file))
    if files or recipes.shaped:
        _print_missing_pythons(tasks)
    count = save_tasks(tasks, out)
    if json_out:
        print_json(
            {
                "out": str(out),
                "tasks": count,
                "install_config": _recipes_summary(recipes, tasks),
                "specs": _specs_summary(applied, specs or str(env_file)),
            }
        )
        return
    console.print(f"[green]wrote[/] {count} tasks to {escape(str(out))}", soft_wrap=True)


def _recipes_summary(recipes: InstallConfigsApplied, tasks: list[Task]) -> dict[str, Any] | None:
    if not (recipes.shaped or recipes.refused):
        return None
    return {
        "shaped": recipes.shaped,
        "left_out": recipes.left_out,
        "refused": [
            {"instance_id": r.instance_id, "key": r.key, "why": r.why, "message": str(r)}
            for r in recipes.refused
        ],
        "missing_pythons": missing_interpreters(tasks),
    }


def _print_recipes_summary(recipes: InstallConfigsApplied) -> None:
    total = recipes.shaped + len(recipes.refused)
    console.print(
        f"env from install_config (SWE-rebench): {recipes.shaped} of {total} instances", soft_wrap=True
    )
    if recipes.left_out:
        console.print(
            Text(
                f"{recipes.left_out} instance(s) ask apt-get for packages this machine has: those steps are "
                "left out (metadata install_config_left_out)"
            ),
            soft_wrap=True,
        )
    if recipes.refused:
        console.print(Text(f"left out {len(recipes.refused)} instance(s) (--skip-refused):"), style="yellow")
        for refusal in recipes.refused:
            console.print(Text(f"  {refusal}"), style="yellow", soft_wrap=True)


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


def _print_missing_pythons(tasks: list[Task]) -> None:
    missing = missing_interpreters(tasks)
    for version, count in sorted(missing.items()):
        console.print(
            Text(
                f"{count} task(s) need Python {version}, which is not installed here ({installed_pythons()}): "
                "their environments will not build until it is (e.g. `pyenv install`)"
            ),
            style="yellow",
        )
