"""`repogym scrub`: secrets, personal data and licence gate over a task file (see `repogym.privacy`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from repogym.cli.common import add_command, console, err_console, print_json
from repogym.cli.options import Json, OutTasks, Tasks
from repogym.config import validate_config
from repogym.dataset import load_tasks, save_tasks
from repogym.files import write_json
from repogym.privacy import DEFAULT_ALLOWLIST, PiiKind, ScrubConfig, ScrubResult, scrub_tasks
from repogym.privacy import SecretPolicy as Policy  # (renamed in the library; this file keeps its local name)


def register(app: typer.Typer) -> None:
    add_command(app, "scrub", scrub_command)


def scrub_command(
    tasks_file: Tasks,
    out: OutTasks,
    policy: Annotated[Policy, typer.Option("--policy", help="drop: leave out tasks with secrets; redact: replace secrets with <REDACTED:type> where the patch still applies.")] = Policy.DROP,
    allow_license: Annotated[list[str] | None, typer.Option("--allow-license", help="SPDX id to accept besides the default permissive list (repeatable), e.g. GPL-3.0.")] = None,
    allow_unknown_license: Annotated[bool, typer.Option("--allow-unknown-license", help="Keep tasks whose repository licence cannot be determined.")] = False,
    pii: Annotated[list[str] | None, typer.Option("--pii", help="Personal data to redact: email, phone, ipv4 (repeatable; default all; 'none' for none).")] = None,
    report: Annotated[Path | None, typer.Option("--report", help="Write the JSON report here (dropped ids, findings by place and type, licences).")] = None,
    json_out: Json = False,
) -> None:  # fmt: skip
    """Drop or redact secrets, redact personal data, and refuse tasks from repositories whose licence is not allowed.

    Secret values are never written anywhere: the report names the task, field, line and detector only.
    --json prints the report as one JSON object.

    Examples:
      repogym scrub tasks.jsonl --out clean.jsonl --report scrub.json
      repogym scrub tasks.jsonl --out clean.jsonl --policy redact --allow-license GPL-3.0
    """
    kinds = [] if pii and [k.lower() for k in pii] == ["none"] else (pii or [k.value for k in PiiKind])
    config = validate_config(
        {
            "policy": policy.value,
            "license_allowlist": [*DEFAULT_ALLOWLIST, *(allow_license or [])],
            "allow_unknown_license": allow_unknown_license,
            "pii": kinds,
        },
        ScrubConfig,
        source="repogym scrub options",
    )
    tasks = load_tasks(tasks_file)
    with err_console.status(f"scrubbing {len(tasks)} tasks"):
        result = scrub_tasks(tasks, config)
    save_tasks(result.tasks, out)
    summary = {
        "input": str(tasks_file),
        "output": str(out),
        "config": config.model_dump(mode="json"),
        **result.to_report(),
    }
    if report is not None:
        write_json(report, summary)
    if json_out:
        print_json(summary)
        return
    _print_summary(result, out, report)


def _print_summary(result: ScrubResult, out: Path, report: Path | None) -> None:
    summary = Table(title=f"scrub: {len(result.tasks)} kept, {len(result.dropped)} dropped")
    summary.add_column("")
    summary.add_column("count", justify="right")
    for code, count in result.drop_counts.items():
        summary.add_row(f"dropped: {code}", str(count))
    for kind, count in result.counts.items():
        summary.add_row(f"found: {kind}", str(count))
    licences: dict[str, int] = {}
    for info in result.licenses.values():
        licences[info.spdx_id or "(unknown)"] = licences.get(info.spdx_id or "(unknown)", 0) + 1
    for spdx, count in sorted(licences.items()):
        summary.add_row(f"licence: {spdx}", str(count))
    console.print(summary)
    for dropped in result.dropped[:10]:
        console.print(
            f"[yellow]dropped[/] {escape(dropped.instance_id)}: {escape(dropped.reasons[0].message)}"
        )
    if len(result.dropped) > 10:
        console.print(f"... and {len(result.dropped) - 10} more (see the report)")
    console.print(
        f"[green]wrote[/] {len(result.tasks)} tasks to {out}" + (f", report to {report}" if report else "")
    )
