"""`repogym grade`: grade one patch, or a whole SWE-bench predictions file, in the sandbox."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from repogym.cli import common
from repogym.cli.common import add_command, print_json, track
from repogym.cli.options import Jobs, Json, OutReport, Renamed, ReposDir, Tasks
from repogym.cli.sandbox_option import Sandbox
from repogym.dataset import TaskSet, load_tasks
from repogym.errors import RepogymError
from repogym.grading.batch import grade_predictions
from repogym.grading.grade import grade
from repogym.grading.judge import skip_rule_for
from repogym.grading.report import GradeResult, Outcome, SkipRule
from repogym.patches import parse_patch
from repogym.predictions import load_predictions
from repogym.sandbox.base import Limits
from repogym.sandbox.workspace import delete_discarded_detached


def register(app: typer.Typer) -> None:
    add_command(app, "grade", grade_command, Renamed("--workers", "--jobs"))


def grade_command(
    tasks_file: Tasks,
    instance: Annotated[str | None, typer.Option("--instance", "-i", help="Grade one task: its instance_id.")] = None,
    patch: Annotated[Path | None, typer.Option("--patch", help="With --instance: the candidate patch (a unified diff file).")] = None,
    gold: Annotated[bool, typer.Option("--gold", help="With --instance: grade the task's own (gold) patch.")] = False,
    empty: Annotated[bool, typer.Option("--empty", help="With --instance: grade an empty patch.")] = False,
    predictions: Annotated[Path | None, typer.Option("--predictions", "-p", help="SWE-bench predictions JSONL to grade.")] = None,
    out: OutReport = None,
    jobs: Jobs = 1,
    repos_dir: ReposDir = None,
    sandbox: Sandbox = "bwrap",
    json_out: Json = False,
    skip_rule: Annotated[str, typer.Option("--skip-rule", help="How a skipped required test counts: strict (never a pass, as rewards count it), swebench (SWE-bench's verdict), or auto (swebench for tasks imported from SWE-bench data, else strict).")] = "auto",
    timeout: Annotated[float, typer.Option("--timeout", min=1.0, help="Seconds each command of a grade may run (the test run above all) before it is killed and the grade is TIMEOUT; the per-process CPU limit is raised to match. SWE-bench's harness default: 1800.")] = 1800.0,
    allow_network: Annotated[bool, typer.Option("--allow-network", help="Let the test run reach the network (closed by default, as for every command of an episode; the result and the report say when it was open): for imported tasks whose tests call out, e.g. requests' (a TESTS_NEED_NETWORK grade names them).")] = False,
) -> None:  # fmt: skip
    """Apply a patch and the task's tests in the sandbox; report SWE-bench's FULL / PARTIAL / NO.

    One task (--instance ID with --patch FILE, --gold or --empty), or a whole SWE-bench predictions file
    (--predictions FILE --out REPORT.json; re-running with the same --out resumes). --json prints the
    grade, or the report, as one JSON object.

    Exit status 0 whenever grading itself worked (resolved or not), 1 when the grader could not
    grade (environment build failed, infrastructure error), 2 on bad arguments or files.

    Examples:
      repogym grade tasks.jsonl --instance acme__calc-12 --gold
      repogym grade tasks.jsonl --instance acme__calc-12 --patch fix.diff --json
      repogym grade tasks.jsonl --predictions preds.jsonl --out report.json -j 2
      repogym grade tasks.jsonl --instance sympy__sympy-18057 --gold --timeout 3600
      repogym grade lite.json --instance psf__requests-2317 --gold --allow-network
    """
    rule = _skip_rule(skip_rule)
    limits = Limits.for_timeout(timeout)
    tasks = load_tasks(tasks_file)
    repos = str(repos_dir) if repos_dir else None
    if predictions is not None:
        if instance or patch or gold or empty:
            raise RepogymError("--predictions grades a whole file: drop --instance/--patch/--gold/--empty")
        if out is None:
            raise RepogymError(
                "--predictions needs --out REPORT.json (re-running with the same --out resumes)"
            )
        _grade_file(tasks, predictions, out, jobs, sandbox, repos, rule, limits, json_out, allow_network)
        return
    if not instance:
        raise RepogymError(
            "give --instance ID with one of --patch FILE / --gold / --empty, or --predictions FILE"
        )
    if sum(bool(x) for x in (patch, gold, empty)) != 1:
        raise RepogymError("give exactly one of --patch FILE, --gold, --empty")
    # One grade, then this process ends: its exit need not wait while the disk frees the episode's layer.
    delete_discarded_detached()
    task = tasks.get(instance)
    if gold:
        text = task.patch
    elif patch is not None:
        text = read_patch_file(patch)
    else:
        text = ""  # --empty
    # The spinner only where someone sees it: it draws nothing into a pipe.
    showing = sys.stderr.isatty()
    spinner = (
        common.err_console.status(f"grading {instance} in the {sandbox} sandbox...") if showing else None
    )
    with spinner or contextlib.nullcontext():
        result = grade(
            task,
            text,
            sandbox=sandbox,
            repos_dir=repos,
            limits=limits,
            skip_rule=rule or skip_rule_for(task),
            allow_network=allow_network,
        )
    if json_out:
        print_json(result.to_dict())
    else:
        _print_result(result)
    if result.outcome in (Outcome.INFRA_ERROR, Outcome.ENV_BUILD_FAILED):
        sys.exit(1)


def _skip_rule(name: str) -> SkipRule | None:
    """--skip-rule's value: None for auto (decided per task)."""
    if name == "auto":
        return None
    try:
        return SkipRule(name)
    except ValueError:
        raise RepogymError(f"--skip-rule {name!r}: give one of auto, strict, swebench") from None


