"""Console objects, the JSON output, and the one way a command module adds its commands (`add_command`)."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TextIO, TypeVar

import typer
from rich.console import Console
from rich.text import Text
from typer.core import TyperGroup

from repogym.cli.options import OldSpelling, command_class, expand_option_groups
from repogym.errors import RepogymError

if TYPE_CHECKING:
    console: Console
    err_console: Console

_consoles: dict[str, Console] = {}
_consoles_lock = threading.Lock()


def __getattr__(name: str) -> Console:
    """`console` (stdout) and `err_console` (stderr), made on first use: a console reads the terminal's width
    (COLUMNS) when it is made."""
    if name not in ("console", "err_console"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _console(name)


def _console(name: str) -> Console:
    with _consoles_lock:
        if name not in _consoles:
            # Emoji codes and highlighting would rewrite task text such as ":fire:" or numbers in patches.
            # Print single lines (paths, patch lines, errors) with soft_wrap=True so they stay whole and
            # copyable at any width; not as a console default, which would crop panels instead of wrapping.
            # No file is given: a console writes to whatever sys.stdout / sys.stderr is at the time (see
            # `exits_on_error`'s JSON mode).
            _consoles[name] = Console(stderr=name == "err_console", highlight=False, emoji=False)
        return _consoles[name]


#: Exit status of a user error (bad file, bad config, unknown name), as click uses for usage errors.
USER_ERROR_EXIT = 2
#: Exit status of a stage that ran but produced nothing (no candidates, no tasks, no attempt answered).
NOTHING_PRODUCED_EXIT = 1
#: Exit status after Ctrl-C, as shells report SIGINT.
INTERRUPTED_EXIT = 130

F = TypeVar("F", bound=Callable[..., Any])


#: Where `print_json` writes while a command runs in JSON mode: the stdout the command was started with
#: (sys.stdout itself points at stderr then; see `exits_on_error`).
_json_stdout: TextIO | None = None


def print_json(data: Any) -> None:
    """Machine-readable output on stdout, nothing else mixed in; flushed, for a process that goes on (serve)."""
    stream = _json_stdout or sys.stdout
    stream.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    stream.flush()


@contextlib.contextmanager
def json_mode(enabled: bool) -> Iterator[None]:
    """While a `--json` command runs, everything printed to stdout (rich tables, library messages, a
    trainer's logs) goes to stderr; `print_json` alone writes to the real stdout.

    Python's sys.stdout is redirected, not file descriptor 1: a child process that writes to an inherited
    stdout is not caught (the library captures its children's output)."""
    global _json_stdout
    if not enabled:
        yield
        return
    _json_stdout = sys.stdout
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        _json_stdout = None


def print_error(exc: BaseException) -> None:
    """One red line on stderr; the message is printed as text, never read as rich markup.

    Messages quote user data (file names, instance ids, test ids) that may contain "[/x]".
    """
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


def line_progress(quiet: bool) -> Callable[..., None] | None:
    """Where stderr is not a terminal (a log file, CI), a long command's progress as one line per finished item.

    The rich bar draws nothing there, so without these lines a job of hours shows nothing until it ends. None
    when stderr is a terminal (the bar shows it) or `quiet` (--json). Each line: `[done/total] text`.
    """
    if quiet or sys.stderr.isatty():
        return None
    counter = {"done": 0}
    lock = threading.Lock()

    def emit(text: str, total: int | None = None) -> None:
        with lock:
            counter["done"] += 1
            of = f"/{total}" if total else ""
            print(f"[{counter['done']}{of}] {text}", file=sys.stderr, flush=True)

    return emit


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
    message_text = Text.assemble(("nothing produced:", "bold yellow"), " ", message)
    _console("err_console").print(message_text, soft_wrap=True)
    return typer.Exit(NOTHING_PRODUCED_EXIT)


def human_size(count: int) -> str:
    """A byte count as people read it.

    >>> human_size(512), human_size(3 * 1024**2), human_size(5 * 1024**4)
    ('512 B', '3.0 MiB', '5120.0 GiB')
    """
    value = float(count)
    for unit in ("B", "KiB", "MiB"):
        if value < 1024:
            return f"{value:.0f} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


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
    """The CLI's contract for one command, wrapped around it once (by `add_command`):

    - Path arguments are made absolute before the command runs;
    - with `--json` (the parameter `json_out`), stdout carries the one JSON object and nothing else;
    - a `RepogymError` prints as one line and exits with status 2, never a traceback;
    - Ctrl-C prints what was done and how to resume (see `track`) and exits with status 130.

    typer still reads the command's signature through it.
    """

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _tracked.clear()
        try:
            with json_mode(bool(kwargs.get("json_out"))):
                return command(*args, **absolute_paths(kwargs))
        except RepogymError as exc:
            print_error(exc)
            raise typer.Exit(USER_ERROR_EXIT) from None
        except KeyboardInterrupt:
            _console("err_console").print(Text(interrupted_message()), soft_wrap=True)
            raise typer.Exit(INTERRUPTED_EXIT) from None

    return wrapper  # type: ignore[return-value]


#: Set on every command function `add_command` registered (tests/cli/test_vocabulary.py checks them all).
REGISTERED = "__repogym_command__"


def add_command(app: typer.Typer, name: str, function: Callable[..., Any], *old: OldSpelling) -> None:
    """Add `function` to `app` as the command `name`: the one way a command module adds a command.

    The command gets the CLI's contract (`exits_on_error`), its option groups expanded
    (`options.expand_option_groups`), and its old spellings `old` kept working with a deprecation note.
    """
    command = exits_on_error(expand_option_groups(function))
    setattr(command, REGISTERED, True)
    app.command(name, cls=command_class(old))(command)


def add_group(app: typer.Typer, name: str, help: str, default: str | None = None) -> typer.Typer:
    """Add a command group `name` to `app` and return it, for the group's module to add its commands to.

    With `default`, a first word that names none of the group's commands (and is not --help) runs the
    command `default`: `repogym eval TASKS ...` is `repogym eval run TASKS ...`.
    """
    if default:
        cls = type("GroupWithDefault", (_GroupWithDefault,), {"default": default})
        group = typer.Typer(help=help, no_args_is_help=True, cls=cls)
    else:
        group = typer.Typer(help=help, no_args_is_help=True)
    app.add_typer(group, name=name)
    return group


def subgroup(app: typer.Typer, name: str) -> typer.Typer:
    """The group `name` that `add_group` added to `app` (for a module that adds a command to another's group)."""
    for info in app.registered_groups:
        if info.name == name and info.typer_instance is not None:
            return info.typer_instance
    raise LookupError(f"no command group {name!r} in this app: register its module first")


class _GroupWithDefault(TyperGroup):
    """A group that runs `default` when the first argument names none of its commands."""

    default: ClassVar[str] = ""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = [self.default, *args]
        return super().parse_args(ctx, args)
