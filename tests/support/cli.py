"""The CLI run in-process, as a user's command line would reach it (typer's test runner)."""

from __future__ import annotations

from typer.testing import CliRunner, Result

from repogym.cli import app


def cli(*args: str) -> Result:
    """`repogym ARGS`; an exception the CLI does not turn into an exit status propagates to the test."""
    return CliRunner().invoke(app, list(args), catch_exceptions=False)
