"""`repogym synth inject` (also `repogym synth REPO`): bugs injected into the functions the tests cover."""

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

from repogym.cli.common import (
    add_command,
    console,
    err_console,
    nothing_produced,
    print_json,
    subgroup,
    track,
)
from repogym.cli.options import Json, OutTasks, Seed
from repogym.cli.sandbox_option import Sandbox
from repogym.config import validate_config
from repogym.dataset import save_tasks
from repogym.errors import ConfigError
from repogym.files import write_json
from repogym.synth.config import SynthConfig
from repogym.synth.synth import synthesize


def register(app: typer.Typer) -> None:
    add_command(subgroup(app, "synth"), "inject", inject_command)


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
