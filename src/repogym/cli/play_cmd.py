"""`repogym play`: a human plays a task's env in the terminal (tool calls in, observations out, grade at the end)."""

from __future__ import annotations

import codeop
import json
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from repogym.cli.common import add_command, console, err_console
from repogym.cli.options import InstanceId, NowFirstArgument, ReposDir, Tasks
from repogym.cli.sandbox_option import Sandbox
from repogym.env import make

HELP = (
    "Type one tool call per prompt, e.g. view_file('src/app.py', '1:40') or bash('ls'); an unfinished call "
    "(an open bracket or string) continues on the next line. :tools lists the tools, :quit leaves without "
    "submitting, submit() ends the episode and shows the grade."
)


def register(app: typer.Typer) -> None:
    add_command(app, "play", play_command, NowFirstArgument(("--tasks", "-t"), "TASKS ID"))


def play_command(
    tasks_file: Tasks,
    instance_id: InstanceId,
    repos_dir: ReposDir = None,
    sandbox: Sandbox = "bwrap",
    mode: Annotated[str, typer.Option("--mode", help="agent (tool calls) or agentless (one SEARCH/REPLACE answer).")] = "agent",
    max_steps: Annotated[int, typer.Option("--max-steps", min=1, help="Steps before the episode is truncated.")] = 50,
) -> None:  # fmt: skip
    """Play one task yourself: the fastest way to debug a task and the tools.

    Interactive: no --json (`repogym grade` and `repogym rollout` are the scripted forms).

    Examples:
      repogym play tasks.jsonl toy__calc-1
      repogym play tasks.jsonl toy__calc-1 --mode agentless
    """
    with err_console.status(f"preparing {instance_id} ({sandbox} sandbox)..."):
        env = make(
            instance_id,
            str(tasks_file),
            sandbox=sandbox,
            mode=mode,
            max_steps=max_steps,
            repos_dir=str(repos_dir) if repos_dir else None,
        )
    try:
        observation, _ = env.reset()
        console.print(observation, markup=False, soft_wrap=True)
        if mode == "agent":
            console.print(HELP, markup=False, style="dim")
        while True:
            action = _read_answer() if mode == "agentless" else _read_action(env)
            if action is None:
                console.print("left without submitting; nothing was graded", style="yellow")
                return
            observation, _, terminated, truncated, info = env.step(action)
            console.print(observation, markup=False, soft_wrap=True)
            if terminated or truncated:
                _print_end(info)
                return
    finally:
        env.close()


def _read_action(env: Any) -> str | None:
    """One complete tool call from stdin (None at EOF or :quit); :tools prints the tools and asks again."""
    lines: list[str] = []
    while True:
        try:
            line = input("...> " if lines else "action> ")
        except EOFError:
            return None
        if not lines and line.strip() in (":quit", ":q", ":exit"):
            return None
        if not lines and line.strip() == ":tools":
            _print_tools(env.tool_schemas())
            continue
        lines.append(line)
        text = "\n".join(lines)
        if text.strip() and _complete(text):
            return text


def _complete(text: str) -> bool:
    """False while the call is unfinished (an open bracket, string or JSON object); malformed text is complete."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            json.loads(stripped)
        except json.JSONDecodeError as exc:
            return exc.pos < len(stripped)
        return True
    try:
        return codeop.compile_command(stripped, symbol="eval") is not None
    except (SyntaxError, ValueError, OverflowError):
        return True


def _read_answer() -> str | None:
    """An agentless answer: lines up to the one holding </solution> (None at EOF before any text)."""
    console.print("Type your answer; it ends at the line holding </solution>.", style="dim")
    lines: list[str] = []
    while True:
        try:
            line = input("")
        except EOFError:
            return "\n".join(lines) if lines else None
        lines.append(line)
        if "</solution>" in line:
            return "\n".join(lines)


def _print_tools(schemas: list[dict[str, Any]]) -> None:
    for schema in schemas:
        function = schema["function"]
        params = ", ".join(
            name if name in function["parameters"]["required"] else f"{name}=None"
            for name in function["parameters"]["properties"]
        )
        console.print(f"{function['name']}({params})", style="bold", markup=False)
        console.print(f"    {function['description']}", markup=False)


def _print_end(info: dict[str, Any]) -> None:
    grade, breakdown = info.get("grade"), info.get("reward")
    if grade is not None:
        table = Table(title=Text(f"{grade.instance_id}: {grade.outcome.value}"))
        table.add_column("test")
        table.add_column("kind")
        table.add_column("status")
        for kind, tests in (("FAIL_TO_PASS", grade.fail_to_pass), ("PASS_TO_PASS", grade.pass_to_pass)):
            for test, status in tests.items():
                table.add_row(Text(test), kind, status.value if status else "MISSING")
        console.print(table)
    if breakdown is not None:
        terms = ", ".join(
            f"{name}={value:+g}" if value is not None else f"{name}=n/a"
            for name, value in breakdown.components.items()
        )
        console.print(f"reward {breakdown.total:g} ({terms})", markup=False)
    console.print(
        f"steps {info.get('steps')}, format errors {info.get('format_errors')}, "
        f"patch {len(info.get('patch', '').splitlines())} lines",
        markup=False,
    )
