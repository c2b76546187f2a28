"""`repogym cache du`: the disk each part of repogym's cache uses."""

from __future__ import annotations

import typer
from rich.table import Table

from repogym.cli.common import add_command, console, human_size, print_json, subgroup
from repogym.cli.options import Json
from repogym.sandbox.cache import cache_root
from repogym.sandbox.usage import disk_usage


def register(app: typer.Typer) -> None:
    add_command(subgroup(app, "cache"), "du", du_command)


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
        table.add_row(area.name, str(area.entries), human_size(area.bytes), area.description)
    table.add_row("[bold]total[/]", "", f"[bold]{human_size(total)}[/]", "")
    console.print(table)
