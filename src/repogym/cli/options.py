"""The CLI's shared vocabulary: one declaration per option that several commands take, and the old spellings.

Every command spells a shared idea the same way: the task file is the first argument (`TASKS`), output goes
to `--out/-o`, parallelism is `--jobs/-j`, `--json` prints one JSON object on stdout and nothing else.
tests/cli/test_vocabulary.py walks the whole command tree and fails on a command that drifts.

Guarantees:
- an alias here is the only declaration of its option (names, short flag, help); a command gives the default;
- an old spelling listed with a command (`Renamed`, `NowFirstArgument`) keeps working, and using it prints one
  line, `warning: ... is deprecated ...`, on stderr; the command itself only ever sees the new spelling.

Not guaranteed: an old spelling written as the value of another option (`--instance --workers`) is read as
the old spelling; no command has such values.

This module is imported by every command, so it imports nothing but typer (start-up: `repogym grade --json`).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar

import typer
from typer.core import TyperCommand

Tasks = Annotated[
    Path,
    typer.Argument(
        metavar="TASKS",
        help="Task file: JSONL, JSON array (SWE-bench) or parquet; the format is read from the content.",
        show_default=False,
    ),
]
OutTasks = Annotated[
    Path,
    typer.Option(
        "--out", "-o", help="Output task file; its suffix (.jsonl, .json, .parquet) picks the format."
    ),
]
OutDir = Annotated[
    Path, typer.Option("--out", "-o", help="Output folder; re-running the same command with it resumes.")
]
OutReport = Annotated[
    Path | None, typer.Option("--out", "-o", help="Also write the result to this JSON file.")
]
Jobs = Annotated[
    int,
    typer.Option(
        "--jobs",
        "-j",
        min=1,
        help="How many run at once (tasks, attempts or candidates; each in its own sandbox).",
    ),
]
Json = Annotated[
    bool,
    typer.Option(
        "--json", help="Print the result as one JSON object on stdout; messages and progress go to stderr."
    ),
]
ReposDir = Annotated[
    Path | None,
    typer.Option("--repos-dir", help="Folder of owner__name clones, for tasks without repo_source."),
]
Seed = Annotated[int, typer.Option("--seed", help="Same seed and inputs: the same output.")]
InstanceId = Annotated[str, typer.Argument(metavar="ID", help="The task's instance_id.", show_default=False)]
ModelDir = Annotated[
    Path,
    typer.Argument(metavar="DIR", help="The model folder (a Hugging Face model folder).", show_default=False),
]
Resamples = Annotated[int, typer.Option("--bootstrap", help="Bootstrap resamples for the 95% intervals.")]
BootstrapSeed = Annotated[int, typer.Option("--bootstrap-seed", help="Seed of the bootstrap.")]
Instances = Annotated[
    list[str] | None, typer.Option("--instance", "-i", help="Only this task (repeatable; default: all).")
]


# -- old spellings ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Renamed:
    """An option that has a new name; `--workers 2` is read as `--jobs 2`."""

    old: str
    new: str

    def rewrite(self, args: list[str]) -> tuple[list[str], bool]:
        out, used = [], False
        for arg in _options_part(args):
            name, eq, value = arg.partition("=")
            if name == self.old:
                out.append(f"{self.new}={value}" if eq else self.new)
                used = True
            else:
                out.append(arg)
        return out + args[len(out) :], used

    def note(self, command_path: str) -> str:
        return f"warning: {command_path} {self.old} is deprecated; use {self.new}"


@dataclass(frozen=True)
class NowFirstArgument:
    """An option whose value is the command's first argument now: `play ID --tasks FILE` is `play FILE ID`."""

    old: tuple[str, ...]
    """The option's old names, e.g. ("--tasks", "-t")."""
    usage: str
    """The command's arguments as they are written now, e.g. "TASKS ID"."""

    def rewrite(self, args: list[str]) -> tuple[list[str], bool]:
        options = _options_part(args)
        out: list[str] = []
        values: list[str] = []
        index = 0
        while index < len(options):
            name, eq, value = options[index].partition("=")
            if name in self.old and (eq or index + 1 < len(options)):
                values.append(value if eq else options[index + 1])
                index += 1 if eq else 2
                continue
            out.append(options[index])
            index += 1
        return values + out + args[len(options) :], bool(values)

    def note(self, command_path: str) -> str:
        return (
            f"warning: {command_path} {self.old[0]} is deprecated; its value is the first argument now: "
            f"{command_path} {self.usage}"
        )


