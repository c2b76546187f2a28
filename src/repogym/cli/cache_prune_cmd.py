"""`repogym cache prune`: cache entries not used lately removed (scratch only unless areas are named)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from repogym.cli.common import add_command, console, human_size, print_json, subgroup
from repogym.cli.options import Json
from repogym.sandbox.cache import cache_root
from repogym.sandbox.usage import AREAS, DEFAULT_PRUNE, parse_age, prune


def register(app: typer.Typer) -> None:
    add_command(subgroup(app, "cache"), "prune", prune_command)


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
        table.add_row(result.area, removed, human_size(result.freed_bytes), str(result.skipped_in_use))
    console.print(table)
