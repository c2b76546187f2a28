"""The `repogym` command: one typer sub-app per pipeline stage.

Commands are thin: they parse arguments, call the library, print a rich
summary and write machine-readable output. Errors from `repogym.errors`
become one red line and exit status 2, never a traceback.
"""

from __future__ import annotations

import sys

import typer

from repogym import __version__
from repogym.cli import (
    cache_cmd,
    config_cmd,
    data_cmd,
    env_cmd,
    eval_cmd,
    grade_cmd,
    mine_cmd,
    model_cmd,
    quickstart_cmd,
    report_cmd,
    rollout_cmd,
    samples_cmd,
    scrub_cmd,
    tasks_cmd,
    train_cmd,
    validate_cmd,
)
from repogym.cli.common import console, print_error
from repogym.errors import RepogymError

app = typer.Typer(
    name="repogym",
    help=(
        "Turn your repositories into verifiable tasks, sandboxed gyms and RL training for code agents.\n\n"
        "Example: repogym quickstart    (sample repos -> mine -> validate -> grade)"
    ),
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)
app.add_typer(tasks_cmd.app, name="tasks")
app.add_typer(config_cmd.app, name="config")


# One module per stage, each adding its commands; listed in pipeline order for `repogym --help`.
for _stage in (
    quickstart_cmd,
    samples_cmd,
    mine_cmd,
    validate_cmd,
    scrub_cmd,
    grade_cmd,
    env_cmd,
    rollout_cmd,
    data_cmd,
    model_cmd,
    train_cmd,
    eval_cmd,
    report_cmd,
    cache_cmd,
):
    _stage.register(app)


def _version(value: bool) -> None:
    if value:
        console.print(f"repogym {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """repogym: mine tasks from git history, run them in sandboxes, grade, roll out and train.

    Example: repogym tasks stats examples/tasks.jsonl
    """


def _one_line_warning(message, category, filename, lineno, line=None) -> str:  # type: ignore[no-untyped-def]
    return f"warning: {message}\n"


def main() -> None:
    import warnings

    warnings.formatwarning = _one_line_warning  # a CLI user needs the message, not our source line
    try:
        app()
    except RepogymError as exc:
        print_error(exc)
        sys.exit(2)
