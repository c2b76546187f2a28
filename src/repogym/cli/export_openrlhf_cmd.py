"""`repogym export openrlhf`: tasks as OpenRLHF's prompt dataset (JSONL) and the file OpenRLHF loads for them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from repogym.cli.common import add_command, console, print_json, subgroup
from repogym.cli.options import Jobs, Json, Tasks
from repogym.cli.sandbox_option import Sandbox
from repogym.integrations.openrlhf_export import export_openrlhf
from repogym.integrations.rows import Mode


def register(app: typer.Typer) -> None:
    add_command(subgroup(app, "export"), "openrlhf", export_openrlhf_command)


def export_openrlhf_command(
    tasks_file: Tasks,
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write the JSONL and reward_func.py (agentless) or agent_func.py (agent) into.")],
    mode: Annotated[Mode, typer.Option("--mode", help="agentless: one SWE-RL answer per completion, scored by reward_func.py; agent: tool calls in a sandbox episode, through agent_func.py.")] = Mode.AGENTLESS,
    sandbox: Sandbox = "bwrap",
    jobs: Jobs = 1,
    json_out: Json = False,
) -> None:  # fmt: skip
    """Write tasks as OpenRLHF's prompt dataset: OUT/<tasks file's name>.jsonl, graded by repogym's sandbox.

    Each row's prompt (--data.input_key prompt, with --data.apply_chat_template) is what the task's env shows
    at reset; its label (--data.label_key label) carries the task record. Agentless mode writes reward_func.py
    for --reward.remote_url, agent mode agent_func.py for --train.agent_func_path. Every task's runtime is
    prepared first (-j at once). See docs/integrations-openrlhf.md.

    Example: repogym export openrlhf tasks.jsonl --out openrlhf-data --mode agentless
    """
    result = export_openrlhf(tasks_file, out, mode, sandbox, jobs)
    if json_out:
        print_json(result.to_dict())
        return
    console.print(
        f"[green]wrote[/] {result.rows} {mode.value} rows to {escape(str(result.dataset))}", soft_wrap=True
    )
    flag = "--reward.remote_url" if mode is Mode.AGENTLESS else "--train.agent_func_path"
    console.print(f"[green]wrote[/] {escape(str(result.user_file))} (OpenRLHF's {flag})", soft_wrap=True)
