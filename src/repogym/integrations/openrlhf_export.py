"""Tasks as OpenRLHF's prompt dataset (JSONL), with the file OpenRLHF loads by path for the rows' mode.

A row is the verl export's row (`repogym.integrations.verl_export.verl_rows`: the prompt the env shows at
reset, the task record as ground truth) in the keys OpenRLHF's `PromptDataset` reads
(openrlhf/datasets/prompts_dataset.py, 0.11.2):

- `prompt`: the chat messages (`--data.input_key prompt --data.apply_chat_template`);
- `label`: the `GroundTruth` JSON text (`--data.label_key label`), handed to `reward_func` and to the agent;
- `datasource`: "repogym" (OpenRLHF groups its evaluation metrics by it);
- `instance_id`: the task's, for people reading the file.

Agentless exports also write `reward_func.py` (`--reward.remote_url`), agent exports `agent_func.py`
(`--train.agent_func_path`): each only imports repogym's implementation, so the files need no editing and
follow repogym's upgrades.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repogym.files import write_jsonl
from repogym.integrations.rows import Mode
from repogym.integrations.verl import DATA_SOURCE
from repogym.integrations.verl_export import exportable_tasks, verl_rows

INPUT_KEY = "prompt"
LABEL_KEY = "label"
#: The file OpenRLHF loads for each mode, and what it holds.
USER_FILES = {
    Mode.AGENTLESS: (
        "reward_func.py",
        '"""OpenRLHF\'s --reward.remote_url file: repogym grades each completion in its sandbox."""\n\n'
        "from repogym.integrations.openrlhf import reward_func\n\n"
        '__all__ = ["reward_func"]\n',
    ),
    Mode.AGENT: (
        "agent_func.py",
        '"""OpenRLHF\'s --train.agent_func_path file: each trajectory acts in a repogym sandbox episode."""\n\n'
        "from repogym.integrations.openrlhf import AgentExecutor\n\n"
        '__all__ = ["AgentExecutor"]\n',
    ),
}


@dataclass(frozen=True)
class OpenRLHFExport:
    """What one export wrote."""

    dataset: Path
    rows: int
    mode: Mode
    user_file: Path
    """reward_func.py (agentless) or agent_func.py (agent)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": str(self.dataset),
            "rows": self.rows,
            "mode": self.mode.value,
            "user_file": str(self.user_file),
        }


def export_openrlhf(
    tasks_file: Path, out: Path, mode: Mode, sandbox: str = "bwrap", workers: int = 1
) -> OpenRLHFExport:
    """Write `out/<tasks file's stem>.jsonl` and the mode's user file; ConfigError for unusable tasks."""
    dataset = out / f"{tasks_file.stem}.jsonl"
    rows = [
        openrlhf_row(row) for row in verl_rows(exportable_tasks(tasks_file, dataset), mode, sandbox, workers)
    ]
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(dataset, rows)
    name, text = USER_FILES[mode]
    (out / name).write_text(text, encoding="utf-8")
    return OpenRLHFExport(dataset, len(rows), mode, out / name)


def openrlhf_row(verl_row: dict[str, Any]) -> dict[str, Any]:
    """A verl row in OpenRLHF's keys (see the module docstring)."""
    return {
        INPUT_KEY: verl_row["prompt"],
        LABEL_KEY: verl_row["reward_model"]["ground_truth"],
        "datasource": DATA_SOURCE,
        "instance_id": verl_row["extra_info"]["instance_id"],
    }
