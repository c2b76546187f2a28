"""`repogym validate`: prove mined candidates with their tests in the sandbox; write the tasks and a funnel."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from repogym.cli.common import add_command, console, err_console, nothing_produced, print_json, track
from repogym.cli.options import Jobs, Json, OutTasks, Renamed, ReposDir
from repogym.cli.sandbox_option import Sandbox
from repogym.config import validate_config
from repogym.dataset import TaskSet, load_tasks
from repogym.synth.issues import make_issue_writer
from repogym.validate import (
    CandidateOutcome,
    ValidateConfig,
    ValidationRun,
    partial_path,
    validate_candidates,
)
from repogym.validate.setup_agent import make_setup_agent


def register(app: typer.Typer) -> None:
    add_command(app, "validate", validate_command, Renamed("--workers", "--jobs"))


def validate_command(
    candidates_file: Annotated[Path, typer.Argument(metavar="CANDIDATES", help="Candidate tasks from `repogym mine` or `repogym synth` (JSONL, JSON or parquet).", show_default=False)],
    out: OutTasks,
    jobs: Jobs = 1,
    runs: Annotated[int, typer.Option("--runs", min=1, help="Runs before and after the gold patch; tests whose outcome changes are dropped as flaky.")] = 2,
    repos_dir: ReposDir = None,
    sandbox: Sandbox = "bwrap",
    no_scrub: Annotated[bool, typer.Option("--no-scrub", help="Skip the privacy stage (secrets, personal data, licence allowlist).")] = False,
    funnel: Annotated[Path | None, typer.Option("--funnel", help="Funnel report JSON (default: OUT.funnel.json).")] = None,
    log_dir: Annotated[Path | None, typer.Option("--log-dir", help="Keep test logs here, one folder per candidate (default: repogym's cache).")] = None,
    issue_writer: Annotated[str, typer.Option("--issue-writer", help="Synthetic tasks: openai:MODEL writes issue-style statements (default: from the failing tests' output).")] = "",
    base_url: Annotated[str, typer.Option("--base-url", help="With --issue-writer / --setup-agent: the endpoint's base URL ($OPENAI_BASE_URL).")] = "",
    setup_agent: Annotated[str, typer.Option("--setup-agent", help="openai:MODEL proposes an env override for candidates whose env build or gold run fails; kept only if it validates.")] = "",
    setup_proposals: Annotated[int, typer.Option("--setup-proposals", min=1, max=10, help="With --setup-agent: overrides asked for and tried per candidate.")] = 2,
    setup_timeout: Annotated[float, typer.Option("--setup-timeout", min=1.0, help="With --setup-agent: seconds to wait for one answer.")] = 120.0,
    env_file: Annotated[Path | None, typer.Option("--env-file", help="Env overrides (repogym.toml format), applied after each repository's own repogym.toml.")] = None,
    no_recipe: Annotated[bool, typer.Option("--no-recipe", help="Do not rebuild each commit's environment from its own files (lock/pin files, test deps, Python, packages as of the commit date).")] = False,
    json_out: Json = False,
) -> None:  # fmt: skip
    """Run each candidate's test files before and after its gold patch; keep candidates with FAIL_TO_PASS tests.

    Resumable: outcomes are saved to OUT.partial.jsonl as they finish; running the same command
    again skips candidates already done (Ctrl-C says how many are saved). The privacy stage runs
    before writing unless --no-scrub. Exit status 1 when no candidate became a task (OUT is not
    written; the funnel says why each was dropped), 2 on bad arguments.
    Synthetic candidates (`repogym synth`) run the suite's own tests chosen by coverage, share one clean
    run per repo state, need a PASS_TO_PASS too, and get a statement from their failing tests' output.

    Each candidate's environment comes from its own commit (lock and pin files, test dependencies,
    the Python its files and date allow, everything else as of the commit's day) unless a
    repository's repogym.toml or --env-file says otherwise; the written task records it all.

    Examples:
      repogym validate candidates.jsonl --out tasks.jsonl -j 2
      repogym validate candidates.jsonl --out tasks.jsonl --env-file overrides.toml
      repogym validate candidates.jsonl --out tasks.jsonl --runs 3 --funnel funnel.json --no-scrub
      repogym validate synth.jsonl --out tasks.jsonl --issue-writer openai:qwen --base-url http://127.0.0.1:8000/v1
      repogym validate candidates.jsonl --out tasks.jsonl --setup-agent openai:qwen --base-url http://127.0.0.1:8000/v1

    --setup-agent: for a candidate whose environment build or gold run fails, the model reads the
    repository's README, CI and packaging files and the failing log and proposes an env override
    (env-file fields); it is tried in the sandbox and kept only if the candidate then validates
    (gold passes, empty still fails). At most --setup-proposals per candidate; the funnel counts them.
    """
    config = validate_config(
        {
            "runs": runs,
            "workers": jobs,
            "sandbox": sandbox,
            "repos_dir": str(repos_dir) if repos_dir else None,
            "scrub": not no_scrub,
            "log_dir": str(log_dir) if log_dir else None,
            "env_file": str(env_file) if env_file else None,
            "recipes": not no_recipe,
            "setup_max_proposals": setup_proposals,
        },
        ValidateConfig,
        source="repogym validate options",
    )
    if sandbox == "local":
        err_console.print(
            "[bold yellow]warning:[/] --sandbox local runs the repositories' tests with NO isolation"
        )
    writer = make_issue_writer(issue_writer, base_url) if issue_writer else None
    agent = make_setup_agent(setup_agent, base_url, timeout_s=setup_timeout) if setup_agent else None
    candidates = load_tasks(candidates_file)
    funnel_path = funnel or out.with_name(out.name + ".funnel.json")
    run = _with_progress(candidates, out, config, funnel_path, writer, agent)
    if json_out:
        print_json(_summary(run, out, funnel_path))
    else:
        _print_summary(run, out, funnel_path)
    if not run.tasks:
        raise nothing_produced(
            f"none of {len(candidates)} candidate(s) became a task; {out} was not written (funnel: {funnel_path})"
        )


def _with_progress(
    candidates: TaskSet, out: Path, config: ValidateConfig, funnel_path: Path, writer=None, agent=None
) -> ValidationRun:  # type: ignore[no-untyped-def]
    progress = Progress(
        TextColumn("validating"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TextColumn("validated {task.fields[validated]}"),
        console=err_console,
    )
    validated = 0
    saved = track("candidates validated")
    with progress:
        bar = progress.add_task("validate", total=None, rate="", validated="0")

        def on_start(todo: int, done: int) -> None:
            progress.update(bar, total=todo)
            saved.done = done
            if done:
                progress.console.print(f"resuming: {done} candidate(s) already done in {partial_path(out)}")

        def on_result(outcome: CandidateOutcome) -> None:
            nonlocal validated
            validated += outcome.validated
            saved.done += 1
            state = progress.tasks[0]
            completed = state.completed + 1
            rate = 60.0 * completed / (state.elapsed or 1e-9)
            progress.update(bar, advance=1, validated=str(validated), rate=f"{rate:.1f}/min")

        return validate_candidates(
            candidates,
            out,
            config,
            funnel_path=funnel_path,
            on_start=on_start,
            on_result=on_result,
            statement_writer=writer,
            setup_agent=agent,
        )


def _summary(run: ValidationRun, out: Path, funnel_path: Path) -> dict[str, Any]:
    """--json: the tasks written (none: OUT was not written), the funnel, and what the run used."""
    return {
        "out": str(out) if run.tasks else None,
        "tasks": len(run.tasks),
        "validated_now": run.validated_now,
        "elapsed_s": round(run.elapsed_s, 3),
        "funnel_path": str(funnel_path),
        "funnel": run.funnel.to_dict(),
        "environments": run.environments.to_dict() if run.environments is not None else None,
        "setup_agent": run.setup_agent,
        "scrubbed": run.scrub is not None,
    }


def _print_summary(run: ValidationRun, out: Path, funnel_path: Path) -> None:
    for applied in run.env_files:
        console.print(  # soft_wrap: a path the user copies is never broken across lines
            f"env file {applied.source}: applied to {applied.tasks} candidate(s)",
            markup=False,
            soft_wrap=True,
        )
    console.print(run.funnel.table(title=f"validation funnel ({funnel_path})"))
    if run.funnel.by_method:
        console.print(run.funnel.method_table())
    for reason in run.funnel.reasons:
        # The first example's reason, so a user sees why without opening the JSON (env build log tails).
        lines = [line for line in reason.example_detail.splitlines() if line.strip()]
        lines = lines if len(lines) <= 3 else [lines[0], *lines[-2:]]  # the cause, then the log's end
        if reason.count and lines:
            console.print(f"{reason.name} ({reason.examples[0]}): " + " | ".join(lines), markup=False)
    if run.environments is not None and run.environments.count:
        usage = run.environments.to_dict()
        console.print(
            f"environments: {usage['distinct']} distinct, {usage['disk_mb']} MB "
            f"(shared by the {run.validated_now} candidate(s) validated now)",
            markup=False,
        )
    if run.setup_agent is not None:
        counts = run.setup_agent
        kinds = ", ".join(f"{kind} {n}" for kind, n in counts["by_kind"].items()) or "none"
        console.print(
            f"setup agent: tried {counts['tried']} candidate(s), kept {counts['kept']}; "
            f"{counts['proposals']} proposal(s): {kinds}",
            markup=False,
        )
    rate = f"; {run.candidates_per_minute:.1f} candidates/min" if run.validated_now else ""
    if run.tasks:
        console.print(f"wrote {len(run.tasks)} task(s) to {out} in {run.elapsed_s:.1f} s{rate}", markup=False)
    if run.scrub is None:
        console.print("[yellow]privacy stage skipped (--no-scrub): do not share these tasks unreviewed[/]")
