"""`repogym synth methods`: the bug-injection methods and what each does."""

from __future__ import annotations

import typer
from rich.table import Table

from repogym.cli.common import add_command, console, print_json, subgroup
from repogym.cli.options import Json
from repogym.synth.methods import METHODS


def register(app: typer.Typer) -> None:
    add_command(subgroup(app, "synth"), "methods", methods_command)


def methods_command(json_out: Json = False) -> None:
    """List the bug-injection methods (the names recorded in metadata["method"]).

    Example: repogym synth methods
    """
    rows = []
    for name in METHODS.names():
        method = METHODS.get(name)
        kind = "class" if method.class_level else ("single-line" if method.single_line else "structural")
        rows.append({"name": name, "kind": kind, "description": method.description})
    if json_out:
        print_json({"methods": rows})
        return
    table = Table(title="bug-injection methods")
    for column in ("method", "kind", "what it does"):
        table.add_column(column)
    for row in rows:
        table.add_row(row["name"], row["kind"], row["description"])
    console.print(table)
