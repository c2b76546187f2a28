"""`repogym doctor`: what a task file or a repository needs from this machine, and what of it is missing."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from repogym.cli.common import NOTHING_PRODUCED_EXIT, add_command, console, print_json
from repogym.cli.options import Json, ReposDir
from repogym.dataset import load_tasks
from repogym.errors import RepogymError
from repogym.sandbox.syspackages import install_line
from repogym.validate.batch import partial_path
from repogym.validate.doctor import DoctorReport, diagnose_repo, diagnose_tasks


def register(app: typer.Typer) -> None:
    add_command(app, "doctor", doctor_command)


def doctor_command(
    target: Annotated[Path, typer.Argument(metavar="TASKS_OR_REPO", help="A task file, or a local git clone.", show_default=False)],
    commit: Annotated[str, typer.Option("--commit", help="For a clone: the commit to check.")] = "HEAD",
    repos_dir: ReposDir = None,
    partial: Annotated[Path | None, typer.Option("--partial", help="Validation's partial file whose failed builds to read (default: TASKS.partial.jsonl when it exists).")] = None,
    json_out: Json = False,
) -> None:  # fmt: skip
    """List what a task file (or a repository) needs from this machine: tools, Pythons, system packages.

    Tools: git and bubblewrap (repogym runs them), and the C compiler, pkg-config and cargo that builds find in
    the jail. Pythons: per repository, the installed one each task's commit allows (as validation chooses it),
    or why none does. System packages, as Debian names: those a recorded build failure shows missing
    (validation's partial file), a dry check of each commit's C, C++ and Cython sources for headers this
    machine lacks, and the tasks' `env.system_packages` that dpkg does not have (what SWE-bench's images
    apt-get; `tasks import --specs swebench` carries them). Nothing is built: `repogym env check` builds and
    names what a build probes for itself.

    Exit status 0 when nothing is missing; 1 when something is (the last line is the apt-get command); 2 on
    bad arguments.

    Examples:
      repogym doctor tasks.jsonl
      repogym doctor candidates.jsonl --partial tasks.jsonl.partial.jsonl --json
      repogym doctor ../flask --commit 2.0.0
    """
    if (target / ".git").exists():
        report = diagnose_repo(target, commit)
    elif commit != "HEAD":
        raise RepogymError(f"--commit {commit}: {target} is a task file, whose tasks name their own commits")
    else:
        recorded = partial or (partial_path(target) if partial_path(target).is_file() else None)
        report = diagnose_tasks(
            load_tasks(target), str(target), str(repos_dir) if repos_dir else None, recorded
        )
    if json_out:
        print_json(report.to_dict())
    else:
        _print_report(report)
    if not report.ok:
        sys.exit(NOTHING_PRODUCED_EXIT)


def _print_report(report: DoctorReport) -> None:
    mark = {True: "[green]ok[/]", False: "[red]missing[/]"}
    tools = Table(title="tools")
    for column in ("tool", "found", "Debian package", "needed for"):
        tools.add_column(column)
    for tool in report.tools:
        found = escape(tool.path) if tool.path else mark[False] if tool.required else "[yellow]not found[/]"
        tools.add_row(
            tool.name, found, tool.package, tool.needed_for + ("" if tool.required else " (if any)")
        )
    console.print(tools)
    console.print(f"Pythons installed: {', '.join(report.installed_pythons) or 'none'}")
    for repo in report.repos:
        console.print(
            f"\n[bold]{escape(repo.repo)}[/]: {repo.tasks} task(s), {repo.commits} commit(s) {mark[repo.ok]}"
        )
        if repo.unchecked:
            console.print(f"  [yellow]not checked:[/] {escape(repo.unchecked)}", soft_wrap=True)
        for python in repo.pythons:
            chosen = f"Python {python.python}" if python.python else "[red]no Python[/]"
            console.print(f"  {chosen} for {python.tasks} task(s): {escape(python.detail)}", soft_wrap=True)
        for need in repo.packages:
            package = need.package or "[yellow](unknown package)[/]"
            console.print(f"  [red]needs[/] {package}: {escape(need.need)} for {need.tasks} task(s), "
                          f"{need.source}: {escape(need.evidence)}", soft_wrap=True)  # fmt: skip
    if report.missing_packages:
        console.print(f"\ninstall: {install_line(report.missing_packages)}", soft_wrap=True)
    elif report.ok:
        console.print("\nnothing missing")