def _options_part(args: list[str]) -> list[str]:
    """The arguments before a `--` (after it, everything is an argument, never an option)."""
    return args[: args.index("--")] if "--" in args else list(args)


OldSpelling = Renamed | NowFirstArgument


class _WithOldSpellings(TyperCommand):
    """A command that reads its old spellings as the new ones, saying so on stderr."""

    old_spellings: ClassVar[tuple[OldSpelling, ...]] = ()

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        for spelling in self.old_spellings:
            args, used = spelling.rewrite(args)
            if used:
                typer.echo(spelling.note(ctx.command_path), err=True)
        return super().parse_args(ctx, args)


def command_class(old_spellings: Sequence[OldSpelling]) -> type[TyperCommand]:
    """The click command class of a command that keeps `old_spellings` working (typer's own without any)."""
    if not old_spellings:
        return TyperCommand
    return type("CommandWithOldSpellings", (_WithOldSpellings,), {"old_spellings": tuple(old_spellings)})


# -- option groups ---------------------------------------------------------------------------------------


class OptionGroup:
    """Base of a frozen dataclass whose fields are options (Annotated, with defaults) that several commands
    share: a command parameter annotated with the dataclass stands for all of its options, and the command
    receives one instance. Declared once, the options cannot drift apart between the commands."""


#: Every parameter of an expanded command is keyword-only: typer passes them all by name, and a group's
#: options (with defaults) may then sit before the command's own required ones.
_BY_NAME = inspect.Parameter.KEYWORD_ONLY


def _group_fields(group: type[OptionGroup]) -> list[inspect.Parameter]:
    hints = typing.get_type_hints(group, include_extras=True)
    return [
        inspect.Parameter(field.name, _BY_NAME, annotation=hints[field.name], default=_default(field))
        for field in dataclasses.fields(group)  # type: ignore[arg-type]
    ]


def _default(field: dataclasses.Field) -> Any:
    """The field's default as a signature holds it: none at all for a field without one (typer then marks the
    option required, where dataclasses' MISSING marker would be printed as its default)."""
    return inspect.Parameter.empty if field.default is dataclasses.MISSING else field.default


def expand_option_groups(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` as typer should see it: each parameter annotated with an `OptionGroup` replaced by the
    group's options, which are gathered back into one instance when the command runs.

    >>> @dataclass(frozen=True)
    ... class Window(OptionGroup):
    ...     lines: Annotated[int, typer.Option("--lines")] = 3
    >>> def show(name: str, window: Window) -> str:
    ...     return f"{name}: {window.lines}"
    >>> expanded = expand_option_groups(show)
    >>> list(inspect.signature(expanded).parameters)
    ['name', 'lines']
    >>> expanded(name="a", lines=5)
    'a: 5'
    """
    hints = typing.get_type_hints(function, include_extras=True)
    groups = {
        name: hint for name, hint in hints.items() if isinstance(hint, type) and issubclass(hint, OptionGroup)
    }
    if not groups:
        return function
    params: list[inspect.Parameter] = []
    members: dict[str, list[str]] = {}
    for param in inspect.signature(function).parameters.values():
        if param.name in groups:
            fields = _group_fields(groups[param.name])
            members[param.name] = [field.name for field in fields]
            params += fields
        else:
            params.append(param.replace(kind=_BY_NAME, annotation=hints.get(param.name, param.annotation)))

    @functools.wraps(function)
    def gathered(**kwargs: Any) -> Any:
        for name, group in groups.items():
            kwargs[name] = group(**{field: kwargs.pop(field) for field in members[name]})
        return function(**kwargs)

    del gathered.__wrapped__  # typer must read the signature below, not the function's own
    gathered.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    gathered.__annotations__ = {param.name: param.annotation for param in params}
    return gathered
