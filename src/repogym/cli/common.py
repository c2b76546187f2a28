"""Console objects and small helpers shared by the CLI sub-apps."""

from __future__ import annotations

import functools
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from repogym.errors import RepogymError

if TYPE_CHECKING:
    from rich.console import Console

    console: Console
    err_console: Console

_consoles: dict[str, Console] = {}
_consoles_lock = threading.Lock()


def __getattr__(name: str) -> Console:
    """`console` (stdout) and `err_console` (stderr), made on first use: importing rich costs 15-25 ms of CPU
    and a `repogym grade --json` prints nothing through it (start-up, issue 10)."""
    if name not in ("console", "err_console"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _console(name)


def _console(name: str) -> Console:
    with _consoles_lock:
        if name not in _consoles:
            from rich.console import Console

            # Emoji codes and highlighting would rewrite task text such as ":fire:" or numbers in patches.
            # Print single lines (paths, patch lines, errors) with soft_wrap=True so they stay whole and
            # copyable at any width; not as a console default, which would crop panels instead of wrapping.
            _consoles[name] = Console(stderr=name == "err_console", highlight=False, emoji=False)
        return _consoles[name]


#: Exit status of a user error (bad file, bad config, unknown name), as click uses for usage errors.
USER_ERROR_EXIT = 2
#: Exit status of a stage that ran but produced nothing (no candidates, no tasks, no attempt answered).
NOTHING_PRODUCED_EXIT = 1
#: Exit status after Ctrl-C, as shells report SIGINT.
INTERRUPTED_EXIT = 130

F = TypeVar("F", bound=Callable[..., Any])


def print_json(data: Any) -> None:
    """Machine-readable output on stdout, nothing else mixed in."""
    print(json.dumps(data, indent=2, ensure_ascii=False))


def print_error(exc: BaseException) -> None:
    """One red line on stderr; the message is printed as text, never read as rich markup.

    Messages quote user data (file names, instance ids, test ids) that may contain "[/x]".
    """
    from rich.text import Text

    _console("err_console").print(Text.assemble(("error:", "bold red"), " ", str(exc)), soft_wrap=True)


@dataclass
class RunProgress:
    """What a long command has finished so far, for the message Ctrl-C prints (see `track`)."""

    what: str
    """What is counted, e.g. 'candidates validated'."""
    done: int = 0
    resumable: bool = True
    """True when re-running the same command skips what is done."""


_tracked: list[RunProgress] = []


def track(what: str, resumable: bool = True) -> RunProgress:
    """Register the command's progress counter; bump `.done` as work lands (from any thread)."""
    progress = RunProgress(what, resumable=resumable)
    _tracked[:] = [progress]
    return progress


def interrupted_message() -> str:
    """The line printed after Ctrl-C: what was done and whether re-running resumes.

    >>> _tracked.clear(); interrupted_message()
    'interrupted'
    >>> track("candidates validated").done = 3; interrupted_message()
    'interrupted: 3 candidates validated and saved; rerun the same command to resume'
    """
    if not _tracked:
        return "interrupted"
    progress = _tracked[0]
    if progress.resumable:
        return f"interrupted: {progress.done} {progress.what} and saved; rerun the same command to resume"
    return f"interrupted: {progress.done} {progress.what}; nothing was written"


def nothing_produced(message: str) -> typer.Exit:
    """Say that a stage produced nothing and return the exit to raise (status 1).

    Scripts chaining stages must not go on as if a file had been written.
    """
    from rich.text import Text

    message_text = Text.assemble(("nothing produced:", "bold yellow"), " ", message)
    _console("err_console").print(message_text, soft_wrap=True)
    return typer.Exit(NOTHING_PRODUCED_EXIT)


def absolute_paths(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Every Path argument made absolute before anything runs (a later chdir, or a git command run inside
    another folder, must not change what a relative path means).

    >>> absolute_paths({"out": Path("x"), "n": 2, "files": [Path("a")]})["out"].is_absolute()
    True
    """

    def fix(value: Any) -> Any:
        if isinstance(value, Path):
            return Path(os.path.abspath(value))
        if isinstance(value, list | tuple) and value and all(isinstance(v, Path) for v in value):
            return type(value)(Path(os.path.abspath(v)) for v in value)
        return value

    return {key: fix(value) for key, value in kwargs.items()}


def exits_on_error(command: F) -> F:
    """The CLI's contract for one command, wrapped around it once:

    - Path arguments are made absolute before the command runs;
    - a `RepogymError` prints as one line and exits with status 2, never a traceback;
    - Ctrl-C prints what was done and how to resume (see `track`) and exits with status 130.

    Put it under `@app.command(...)`; typer still reads the command's signature through it.
    """

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _tracked.clear()
        try:
            return command(*args, **absolute_paths(kwargs))
        except RepogymError as exc:
            print_error(exc)
            raise typer.Exit(USER_ERROR_EXIT) from None
        except KeyboardInterrupt:
            from rich.text import Text

            _console("err_console").print(Text(interrupted_message()), soft_wrap=True)
            raise typer.Exit(INTERRUPTED_EXIT) from None

    return wrapper  # type: ignore[return-value]


def check_sandbox(name: str) -> str:
    """A typer callback for --sandbox: an unknown backend is a usage error listing the known ones."""
    from repogym.errors import UnknownNameError
    from repogym.sandbox.runtime import sandboxes

    try:
        sandboxes.get(name)
    except UnknownNameError as exc:
        raise typer.BadParameter(str(exc)) from None
    return name
