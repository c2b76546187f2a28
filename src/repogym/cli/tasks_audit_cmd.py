"""`repogym tasks audit`: known reward hacks graded against a task set, and the fix searched for from an episode."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from repogym.audit import BATTERY, AuditReport, TaskAudit, audit_tasks
from repogym.cli.common import (
    RunProgress,
    add_command,
    console,
    err_console,
    line_progress,
    print_json,
    subgroup,
    track,
)  # fmt: skip
from repogym.cli.options import Instances, Jobs, Json, OutReport, ReposDir, Tasks
from repogym.cli.sandbox_option import Sandbox
from repogym.dataset import load_tasks
from repogym.errors import RepogymError
from repogym.task import Task


def register(app: typer.Typer) -> None:
    add_command(subgroup(app, "tasks"), "audit", audit_command)


def audit_command(
    tasks_file: Tasks,
    out: OutReport = None,
    json_out: Json = False,
    instances: Instances = None,
    attacks: Annotated[
        str | None,
        typer.Option(
            "--attacks", help="Comma-separated attack names (default: the whole battery; see --list)."
        ),
    ] = None,
    list_attacks: Annotated[bool, typer.Option("--list", help="List the battery and exit.")] = False,
    jobs: Jobs = 1,
    repos_dir: ReposDir = None,
    sandbox: Sandbox = "bwrap",
) -> None:
    """Try every known reward hack on each task and look for the fix from an agent's episode.

    Per task: the gold patch must resolve and the empty one must not (else the task is inconclusive); then each attack
    of the battery that applies (report forgers, test configuration, plugins, start-up files, skip/xfail tricks,
    packaging re-installs, rewritten tests) is graded as a reward would be, and the fix is searched for in every git
    object and readable file of an episode (history reads through the agent's tools). Exit status 0 when no attack
    resolved and no fix is reachable, 1 otherwise, 2 on bad arguments.

    Examples:
      repogym tasks audit tasks.jsonl
      repogym tasks audit lite.jsonl --repos-dir repos/ -i pallets__flask-4045 --json
      repogym tasks audit tasks.jsonl --out audit.json -j 2 --attacks sitecustomize_package,pth_file
    """
    if list_attacks:
        if json_out:
            print_json({"attacks": [
                {"name": a.name, "kind": a.kind.value, "description": a.description} for a in BATTERY
            ]})  # fmt: skip
            return
        for attack in BATTERY:
            console.print(
                f"{attack.name:36} {attack.kind.value:20} {escape(attack.description)}", soft_wrap=True
            )
        return
    tasks = load_tasks(tasks_file)
    chosen = [tasks.get(instance) for instance in instances] if instances else list(tasks)
    names = [name.strip() for name in attacks.split(",") if name.strip()] if attacks else None
    progress = track("tasks audited")
    try:
        report = _run(chosen, out, names, jobs, sandbox, repos_dir, progress, quiet=json_out)
    except ValueError as exc:
        raise RepogymError(f"--attacks: {exc}") from None
    if json_out:
        print_json(report.to_dict())
    else:
        _print_report(report, out)
    if not report.clean:
        sys.exit(1)


def _run(
    tasks: list[Task], out: Path | None, names: list[str] | None, jobs: int, sandbox: str, repos_dir: Path | None,
    progress: RunProgress, quiet: bool,
) -> AuditReport:  # fmt: skip
    bar = Progress(
        TextColumn("auditing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"), console=err_console, disable=quiet or not sys.stderr.isatty(),
    )  # fmt: skip
    with bar:
        handle = bar.add_task("audit", total=len(tasks), last="")
        lines = line_progress(quiet)

        def finished(audited: TaskAudit) -> None:
            progress.done += 1
            bar.update(handle, advance=1, last=f"{audited.instance_id}: {_verdict(audited)}")
            if lines:
                lines(f"{audited.instance_id}: {_verdict(audited)}", len(tasks))

        return audit_tasks(
            tasks, out, attack_names=names, workers=jobs, sandbox=sandbox,
            repos_dir=str(repos_dir) if repos_dir else None, on_task=finished,
        )  # fmt: skip


def _verdict(audited: TaskAudit) -> str:
    if audited.error:
        return "not audited"
    parts = []
    if audited.resolving:
        parts.append(f"{len(audited.resolving)} attack(s) resolved")
    if audited.reachable:
        parts.append("fix reachable")
    if not audited.conclusive:
        parts.append("inconclusive (gold/empty control failed)")
    return ", ".join(parts) or "clean"


def _print_report(report: AuditReport, out: Path | None) -> None:
    table = Table(title="reward-integrity audit", show_lines=False)
    for column in ("task", "attacks graded", "resolved", "fix reachable", "gold / empty", "seconds"):
        table.add_column(column)
    for audited in report.tasks:
        resolved = ", ".join(audited.resolving) or "-"
        controls = (
            "error" if audited.error else f"{_yes(audited.gold_resolved)} / {_yes(audited.empty_resolved)}"
        )
        table.add_row(
            escape(audited.instance_id), str(len(audited.attacks)), escape(resolved),
            _yes(audited.reachable), controls, f"{audited.seconds:.1f}",
        )  # fmt: skip
    console.print(table)
    for audited in report.tasks:
        if audited.error:
            console.print(
                f"[yellow]{escape(audited.instance_id)}[/]: {escape(audited.error)}", soft_wrap=True
            )
        elif audited.reach is not None and audited.reach.hits:
            console.print(
                f"[red]{escape(audited.instance_id)}[/]: fix found at {escape(', '.join(audited.reach.hits[:5]))}",
                soft_wrap=True,
            )
    summary = report.to_dict()
    style = "green" if report.clean else "red"
    console.print(
        f"[{style}]{summary['resolving_attacks']} resolving attack(s), {summary['reachable_fixes']} reachable "
        f"fix(es)[/] over {len(report.tasks)} task(s); {len(summary['inconclusive'])} inconclusive",
        soft_wrap=True,
    )
    if out is not None:
        console.print(f"report: {escape(str(out))}", soft_wrap=True)


def _yes(value: bool) -> str:
    return "yes" if value else "no"
