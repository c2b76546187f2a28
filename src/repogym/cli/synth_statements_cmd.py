"""`repogym synth statements`: synthetic tasks' statements rewritten by an LLM that must not reveal the fix."""

from __future__ import annotations

from typing import Annotated

import typer

from repogym.cli.common import add_command, console, print_json, subgroup
from repogym.cli.options import Json, OutTasks, Tasks
from repogym.dataset import load_tasks, save_tasks
from repogym.synth.issues import make_issue_writer
from repogym.validate.statement import rewrite_statements


def register(app: typer.Typer) -> None:
    add_command(subgroup(app, "synth"), "statements", statements_command)


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
