"""`repogym export verl`: tasks as verl's RL dataset (parquet), its reward function and agent-mode configs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from repogym.cli.common import add_command, console, print_json, subgroup
from repogym.cli.options import Jobs, Json, Tasks
from repogym.cli.sandbox_option import Sandbox
from repogym.integrations.verl import Mode
from repogym.integrations.verl_export import export_verl


def register(app: typer.Typer) -> None:
    add_command(subgroup(app, "export"), "verl", export_verl_command)


def export_verl_command(
    tasks_file: Tasks,
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write the parquet (and agent mode's tool and agent-loop configs) into.")],
    mode: Annotated[Mode, typer.Option("--mode", help="agentless: one SWE-RL answer per completion; agent: tool calls in a sandbox episode, through repogym's agent loop.")] = Mode.AGENTLESS,
    sandbox: Sandbox = "bwrap",
    jobs: Jobs = 1,
    json_out: Json = False,
) -> None:  # fmt: skip
    """Write tasks as verl's RL dataset: OUT/<tasks file's name>.parquet, graded by repogym's sandbox.

    Each row's prompt is what the task's env shows at reset; its reward_model.ground_truth carries the task
    record, so verl's reward workers grade with reward.custom_reward_function.path=pkg://repogym.integrations.verl
    and reward.custom_reward_function.name=compute_score. Agent mode also writes tool_config.yaml and
    agent_loop.yaml. Every task's runtime is prepared first (-j at once). See docs/integrations-verl.md.

    Example: repogym export verl tasks.jsonl --out verl-data --mode agentless
    """
    result = export_verl(tasks_file, out, mode, sandbox, jobs)
    if json_out:
        print_json(result.to_dict())
        return
    console.print(
        f"[green]wrote[/] {result.rows} {mode.value} rows to {escape(str(result.parquet))}", soft_wrap=True
    )
    for config in (result.tool_config, result.agent_loop_config):
        if config is not None:
            console.print(f"[green]wrote[/] {escape(str(config))}", soft_wrap=True)
