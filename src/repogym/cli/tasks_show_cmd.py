"""`repogym tasks show TASKS ID`: one task, its statement, patches, tests and environment."""

from __future__ import annotations

import typer
from rich.panel import Panel
from rich.text import Text

from repogym.cli.common import add_command, console, print_json, subgroup
from repogym.cli.options import InstanceId, Json, NowFirstArgument, Tasks
from repogym.dataset import load_tasks
from repogym.patches import diff_stats


def register(app: typer.Typer) -> None:
    add_command(subgroup(app, "tasks"), "show", show, NowFirstArgument(("--tasks", "-t"), "TASKS ID"))


def show(
    tasks_file: Tasks,
    instance_id: InstanceId,
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
