"""`repogym synth ...`: inject bugs into covered functions (the default command), combine them, rewrite statements."""

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
from rich.table import Table

from repogym.cli.common import (
    add_command,
    add_group,
    console,
    err_console,
    nothing_produced,
    print_json,
    track,
)
from repogym.cli.options import Json, OutTasks, Seed, Tasks
from repogym.cli.sandbox_option import Sandbox
from repogym.config import validate_config
from repogym.dataset import load_tasks, save_tasks
from repogym.errors import ConfigError
from repogym.files import write_json
from repogym.synth.combine import combine
from repogym.synth.config import SynthConfig
from repogym.synth.issues import make_issue_writer
from repogym.synth.methods import METHODS
from repogym.synth.synth import synthesize
from repogym.validate.statement import rewrite_statements

HELP = (
    "Synthetic tasks: inject bugs into the functions the tests cover (SWE-smith style), combine them.\n\n"
    "`repogym synth REPO ...` is short for `repogym synth inject REPO ...`.\n\n"
    "Example: repogym synth ../calc --out candidates.jsonl --seed 0 && "
    "repogym validate candidates.jsonl --out tasks.jsonl -j 2"
)


def register(app: typer.Typer) -> None:
    group = add_group(app, "synth", HELP, default="inject")
    add_command(group, "inject", inject_command)
    add_command(group, "methods", methods_command)
    add_command(group, "combine", combine_command)
    add_command(group, "statements", statements_command)


def _split_names(values: list[str]) -> list[str]:
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


def inject_command(
    repos: Annotated[list[Path], typer.Argument(help="Git repositories (working copies or bare) with a pytest suite.")],
    out: OutTasks,
    seed: Seed = 0,
    rev: Annotated[str, typer.Option("--rev", help="The clean state to inject bugs into (branch, tag or sha).")] = "HEAD",
    methods: Annotated[list[str], typer.Option("--methods", "-m", help="Methods or groups (single_line, structural, class), comma-separated or repeated (default: all; see `repogym synth methods`).")] = [],  # noqa: B006
    per_function: Annotated[int, typer.Option("--per-function", min=1, help="Most candidates per covered function.")] = 10,
    max_candidates: Annotated[int, typer.Option("--max", min=0, help="Write at most N candidates per repository (a seeded sample); 0 = all.")] = 0,
    single_line_weight: Annotated[float, typer.Option("--single-line-weight", min=0.01, help="How much likelier single-line methods are drawn than structural ones.")] = 3.0,
    store: Annotated[Path | None, typer.Option("--store", help="Folder of the task set's repositories (default: synth-repos beside OUT).")] = None,
    repo_name: Annotated[str, typer.Option("--repo-name", help='"owner/name" for the tasks (one repository only).')] = "",
    python: Annotated[str, typer.Option("--python", help="Python version of the environment (default: the one running repogym).")] = "",
    packages: Annotated[list[str], typer.Option("--package", help="Extra requirement of the environment (repeatable; coverage is always added).")] = [],  # noqa: B006
    test_cmd: Annotated[str, typer.Option("--test-cmd", help="Command that runs the tests (default: python -m pytest -rA).")] = "",
    sandbox: Sandbox = "bwrap",
    funnel: Annotated[Path | None, typer.Option("--funnel", help="Funnel JSON (default: OUT.funnel.json).")] = None,
    json_out: Json = False,
) -> None:  # fmt: skip
    """Inject bugs into the functions the test suite covers; write them as candidate tasks to validate next.

    Each candidate is a commit on top of REV in a repository kept under --store; its gold patch undoes the
    bug, its test patch is empty, its metadata has method, file, function, lines and difficulty. Re-running
    the same command (after an interruption too) reuses the coverage run and gives the same candidates.
    The sandbox runs the coverage run.

    Examples:
      repogym synth ../calc --out candidates.jsonl --seed 0
      repogym synth ../calc ../dates --out candidates.jsonl --methods op_change,op_swap --per-function 4
      repogym synth ../calc --out small.jsonl --methods single_line
      repogym validate candidates.jsonl --out tasks.jsonl -j 2
    """
    if repo_name and len(repos) > 1:
        raise ConfigError("--repo-name names one repository: give one REPO with it")
    config = validate_config(
        {
            "rev": rev,
            "methods": _split_names(methods),
            "per_function": per_function,
            "max_candidates": max_candidates,
            "single_line_weight": single_line_weight,
            "seed": seed,
            "repo_name": repo_name,
            "python": python,
            "packages": packages,
            "test_cmd": test_cmd,
            "sandbox": sandbox,
        },
        SynthConfig,
        source="repogym synth options",
    )
    store_dir = store or out.resolve().parent / "synth-repos"
    tasks: list[Any] = []
    funnels = []
    # Nothing is lost to Ctrl-C: the coverage run is cached and the commits are deterministic, so the same
    # command redoes the rest quickly and writes the same candidates.
    saved = track("repositories done")
    with _progress() as progress:
        for repo in repos:
            bar = progress.add_task(str(repo), total=None, stage="starting")

            def report(stage: str, done: int, total: int, bar: Any = bar) -> None:
                progress.update(bar, completed=done, total=total or None, stage=stage)

            result = synthesize(repo, config, store_dir, progress=report)
            progress.update(bar, completed=1, total=1, stage=f"{len(result.tasks)} candidates")
            tasks += result.tasks
            funnels.append(result.funnel)
            saved.done += 1
            console.print(result.funnel.table())
            for path, why in result.funnel.unparsable:
                console.print(f"[yellow]skipped[/] {path}: {why}", markup=False)
    funnel_path = funnel or out.with_name(out.name + ".funnel.json")
    write_json(funnel_path, [f.to_dict() for f in funnels])
    if not tasks:
        raise nothing_produced(f"no candidate was drawn; {out} was not written (funnel: {funnel_path})")
    save_tasks(tasks, out)
    if json_out:
        print_json({
            "out": str(out), "candidates": len(tasks), "store": str(store_dir), "funnel_path": str(funnel_path),
            "funnels": [f.to_dict() for f in funnels],
        })  # fmt: skip
        return
    console.print(
        f"[green]wrote[/] {len(tasks)} candidates to {out}; repositories in {store_dir}; funnel in {funnel_path}"
    )
    console.print(f"next: repogym validate {out} --out tasks.jsonl -j 2", markup=False)


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        TextColumn("{task.fields[stage]}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
    )


