"""Console objects and small helpers shared by the CLI sub-apps."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from repogym.errors import RepogymError

# Emoji codes and highlighting would rewrite task text such as ":fire:" or numbers in patches.
# Print single lines (paths, patch lines, errors) with soft_wrap=True so they stay whole and
# copyable at any width; not as a console default, which would crop panels instead of wrapping.
console = Console(highlight=False, emoji=False)
err_console = Console(stderr=True, highlight=False, emoji=False)

#: Exit status of a user error (bad file, bad config, unknown name), as click uses for usage errors.
USER_ERROR_EXIT = 2

F = TypeVar("F", bound=Callable[..., Any])


def print_json(data: Any) -> None:
    """Machine-readable output on stdout, nothing else mixed in."""
    print(json.dumps(data, indent=2, ensure_ascii=False))


def print_error(exc: BaseException) -> None:
    """One red line on stderr; the message is printed as text, never read as rich markup.

    Messages quote user data (file names, instance ids, test ids) that may contain "[/x]".
    """
    err_console.print(Text.assemble(("error:", "bold red"), " ", str(exc)), soft_wrap=True)


def exits_on_error(command: F) -> F:
    """Make a command print a `RepogymError` as one line and exit with status 2, never a traceback.

    Put it under `@app.command(...)`; typer still reads the command's signature through it.
    """

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except RepogymError as exc:
            print_error(exc)
            raise typer.Exit(USER_ERROR_EXIT) from None

    return wrapper  # type: ignore[return-value]