def read_patch_file(path: Path) -> str:
    """A candidate patch file's text; anything that is not a unified diff is a user error, never an empty patch.

    An empty (or blank) file is the empty patch on purpose: it is graded, and does not resolve.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise RepogymError(f"--patch {path}: no such patch file") from None
    except IsADirectoryError:
        raise RepogymError(f"--patch {path}: is a folder, not a patch file") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RepogymError(
            f"--patch {path}: not UTF-8 text (byte {exc.start} is {data[exc.start]:#04x}); a patch is a unified "
            "diff as `git diff` writes it (binary files included: `git diff --binary`)"
        ) from None
    if text.strip() and parse_patch(text) is None:
        first = text.strip().splitlines()[0][:60]
        raise RepogymError(
            f"--patch {path}: not a unified diff (it starts {first!r}; a diff has '--- a/FILE', '+++ b/FILE' "
            "and '@@' lines: make one with `git diff > fix.diff`)"
        )
    return text


def _print_result(result: GradeResult) -> None:
    console = common.console
    colour = "green" if result.resolved else "red"
    console.print(
        f"[bold]{result.instance_id}[/]: [{colour}]{result.outcome.value}[/] (status {result.status.value})"
    )
    if result.detail:
        console.print(result.detail, markup=False)
    table = Table(show_header=True)
    table.add_column("test")
    table.add_column("kind")
    table.add_column("status")
    for kind, statuses in (("FAIL_TO_PASS", result.fail_to_pass), ("PASS_TO_PASS", result.pass_to_pass)):
        for test, status in statuses.items():
            shown = status.value if status else "MISSING"
            style = "green" if status is not None and status.ok else "red"
            table.add_row(test, kind, f"[{style}]{shown}[/]")
    console.print(table)
    if result.ignored_paths:
        console.print(f"ignored candidate changes: {', '.join(result.ignored_paths)}", markup=False)
    if result.patch_applied_with and result.patch_applied_with != "git apply":
        console.print(f"[yellow]patch needed a fuzzier apply:[/] {result.patch_applied_with}")
    if result.report and result.report.log_path:
        console.print(f"test log: {result.report.log_path}", markup=False)
    if result.network_open:
        console.print("[yellow]the test run could reach the network (--allow-network)[/]")


def _grade_file(
    tasks: TaskSet,
    predictions_file: Path,
    out: Path,
    jobs: int,
    sandbox: str,
    repos: str | None,
    rule: SkipRule | None,
    limits: Limits,
    json_out: bool,
    allow_network: bool = False,
) -> None:
    console, err_console = common.console, common.err_console

    predictions = load_predictions(predictions_file)
    graded = track("predictions graded")
    resolved = 0
    progress = Progress(
        TextColumn("grading"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("resolved {task.fields[resolved]}"),
        console=err_console,
    )
    with progress:
        bar = progress.add_task("grade", total=None, rate="", resolved="0")

        def _start(todo: int, done: int) -> None:
            progress.update(bar, total=todo)
            if done:
                err_console.print(f"resuming: {done} already graded in {out}.partial.jsonl")

        def _done(result: GradeResult) -> None:
            nonlocal resolved
            resolved += result.resolved
            graded.done += 1
            elapsed = progress.tasks[0].elapsed or 1e-9
            completed = progress.tasks[0].completed + 1
            progress.update(
                bar, advance=1, resolved=str(resolved), rate=f"{60 * completed / elapsed:.1f}/min"
            )

        report = grade_predictions(
            tasks,
            predictions,
            out,
            workers=jobs,
            sandbox=sandbox,
            repos_dir=repos,
            skip_rule=rule,
            limits=limits,
            on_result=_done,
            on_start=_start,
            allow_network=allow_network,
        )
    if report.unknown:
        err_console.print(f"[yellow]{len(report.unknown)} prediction(s) name no task in {tasks.origin}[/]")
    summary = report.to_dict()
    if json_out:
        print_json(summary)
        return
    table = Table(title=f"{predictions_file} -> {out}")
    table.add_column("")
    table.add_column("instances", justify="right")
    for key in ("submitted", "completed", "resolved", "unresolved", "empty_patch", "error"):
        table.add_row(key.replace("_", " "), str(summary[f"{key}_instances"]))
    console.print(table)
    outcomes = ", ".join(f"{k}: {v}" for k, v in sorted(summary["outcomes"].items()))
    console.print(f"outcomes: {outcomes or '-'}")
    if summary["network_open_ids"]:
        console.print(
            f"[yellow]{len(summary['network_open_ids'])} grade(s) ran their tests with the network open[/]"
        )
