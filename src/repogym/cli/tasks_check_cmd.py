"""`repogym tasks check`: every task's gold and empty controls graded, per repository, with SWE-bench's reading."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from repogym.cli.common import add_command, console, err_console, line_progress, print_json, subgroup, track
from repogym.cli.options import Instances, Jobs, Json, OutDir, ReposDir, Tasks
from repogym.cli.sandbox_option import Sandbox
from repogym.dataset import load_tasks
from repogym.errors import RepogymError
from repogym.grading.controls import ControlGrade, ControlsReport, check_tasks
from repogym.grading.swebench_reading import load_reader
from repogym.sandbox.base import Limits


def register(app: typer.Typer) -> None:
    add_command(subgroup(app, "tasks"), "check", check_command)


def check_command(
    tasks_file: Tasks,
    out: OutDir,
    jobs: Jobs = 1,
    instances: Instances = None,
    repos: Annotated[
        list[str] | None,
        typer.Option("--repo", help="Only the tasks of this repository, owner/name (repeatable; default: all)."),
    ] = None,
    repos_dir: ReposDir = None,
    sandbox: Sandbox = "bwrap",
    timeout: Annotated[float, typer.Option("--timeout", min=1.0, help="Seconds each command of a grade may run (as for repogym grade). SWE-bench's harness default: 1800.")] = 1800.0,
    allow_network: Annotated[bool, typer.Option("--allow-network", help="Let the test runs reach the network (closed by default; the report says so): for imported tasks whose tests call out.")] = False,
    swebench: Annotated[bool, typer.Option("--swebench/--no-swebench", help="Re-read every saved log with SWE-bench's own parser and rule where the swebench package is installed (pip install 'repogym\\[swebench]').")] = True,
    json_out: Json = False,
) -> None:  # fmt: skip
    """Grade every task's gold patch (it must resolve) and an empty patch (it must not); one line per repository.

    A `tasks` verb, not a `grade` option: it checks the task file and the environments it builds, where
    `repogym grade` judges a candidate's patch. The table (tasks, graded, gold resolves, empty resolves, named
    causes, SWE-bench's parser agreeing, time) is printed and written to OUT/report.md and OUT/report.json;
    every grade is kept in OUT/grades.jsonl and its whole test log under OUT/logs/, and re-running with the same
    --out resumes. With SWE-bench installed, its own log parser and FULL rule re-read every saved log.

    Exit status 0 when every gold patch resolves, no empty patch does and SWE-bench's reading agrees wherever it
    read; 1 otherwise (the table names the causes); 2 on bad arguments or files.

    Examples:
      repogym tasks check tasks.jsonl --out runs/check
      repogym tasks check lite.json --out runs/lite --repos-dir repos/ --repo pallets/flask -j 2
      repogym tasks check lite.json --out runs/lite --repos-dir repos/ --allow-network --json
    """
    tasks = load_tasks(tasks_file)
    chosen = [tasks.get(instance) for instance in instances] if instances else list(tasks)
    if repos:
        known = {task.repo for task in tasks}
        unknown = sorted(set(repos) - known)
        if unknown:
            raise RepogymError(f"--repo {', '.join(unknown)}: no task of {tasks_file} is of it; its repositories: "
                               f"{', '.join(sorted(known))}")  # fmt: skip
        chosen = [task for task in chosen if task.repo in set(repos)]
    reader = load_reader() if swebench else (None, "--no-swebench")
    if swebench and reader[0] is None:
        err_console.print(f"[yellow]{escape(reader[1])}[/]", soft_wrap=True)
    progress = track("controls graded")
    bar = Progress(
        TextColumn("checking"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
        TextColumn("{task.fields[last]}"), console=err_console, disable=json_out or not sys.stderr.isatty(),
    )  # fmt: skip
    with bar:
        handle = bar.add_task("check", total=None, last="")
        lines = line_progress(json_out)
        todo_count = [0]

        def started(todo: int, done: int) -> None:
            todo_count[0] = todo
            bar.update(handle, total=todo)
            if done:
                err_console.print(f"resuming: {done} grades already in {escape(str(out))}", soft_wrap=True)

        def graded(grade: ControlGrade) -> None:
            progress.done += 1
            bar.update(handle, advance=1, last=f"{grade.instance_id} {grade.kind}: {grade.outcome.value}")
            if lines:
                lines(f"{grade.instance_id} {grade.kind}: {grade.outcome.value}", todo_count[0])

        report = check_tasks(
            chosen, out, workers=jobs, sandbox=sandbox, repos_dir=str(repos_dir) if repos_dir else None,
            limits=Limits.for_timeout(timeout), allow_network=allow_network, reader=reader,
            on_start=started, on_grade=graded,
        )  # fmt: skip
    if json_out:
        print_json(report.to_dict())
    else:
        _print_report(report, out)
    if not report.clean:
        sys.exit(1)


def _print_report(report: ControlsReport, out: Path) -> None:
    table = Table(title=f"gold and empty controls ({len(report.tasks)} tasks)")
    for column in ("repo", "tasks", "graded", "gold resolves", "empty resolves", "named causes", "SWE-bench agrees",
                   "time"):  # fmt: skip
        table.add_column(column)
    for row in report.summaries():
        causes = ", ".join(f"{name} {count}" for name, count in row.causes.items()) or "-"
        agrees = f"{row.swebench_agrees} of {row.swebench_read}" if report.swebench_version else "-"
        table.add_row(
            escape(row.repo), str(row.tasks), str(row.graded), str(row.gold_resolves), str(row.empty_resolves),
            escape(causes), agrees, f"{row.seconds:.0f} s",
        )  # fmt: skip
    console.print(table)
    for row in report.to_dict()["unexpected"]:
        console.print(
            f"[yellow]{escape(row['instance_id'])} {row['kind']}[/]: {row['outcome']}: "
            f"{escape(' '.join(row['detail'].split())[:300])}",
            soft_wrap=True,
        )
    if report.allow_network:
        console.print("[yellow]the test runs could reach the network (--allow-network)[/]")
    if not report.swebench_version:
        console.print(
            f"SWE-bench's parser did not read the logs: {escape(report.swebench_missing)}", soft_wrap=True
        )
    console.print(
        f"report: {escape(str(out / 'report.md'))}, {escape(str(out / 'report.json'))}", soft_wrap=True
    )
