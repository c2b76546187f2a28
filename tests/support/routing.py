"""Routing test world: four toy tasks of stated difficulty, a scripted small policy that fixes two of them and
scripted:gold as the large policy, both evaluated once by `repogym eval --route` in the real sandbox; each test
re-routes a copy of that folder (the same command resumes both evals, so no attempt runs twice).

| task | stated difficulty (risk) | small policy's attempt | small resolves | large (gold) resolves |
| toy__calc-1 | easy (0.2) | the fix | yes | yes |
| toy__calc-2 | medium (0.5) | a note beside the bug | no | yes |
| toy__calc-3 | hard (0.8) | the fix | yes | yes |
| toy__calc-4 | easy (0.2) | nothing (an empty diff) | no | yes |

So the small policy alone resolves 2/4 and the large one 4/4. By difficulty at T = 0.5 the small policy keeps the
two easy tasks (calc-1 resolved, calc-4 not) and the large one gets calc-2 and calc-3: 3/4, half sent on.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from repogym.dataset import save_tasks
from repogym.task import Task
from repogym.testing import FIXED_SOURCE

from .cli import cli

FIX = {"name": "create_file", "arguments": {"path": "src/calc/__init__.py", "text": FIXED_SOURCE}}
NOTE = {"name": "create_file", "arguments": {"path": "NOTES.md", "text": "Looked into the issue.\n"}}
#: Task -> (stated difficulty, the small policy's action; None: it submits at once).
TASKS = {
    "toy__calc-1": ("easy", FIX),
    "toy__calc-2": ("medium", NOTE),
    "toy__calc-3": ("hard", FIX),
    "toy__calc-4": ("easy", None),
}


@dataclass(frozen=True)
class RoutingWorld:
    tasks: Path
    small: str
    """The small policy's spec (scripted:FILE)."""
    routed: Path
    """A routed eval folder (`repogym eval --route ... --by difficulty`), both evals stored."""

    def route(self, out: Path, *more: str) -> dict:
        """`repogym eval --route ... MORE` over a copy of the stored evals; its summary.json."""
        shutil.copytree(self.routed, out)
        result = cli("eval", *self.command(out), *more)
        assert result.exit_code == 0, result.output
        return json.loads((out / "summary.json").read_text())

    def command(self, out: Path) -> list[str]:
        return [str(self.tasks), "--route", f"small={self.small},large=scripted:gold", "-j", "2",
                "--bootstrap", "200", "--out", str(out)]  # fmt: skip


def build_world(root: Path, toy_task: Task) -> RoutingWorld:
    tasks = [
        toy_task.replace(instance_id=task_id, metadata={"difficulty": stated})
        for task_id, (stated, _) in TASKS.items()
    ]
    save_tasks(tasks, root / "tasks.jsonl")
    rows = [
        {"instance_id": task_id, "actions": [action, "submit()"] if action else ["submit()"]}
        for task_id, (_, action) in TASKS.items()
    ]
    (root / "small.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    world = RoutingWorld(root / "tasks.jsonl", f"scripted:{root / 'small.jsonl'}", root / "routed")
    result = cli("eval", *world.command(world.routed))
    assert result.exit_code == 0, result.output
    return world


def stored_rows(folder: Path) -> dict[str, dict]:
    """An eval folder's stored attempts by task (attempt 0 of each)."""
    rows = [json.loads(line) for shard in sorted((folder / "rollout").glob("trajectories-*.jsonl"))
            for line in shard.read_text().splitlines()]  # fmt: skip
    return {row["instance_id"]: row for row in rows if row["attempt"] == 0}


def attempt_seconds(row: dict) -> float:
    """A stored attempt's wall time less its final grade's: what routing counts as its seconds."""
    return row["timings"]["total_s"] - row["timings"].get("env_grade_s", 0.0)


def went(summary: dict) -> dict[str, str]:
    return {task_id: row["route"]["to"] for task_id, row in summary["per_task"].items()}
