"""`repogym tasks ...`: import, export, inspect task datasets."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.panel import Panel
from rich.table import Table

from repogym.cli.common import console, print_json
from repogym.dataset import Style, load_tasks, save_tasks
from repogym.patches import diff_stats
from repogym.stats import Distribution, task_stats

app = typer.Typer(help="Import, export and inspect task datasets.", no_args_is_help=True)


@app.command("import")
def import_tasks(
    file: Path = typer.Argument(..., help="Task file: JSONL, JSON array (SWE-bench) or parquet; detected from content."),
    out: Path = typer.Option(..., "--out", "-o", help="Output file; its suffix (.jsonl, .json, .parquet) picks the format."),
) -> None:
    """Read tasks in any supported format and write them in repogym's form.

    Example: repogym tasks import swe-bench-lite.json --out tasks.parquet
    """
    tasks = load_tasks(file)
    count = save_tasks(tasks, out)
    console.print(f"[green]wrote[/] {count} tasks to {out}")


@app.command("export")
def export_tasks(
    file: Path = typer.Argument(..., help="Task file in any supported format."),
    out: Path = typer.Option(..., "--out", "-o", help="Output file (.jsonl, .json or .parquet)."),
    format: Style = typer.Option(Style.SWEBENCH, "--format", "-f", help="swebench: exactly SWE-bench's fields; repogym: all fields."),
) -> None:
    """Write tasks in SWE-bench's exact form (test lists JSON-encoded), for SWE-bench's own harness.

    Example: repogym tasks export tasks.jsonl --format swebench --out tasks.swebench.json
    """
    tasks = load_tasks(file)
    count = save_tasks(tasks, out, style=format)
    console.print(f"[green]wrote[/] {count} tasks to {out} ({format.value} form)")


def _dist_row(table: Table, label: str, dist: Distribution) -> None:
    table.add_row(label, f"{dist.mean:.1f}", f"{dist.median:.0f}", str(dist.max))


@app.command("stats")
def stats(
    file: Path = typer.Argument(..., help="Task file in any supported format."),
    json_out: bool = typer.Option(False, "--json", help="Print the figures as JSON instead of tables."),
) -> None:
    """Tasks per repo and source, patch sizes, FAIL_TO_PASS / PASS_TO_PASS counts.

    Example: repogym tasks stats examples/tasks.jsonl
    """
    figures = task_stats(load_tasks(file))
    if json_out:
        print_json(figures.to_dict())
        return
    repos = Table(title=f"{figures.count} tasks in {file}")
    repos.add_column("repo")
    repos.add_column("tasks", justify="right")
    for repo, count in figures.per_repo.items():
        repos.add_row(repo, str(count))
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
    console.print(f"sources: {sources or '-'}")
    if figures.without_fail_to_pass:
        console.print(
            f"[yellow]{figures.without_fail_to_pass} task(s) have no FAIL_TO_PASS tests[/] "
            "(candidates not yet validated, or not verifiable)"
        )


@app.command("show")
def show(
    instance_id: str = typer.Argument(..., help="The task's instance_id."),
    tasks_file: Path = typer.Option(..., "--tasks", "-t", help="Task file in any supported format."),
    json_out: bool = typer.Option(False, "--json", help="Print the task as one JSON object."),
) -> None:
    """Print one task: problem statement, patches, tests and environment.

    Example: repogym tasks show sample__calc-3 --tasks examples/tasks.jsonl
    """
    task = load_tasks(tasks_file).get(instance_id)
    if json_out:
        print_json(task.to_dict())
        return
    code, tests = diff_stats(task.patch), diff_stats(task.test_patch)
    header = (
        f"[bold]{task.instance_id}[/]  repo {task.repo} @ {task.base_commit[:12]}  source {task.source.value}"
        f"{'  licence ' + task.license if task.license else ''}"
    )
    console.print(header)
    console.print(Panel(task.problem_statement or "(empty)", title="problem statement", expand=False))
    if task.hints_text:
        console.print(Panel(task.hints_text, title="hints", expand=False))
    console.print(f"patch: {code.files} file(s), +{code.added} -{code.removed}")
    console.print(task.patch, markup=False, highlight=False)
    console.print(f"test patch: {tests.files} file(s), +{tests.added} -{tests.removed}")
    console.print(f"FAIL_TO_PASS ({len(task.FAIL_TO_PASS)}): {', '.join(task.FAIL_TO_PASS) or '-'}", markup=False)
    console.print(f"PASS_TO_PASS ({len(task.PASS_TO_PASS)}): {', '.join(task.PASS_TO_PASS) or '-'}", markup=False)
    env = task.env
    console.print(
        f"env: python {env.python or '(host)'}, parser {env.log_parser}, "
        f"install {list(env.install) or '(detect)'}, test_cmd {env.test_cmd or '(default)'}",
        markup=False,
    )



