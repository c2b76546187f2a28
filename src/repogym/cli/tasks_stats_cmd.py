"""`repogym tasks stats`: tasks per repo and source, patch sizes, FAIL_TO_PASS / PASS_TO_PASS counts."""

from __future__ import annotations

import typer
from rich.table import Table
from rich.text import Text

from repogym.cli.common import add_command, console, print_json, subgroup
from repogym.cli.options import Json, Tasks
from repogym.dataset import load_tasks
from repogym.stats import Distribution, task_stats


def register(app: typer.Typer) -> None:
    add_command(subgroup(app, "tasks"), "stats", stats)


def _dist_row(table: Table, label: str, dist: Distribution) -> None:
    table.add_row(label, f"{dist.mean:.1f}", f"{dist.median:.0f}", str(dist.max))


def stats(tasks_file: Tasks, json_out: Json = False) -> None:
    """Tasks per repo and source, patch sizes, FAIL_TO_PASS / PASS_TO_PASS counts.

    Example: repogym tasks stats examples/tasks.jsonl
    """
    figures = task_stats(load_tasks(tasks_file))
    if json_out:
        print_json(figures.to_dict())
        return
    console.print(Text(f"{figures.count} tasks in {tasks_file}"), soft_wrap=True)
    repos = Table(title="tasks per repo")
    repos.add_column("repo")
    repos.add_column("tasks", justify="right")
    for repo, count in figures.per_repo.items():
        repos.add_row(Text(repo), str(count))
    sizes = Table(title="per task")
    for column in ("", "mean", "median", "max"):
        sizes.add_column(column, justify="right" if column else "left")
    _dist_row(sizes, "files in patch", figures.patch_files)
    _dist_row(sizes, "lines in patch", figures.patch_lines)
    _dist_row(sizes, "lines in test patch", figures.test_patch_lines)
    _dist_row(sizes, "FAIL_TO_PASS tests", figures.fail_to_pass)
    _dist_row(sizes, "PASS_TO_PASS tests", figures.pass_to_pass)
    console.print(repos)
    console.print(sizes)
    sources = ", ".join(f"{name}: {count}" for name, count in figures.per_source.items())
    console.print(f"sources: {sources or '-'}", markup=False)
    if figures.without_fail_to_pass:
        console.print(
            f"[yellow]{figures.without_fail_to_pass} task(s) have no FAIL_TO_PASS tests[/] "
            "(candidates not yet validated, or not verifiable)"
        )
