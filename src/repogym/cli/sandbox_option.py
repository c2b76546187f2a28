"""`--sandbox`: the sandbox backend a command runs repository code in, checked against the registry.

Apart from the other shared options (options.py) because checking a name imports the sandbox runtime
(about a quarter of a second of start-up), which only the commands that run code in a sandbox need.
"""

from __future__ import annotations

from typing import Annotated

import typer

from repogym.errors import UnknownNameError
from repogym.sandbox.runtime import sandboxes


def check_sandbox(name: str) -> str:
    """A typer callback for --sandbox: an unknown backend is a usage error listing the known ones."""
    try:
        sandboxes.get(name)
    except UnknownNameError as exc:
        raise typer.BadParameter(str(exc)) from None
    return name


Sandbox = Annotated[
    str,
    typer.Option(
        "--sandbox",
        callback=check_sandbox,
        help="bwrap (isolated) or local (NO isolation: the repository's code runs on this machine as you).",
    ),
]
