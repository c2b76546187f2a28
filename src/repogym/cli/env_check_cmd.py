"""`repogym env check`: does a repository's environment build at a commit, and does its suite collect and run."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from repogym.cli.common import NOTHING_PRODUCED_EXIT, add_command, console, err_console, print_json, subgroup
from repogym.cli.options import Json
from repogym.cli.sandbox_option import Sandbox
from repogym.validate.envcheck import EnvCheck, check_environment


def register(app: typer.Typer) -> None:
    add_command(subgroup(app, "env"), "check", check_command)


def check_command(
    repo: Annotated[Path, typer.Argument(metavar="REPO", help="A local git clone of the repository.", show_default=False)],
    commit: Annotated[str, typer.Option("--commit", help="The commit to check (any name git resolves in REPO).")] = "HEAD",
    env_file: Annotated[Path | None, typer.Option("--env-file", help="Env overrides (repogym.toml format), applied after the repository's own repogym.toml.")] = None,
    sandbox: Sandbox = "bwrap",
    timeout: Annotated[float, typer.Option("--timeout", min=1.0, help="Seconds the test suite may run.")] = 1800.0,
    json_out: Json = False,
) -> None:  # fmt: skip
    """Build REPO's environment at a commit, then collect and run its whole test suite in the sandbox.

    The environment is the one `repogym validate` would build for a candidate at that commit (the commit's
    lock and pin files, test dependencies, the Python its metadata and date allow, REPO's repogym.toml), built
    once and cached. With --json: one object with built, collected, tests, passed, failed, seconds and cause
    ("<name>: <detail>", null when built and collected), plus cause_kind, system_packages, skipped, commit,
    python, log, complete, suite and suite_source. A build that needs a C library or program this machine lacks
    names the Debian package. The suite is the project's own: the paths its CI workflow or tox.ini hands pytest
    (suite, suite_source) unless its pytest configuration sets testpaths. A suite the --timeout cut after pytest
    collected it cleanly is collected, with complete false and no test counted as passed or failed.

    Exit status 0 when the environment built and the suite collected (failing tests are counted, not an
    error); 1 when it did not (the cause says why); 2 when REPO is not a git clone or --commit not one of its
    commits.

    Examples:
      repogym env check ../flask
      repogym env check ../flask --commit 2.0.0 --json
      repogym env check ../calc --env-file overrides.toml --timeout 600
    """
    if sandbox == "local":
        err_console.print(
            "[bold yellow]warning:[/] --sandbox local runs the repository's tests with NO isolation"
        )
    err_console.print(f"checking {escape(str(repo))} at {escape(commit)} ...", soft_wrap=True)
    result = check_environment(repo, commit, sandbox=sandbox, timeout_s=timeout, env_file=env_file)
    if json_out:
        print_json(result.to_dict())
    else:
        _print_result(result)
    if not result.ok:
        sys.exit(NOTHING_PRODUCED_EXIT)


def _print_result(result: EnvCheck) -> None:
    mark = {True: "[green]yes[/]", False: "[red]no[/]"}
    console.print(
        f"[bold]{escape(result.repo)}[/] at {result.commit[:12]}"
        + (f", Python {result.python}" if result.python else "")
    )
    console.print(
        f"  built: {mark[result.built]}   collected: {mark[result.collected]}   {result.seconds:.1f} s"
    )
    if result.suite:
        console.print(
            f"  suite: {escape(' '.join(result.suite))} (as {escape(result.suite_source)} runs pytest)"
        )
    if result.built and not result.complete:
        console.print(
            f"  tests: {result.tests} collected; [yellow]the time limit cut the run[/]: none counted as passed "
            "or failed (raise --timeout for the counts)"
        )
    elif result.built:
        console.print(
            f"  tests: {result.tests} ({result.passed} passed, {result.failed} failed, {result.skipped} skipped)"
        )
    cause = result.cause_text()
    if cause:
        console.print(f"  [yellow]cause:[/] {escape(cause)}", soft_wrap=True)
    if result.log:
        console.print(f"  log: {escape(result.log)}", soft_wrap=True)
