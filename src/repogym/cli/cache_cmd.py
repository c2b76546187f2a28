"""`repogym cache du|prune`: where repogym's cache lives, what it holds, and how to shrink it."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from repogym.cli.common import add_command, add_group, console, print_json
from repogym.cli.options import Json
from repogym.sandbox.cache import cache_root
from repogym.sandbox.usage import AREAS, DEFAULT_PRUNE, disk_usage, parse_age, prune

HELP = (
    "Where repogym keeps mirrors, checkouts, environments and logs, and how to shrink it.\n\n"
    "The root is $REPOGYM_CACHE, else $XDG_CACHE_HOME/repogym, else ~/.cache/repogym.\n\n"
    "Example: repogym cache du"
)


def register(app: typer.Typer) -> None:
    group = add_group(app, "cache", HELP)
    add_command(group, "du", du_command)
    add_command(group, "prune", prune_command)


def _size(count: int) -> str:
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def du_command(json_out: Json = False) -> None:
    """Disk used by each part of the cache (a file hardlinked from several places counts once).

    Example: repogym cache du
    """
    usage = disk_usage()
    total = sum(area.bytes for area in usage)
    if json_out:
        print_json(
            {
                "root": str(cache_root()),
                "bytes": total,
                "areas": {
                    a.name: {"bytes": a.bytes, "entries": a.entries, "path": str(a.path)} for a in usage
                },
            }
        )
        return
    table = Table(title=f"repogym cache: {cache_root()}")
    for column, justify in (("area", "left"), ("entries", "right"), ("size", "right"), ("holds", "left")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for area in usage:
        table.add_row(area.name, str(area.entries), _size(area.bytes), area.description)
    table.add_row("[bold]total[/]", "", f"[bold]{_size(total)}[/]", "")
    console.print(table)


def prune_command(
    area: Annotated[list[str] | None, typer.Option("--area", "-a", help=f"What to prune (repeatable): {', '.join(AREAS)}. Default: {', '.join(DEFAULT_PRUNE)} (scratch only).")] = None,
    older_than: Annotated[str, typer.Option("--older-than", help="Only entries not modified for this long: 30m, 12h, 7d, 2w.")] = "1d",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would go; remove nothing.")] = False,
    json_out: Json = False,
) -> None:  # fmt: skip
    """Remove cache entries not used lately; everything removed is rebuilt when a task needs it again.

    By default only scratch goes: episode layers left by killed runs, old test logs, and blobs no
    checkout links to. Environments, checkouts and mirrors go only when named with --area; prune
    those while no other repogym command is running (entries being built are always skipped).

    Examples:
      repogym cache prune --dry-run
      repogym cache prune --area envs --area uv-cache --older-than 14d
    """
    results = prune(area or DEFAULT_PRUNE, parse_age(older_than), dry_run=dry_run)
    if json_out:
        print_json({
            "root": str(cache_root()), "dry_run": dry_run,
            "areas": [
                {"area": r.area, "removed": r.removed, "freed_bytes": r.freed_bytes, "skipped_in_use": r.skipped_in_use}
                for r in results
            ],
        })  # fmt: skip
        return
    table = Table(title=f"repogym cache prune{' (dry run)' if dry_run else ''}: {cache_root()}")
    for column in ("area", "removed", "freed", "skipped (in use)"):
        table.add_column(column, justify="left" if column == "area" else "right")
    for result in results:
        removed = "-" if result.area == "uv-cache" else str(result.removed)
        table.add_row(result.area, removed, _size(result.freed_bytes), str(result.skipped_in_use))
    console.print(table)
