"""Tasks as verl's RL dataset: one parquet row per task, plus agent mode's tool and agent-loop configs.

A row has the columns verl's `RLHFDataset` reads (verl/utils/dataset/rl_dataset.py, 0.9.1):

- `data_source`: "repogym" (verl groups validation metrics by it and hands it to the reward function);
- `prompt`: the chat messages the env shows at reset, exactly what GRPO under TRL trains on
  (`TaskEnvs.prompt`): agentless, one user message (issue, the files, SWE-RL's answer format); agent,
  the agent loop's system prompt and the problem message;
- `ability`: "coding";
- `reward_model`: `{"style": "rule", "ground_truth": GroundTruth JSON}` (the task record itself, see
  `repogym.integrations.verl.GroundTruth`);
- `extra_info`: `index` (verl's sample index), `instance_id`, and in agent mode `tools_kwargs` (one entry
  per tool: verl passes `create_kwargs` to the tool's `create`; repogym's agent loop adds the episode);
- agent mode only, `agent_name`: "repogym_agent", the agent loop verl runs the row with.

Agent mode also writes `tool_config.yaml` (`actor_rollout_ref.rollout.multi_turn.tool_config_path`: one
`RepogymTool` per tool the env offers) and `agent_loop.yaml`
(`actor_rollout_ref.rollout.agent.agent_loop_config_path`: `repogym_agent` -> `RepogymAgentLoop`).
Exporting prepares every task's runtime (as GRPO does before training), so a task that cannot be set up
fails here, not on the cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from repogym.dataset import TaskSet, load_tasks
from repogym.env.base import build_reward
from repogym.env.tools import tool_names
from repogym.errors import ConfigError
from repogym.integrations.rows import GroundTruth, Mode
from repogym.integrations.task_envs import UNBOUNDED_AGENT_EPISODE
from repogym.integrations.verl import DATA_SOURCE
from repogym.task import Task
from repogym.train.rl_tasks import TaskEnvs

ABILITY = "coding"
REWARD_STYLE = "rule"
#: The agent loop name agent rows carry, and the class verl instantiates for it.
AGENT_LOOP_NAME = "repogym_agent"
AGENT_LOOP_CLASS = "repogym.integrations.verl_agent.RepogymAgentLoop"
TOOL_CLASS = "repogym.integrations.verl_agent.RepogymTool"
TOOL_CONFIG = "tool_config.yaml"
AGENT_LOOP_CONFIG = "agent_loop.yaml"


@dataclass(frozen=True)
class VerlExport:
    """What one export wrote."""

    parquet: Path
    rows: int
    mode: Mode
    tool_config: Path | None = None
    """Agent mode: verl's tool config (None in agentless mode)."""
    agent_loop_config: Path | None = None
    """Agent mode: verl's agent-loop config (None in agentless mode)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "parquet": str(self.parquet),
            "rows": self.rows,
            "mode": self.mode.value,
            "tool_config": str(self.tool_config) if self.tool_config else None,
            "agent_loop_config": str(self.agent_loop_config) if self.agent_loop_config else None,
        }


def export_verl(
    tasks_file: Path, out: Path, mode: Mode, sandbox: str = "bwrap", workers: int = 1
) -> VerlExport:
    """Write `out/<tasks file's stem>.parquet` (and agent mode's configs); ConfigError for unusable tasks."""
    parquet = out / f"{tasks_file.stem}.parquet"
    rows = verl_rows(exportable_tasks(tasks_file, parquet), mode, sandbox, workers)
    out.mkdir(parents=True, exist_ok=True)
    write_parquet(rows, parquet)
    if mode is Mode.AGENTLESS:
        return VerlExport(parquet, len(rows), mode)
    tool_config, loop_config = out / TOOL_CONFIG, out / AGENT_LOOP_CONFIG
    tool_config.write_text(yaml.safe_dump(tool_config_data(), sort_keys=False), encoding="utf-8")
    loop_config.write_text(yaml.safe_dump(agent_loop_config_data(), sort_keys=False), encoding="utf-8")
    return VerlExport(parquet, len(rows), mode, tool_config, loop_config)


def exportable_tasks(tasks_file: Path, written: Path) -> TaskSet:
    """The tasks of a file an export writes `written` from; ConfigError when the export would overwrite the
    file, it holds no task, or a task has no FAIL_TO_PASS tests (no answer to it could be graded)."""
    if written.resolve() == tasks_file.resolve():
        raise ConfigError(
            f"--out {written.parent}: the export would overwrite the task file {tasks_file}; pick another folder"
        )
    tasks = load_tasks(tasks_file)
    if not len(tasks):
        raise ConfigError(f"{tasks_file}: holds no tasks; mine and validate some first (repogym quickstart)")
    unprovable = [task.instance_id for task in tasks if not task.FAIL_TO_PASS]
    if unprovable:
        raise ConfigError(
            f"{tasks_file}: {len(unprovable)} of {len(tasks)} task(s) have no FAIL_TO_PASS tests, so no "
            f"answer can be graded ({', '.join(unprovable[:5])}); validate them first (repogym validate)"
        )
    return tasks


def verl_rows(tasks: TaskSet, mode: Mode, sandbox: str, workers: int) -> list[dict[str, Any]]:
    """One verl row per task, its prompt from the task's env (every runtime prepared first, in parallel)."""
    options = UNBOUNDED_AGENT_EPISODE if mode is Mode.AGENT else {}
    envs = TaskEnvs(tasks, mode.value, build_reward(None, mode.value), dict(options), sandbox)
    try:
        envs.prepare(workers)
        return [
            verl_row(index, task, envs.prompt(task.instance_id), mode, sandbox)
            for index, task in enumerate(tasks)
        ]
    finally:
        envs.close()


def verl_row(
    index: int, task: Task, prompt: list[dict[str, str]], mode: Mode, sandbox: str
) -> dict[str, Any]:
    """The row of one task (see the module docstring for each column)."""
    extra_info: dict[str, Any] = {"index": index, "instance_id": task.instance_id}
    row: dict[str, Any] = {
        "data_source": DATA_SOURCE,
        "prompt": prompt,
        "ability": ABILITY,
        "reward_model": {"style": REWARD_STYLE, "ground_truth": GroundTruth(mode, sandbox, task).to_json()},
        "extra_info": extra_info,
    }
    if mode is Mode.AGENT:
        create = {"create_kwargs": {"instance_id": task.instance_id}}
        extra_info["tools_kwargs"] = {name: create for name in tool_names()}
        row["agent_name"] = AGENT_LOOP_NAME
    return row


def write_parquet(rows: list[dict[str, Any]], path: Path) -> None:
    """The rows as one parquet file, each column's type read from the rows (all rows share their keys)."""
    import pyarrow
    import pyarrow.parquet

    pyarrow.parquet.write_table(pyarrow.Table.from_pylist(rows), path)


def tool_config_data() -> dict[str, Any]:
    """verl's tool config: one RepogymTool per tool agent mode offers (its schema from repogym's registry)."""
    return {
        "tools": [
            {"class_name": TOOL_CLASS, "config": {"type": "native", "tool": name}} for name in tool_names()
        ]
    }


def agent_loop_config_data() -> list[dict[str, str]]:
    """verl's agent-loop config: the name agent rows carry -> repogym's agent loop class."""
    return [{"name": AGENT_LOOP_NAME, "_target_": AGENT_LOOP_CLASS}]