def methods_command(json_out: Json = False) -> None:
    """List the bug-injection methods (the names recorded in metadata["method"]).

    Example: repogym synth methods
    """
    rows = []
    for name in METHODS.names():
        method = METHODS.get(name)
        kind = "class" if method.class_level else ("single-line" if method.single_line else "structural")
        rows.append({"name": name, "kind": kind, "description": method.description})
    if json_out:
        print_json({"methods": rows})
        return
    table = Table(title="bug-injection methods")
    for column in ("method", "kind", "what it does"):
        table.add_column(column)
    for row in rows:
        table.add_row(row["name"], row["kind"], row["description"])
    console.print(table)


def combine_command(
    tasks_file: Tasks,
    out: OutTasks,
    same: Annotated[str, typer.Option("--same", help="Combine bugs of the same 'file' or the same 'module' (folder).")] = "file",
    max_parts: Annotated[int, typer.Option("--max", min=2, help="Most bugs in one combined task.")] = 3,
    seed: Seed = 0,
    json_out: Json = False,
) -> None:  # fmt: skip
    """Merge validated bugs whose injections apply together into harder candidates (each bug used once).

    TASKS are validated synthetic tasks (from `repogym validate`); validate the combined candidates next.

    Example: repogym synth combine tasks.jsonl --same file --max 3 --out combined.jsonl && repogym validate combined.jsonl --out hard.jsonl
    """
    combined = combine(list(load_tasks(tasks_file)), same=same, max_parts=max_parts, seed=seed)
    if not combined:
        raise nothing_produced(f"no two validated bugs of one {same} apply together; {out} was not written")
    save_tasks(combined, out)
    if json_out:
        print_json({"out": str(out), "candidates": len(combined)})
        return
    console.print(
        f"[green]wrote[/] {len(combined)} combined candidates to {out}; validate them next", markup=False
    )


def statements_command(
    tasks_file: Tasks,
    out: OutTasks,
    issue_writer: Annotated[str, typer.Option("--issue-writer", help="openai:MODEL: an OpenAI-compatible endpoint writes issue-style statements.")],
    base_url: Annotated[str, typer.Option("--base-url", help="The endpoint's base URL, e.g. http://127.0.0.1:8000/v1.")] = "",
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1, help="Longest statement, in tokens.")] = 400,
    json_out: Json = False,
) -> None:  # fmt: skip
    """Rewrite synthetic tasks' statements with an LLM, told never to reveal the fix; a text that quotes the
    fix is refused and the failing-output statement kept (metadata["statement"] says which).

    Example: repogym synth statements tasks.jsonl --issue-writer openai:qwen --base-url http://127.0.0.1:8000/v1 --out issues.jsonl
    """
    writer = make_issue_writer(issue_writer, base_url, max_tokens)
    tasks = rewrite_statements(list(load_tasks(tasks_file)), writer)
    save_tasks(tasks, out)
    used = sum(1 for t in tasks if t.metadata.get("statement", {}).get("writer") == writer.name)
    if json_out:
        print_json({"out": str(out), "tasks": len(tasks), "rewritten": used, "writer": writer.name})
        return
    console.print(
        f"[green]wrote[/] {len(tasks)} tasks to {out}: {used} statement(s) by {writer.name}, the rest kept",
        markup=False,
    )
