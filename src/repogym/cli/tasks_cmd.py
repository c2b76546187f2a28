"""`repogym tasks ...`: import, export, inspect task datasets."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from repogym.cli.common import add_command, add_group, console, print_json
from repogym.cli.options import Json, NowFirstArgument, OutTasks, Renamed, ReposDir, Seed, Tasks
from repogym.data import SpecsApplied, apply_specs, builtin_specs, installed_pythons, missing_interpreters
from repogym.dataset import Style, format_for_path, load_tasks, save_tasks
from repogym.envfile import load_env_file
from repogym.errors import ConfigError
from repogym.patches import diff_stats
from repogym.split import SplitBy, split_tasks, write_split
from repogym.stats import Distribution, task_stats

HELP = "Import, export and inspect task datasets.\n\nExample: repogym tasks stats examples/tasks.jsonl"


def register(app: typer.Typer) -> None:
    group = add_group(app, "tasks", HELP)
    add_command(group, "import", import_tasks)
    add_command(group, "export", export_tasks)
    add_command(group, "stats", stats)
    add_command(group, "show", show, NowFirstArgument(("--tasks", "-t"), "TASKS ID"))
    add_command(group, "split", split, Renamed("--out-dir", "--out"))


def import_tasks(
    tasks_file: Tasks,
    out: OutTasks,
    specs: Annotated[
        str | None,
        typer.Option(
            "--specs",
            help="Fill each task's env (python, packages, install, test command, parser, test variables) from "
            "built-in specs keyed by (repo, version): 'swebench' = SWE-bench's per-version specs for its "
            "Python repositories.",
        ),
    ] = None,
    env_file: Annotated[
        Path | None,
        typer.Option(
            "--env-file", help="An env file of your own (repogym.toml format), applied after --specs."
        ),
    ] = None,
    json_out: Json = False,
) -> None:
    """Read tasks in any supported format and write them in repogym's form.

    Example: repogym tasks import swe-bench-lite.json --specs swebench --out tasks.jsonl
    """
    format_for_path(out)  # a bad suffix fails before the input is read
    files = [builtin_specs(specs)] if specs else []
    if env_file is not None:
        files.append(load_env_file(env_file))
    tasks = list(load_tasks(tasks_file))
    applied = None
    if files:
        applied = apply_specs(tasks, *files)
        tasks = applied.tasks
        _print_specs_summary(applied, specs or str(env_file))
    count = save_tasks(tasks, out)
    if json_out:
        print_json(
            {"out": str(out), "tasks": count, "specs": _specs_summary(applied, specs or str(env_file))}
        )
        return
    console.print(f"[green]wrote[/] {count} tasks to {escape(str(out))}", soft_wrap=True)


def _specs_summary(applied: SpecsApplied | None, name: str) -> dict[str, Any] | None:
    if applied is None:
        return None
    return {
        "source": name,
        "shaped": applied.shaped,
        "unmatched": applied.unmatched,
        "missing_pythons": missing_interpreters(applied.tasks),
    }


def _print_specs_summary(applied: SpecsApplied, name: str) -> None:
    console.print(f"env from {escape(name)}: {applied.shaped} of {len(applied.tasks)} tasks", soft_wrap=True)
    if applied.unmatched:
        shown = ", ".join(f"{key} ({n})" for key, n in sorted(applied.unmatched.items())[:8])
        more = f" and {len(applied.unmatched) - 8} more" if len(applied.unmatched) > 8 else ""
        console.print(Text(f"no spec for {shown}{more}: those tasks keep their own env"), style="yellow")
    missing = missing_interpreters(applied.tasks)
    for version, count in sorted(missing.items()):
        console.print(
            Text(
                f"{count} task(s) need Python {version}, which is not installed here ({installed_pythons()}): "
                "their environments will not build until it is (e.g. `pyenv install`)"
            ),
            style="yellow",
        )


def export_tasks(
    tasks_file: Tasks,
    out: OutTasks,
    format: Annotated[
        Style,
        typer.Option("--format", "-f", help="swebench: exactly SWE-bench's fields; repogym: all fields."),
    ] = Style.SWEBENCH,
    json_out: Json = False,
) -> None:
    """Write tasks in SWE-bench's exact form (test lists JSON-encoded), for SWE-bench's own harness.

    Example: repogym tasks export examples/tasks.jsonl --format swebench --out tasks.swebench.json
    """
    format_for_path(out)
    count = save_tasks(load_tasks(tasks_file), out, style=format)
    if json_out:
        print_json({"out": str(out), "tasks": count, "format": format.value})
        return
    console.print(
        f"[green]wrote[/] {count} tasks to {escape(str(out))} ({format.value} form)", soft_wrap=True
    )


def _dist_row(table: Table, label: str, dist: Distribution) -> None:
    table.add_row(label, f"{dist.mean:.1f}", f"{dist.median:.0f}", str(dist.max))


def stats(tasks_file: Tasks, json_out: Json = False) -> None:
    """Tasks per repo and source, patch sizes, FAIL_TO_PASS / PASS_TO_PASS counts.

    Example: repogym tasks stats examples/tasks.jsonl
    """
    figures = task_stats(load_tasks(tasks_file))
    if json_out:
        print_json(figures.to_dict())
        return
    console.print(Text(f"{figures.count} tasks in {tasks_file}"), soft_wrap=True)
    repos = Table(title="tasks per repo")
    repos.add_column("repo")
    repos.add_column("tasks", justify="right")
    for repo, count in figures.per_repo.items():
        repos.add_row(Text(repo), str(count))
    sizes = Table(title="per task")
    for column in ("", "mean", "median", "max"):
        sizes.add_column(column, justify="right" if column else "left")
    _dist_row(sizes, "files in patch", figures.patch_files)
    _dist_row(sizes, "lines in patch", figures.patch_lines)
    _dist_row(sizes, "lines in test patch", figures.test_patch_lines)
    _dist_row(sizes, "FAIL_TO_PASS tests", figures.fail_to_pass)
    _dist_row(sizes, "PASS_TO_PASS tests", figures.pass_to_pass)
    console.print(repos)
    console.print(sizes)
    sources = ", ".join(f"{name}: {count}" for name, count in figures.per_source.items())
    console.print(f"sources: {sources or '-'}", markup=False)
    if figures.without_fail_to_pass:
        console.print(
            f"[yellow]{figures.without_fail_to_pass} task(s) have no FAIL_TO_PASS tests[/] "
            "(candidates not yet validated, or not verifiable)"
        )


def show(
    tasks_file: Tasks,
    instance_id: Annotated[
        str, typer.Argument(metavar="ID", help="The task's instance_id.", show_default=False)
    ],
    json_out: Json = False,
) -> None:
    """Print one task: problem statement, patches, tests and environment.

    Example: repogym tasks show examples/tasks.jsonl psf__requests-2931
    """
    task = load_tasks(tasks_file).get(instance_id)
    if json_out:
        print_json(task.to_dict())
        return
    code, tests = diff_stats(task.patch), diff_stats(task.test_patch)
    licence = f"  licence {task.license}" if task.license else ""
    # Task text is data, not rich markup: a "[/x]" in a problem statement must print as it is.
    console.print(
        Text.assemble(
            (task.instance_id, "bold"),
            f"  repo {task.repo} @ {task.base_commit[:12]}  source {task.source.value}{licence}",
        ),
        soft_wrap=True,
    )
    console.print(Panel(Text(task.problem_statement or "(empty)"), title="problem statement", expand=False))
    if task.hints_text:
        console.print(Panel(Text(task.hints_text), title="hints", expand=False))
    console.print(f"patch: {code.files} file(s), +{code.added} -{code.removed}")
    console.print(Text(task.patch), soft_wrap=True)
    console.print(f"test patch: {tests.files} file(s), +{tests.added} -{tests.removed}")
    console.print(Text(task.test_patch), soft_wrap=True)
    console.print(Text(f"FAIL_TO_PASS ({len(task.FAIL_TO_PASS)}): {', '.join(task.FAIL_TO_PASS) or '-'}"))
    console.print(Text(f"PASS_TO_PASS ({len(task.PASS_TO_PASS)}): {', '.join(task.PASS_TO_PASS) or '-'}"))
    env = task.env
    console.print(
        Text(
            f"env: python {env.python or '(host)'}, parser {env.log_parser}, "
            f"install {list(env.install) or '(detect)'}, test_cmd {env.test_cmd or '(default)'}"
        )
    )


def split(
    tasks_file: Tasks,
    by: Annotated[
        str,
        typer.Option(
            "--by", help="What no two sides share: repo, file, function, or time (oldest to train)."
        ),
    ],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Folder for train.jsonl, test.jsonl and manifest.json.")
    ],
    ratio: Annotated[
        float, typer.Option("--ratio", help="Share of the tasks in train (0 < ratio < 1).")
    ] = 0.8,
    seed: Seed = 0,
    repos_dir: ReposDir = None,
    json_out: Json = False,
) -> None:
    """Split tasks into train and test with no function (by file: no file; by repo: no repo) on both sides.

    Identical diffs are deduplicated first; the manifest records what went where and why (--json prints it).

    Example: repogym tasks split tasks.jsonl --by function --ratio 0.8 --out splits/ --seed 0
    """
    try:
        mode = SplitBy(by)
    except ValueError:
        raise ConfigError(f"--by {by!r}: choose one of {', '.join(m.value for m in SplitBy)}") from None
    result = split_tasks(
        list(load_tasks(tasks_file)), mode, ratio, seed, str(repos_dir) if repos_dir else None
    )
    manifest = write_split(result, out)
    if json_out:
        print_json({"manifest_path": str(manifest), **result.manifest})
        return
    counts = result.manifest["counts"]
    console.print(
        Text(
            f"train {counts['train']}, test {counts['test']} (by {mode.value}, ratio {ratio}, seed {seed}); "
            f"{counts['duplicates']} duplicate diff(s) dropped, {counts['held_out']} held out; manifest {manifest}"
        ),
        soft_wrap=True,
    )
