"""Best-of-n test world: three toy tasks, four scripted attempts each (right and wrong patches in a known order),
rolled out once by `repogym eval -n 4` in the real sandbox; each selection's test re-scores a copy of that
folder (the same command resumes the rollout, so no attempt runs twice).

Attempts per task (attempt 0 first) and what each selection must pick:

| task | PASS_TO_PASS | attempts | tests | majority |
| toy__calc-1 | test_mul, test_mul_zero | break (add fixed, mul broken: 1 of 2), fix, note, note | 1 fix (tie of 3: the earliest) | 2 note |
| toy__calc-2 | none | note, fix, fix, empty | 0 note (nothing visible: the earliest) | 1 fix |
| toy__calc-3 | test_mul, test_mul_zero | empty, empty, fix, note | 2 fix (the empties never win) | 2 fix (tie: the first seen) |
| toy__calc-4 | test_mul, test_mul_zero | note, break, note, break | 0 note | 0 note (tie: the first seen) |

pass@1 = (1/4 + 2/4 + 1/4 + 0) / 4 = 1/4 and pass@4 = 3/4; tests and majority each get best@4 = 2/4. On
calc-4 a verifier that likes code changes prefers break, which the visible tests rank below the note: there
hybrid (tests first) and the verifier alone part ways.
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

N = 4
BROKEN_MUL = FIXED_SOURCE.replace(
    "return a * b", "return a ** b"
)  # mul(2, 3) == 8: test_mul fails, mul(0, 7) passes
FIX = {"name": "create_file", "arguments": {"path": "src/calc/__init__.py", "text": FIXED_SOURCE}}
BREAK = {"name": "create_file", "arguments": {"path": "src/calc/__init__.py", "text": BROKEN_MUL}}
NOTE = {"name": "create_file", "arguments": {"path": "NOTES.md", "text": "Looked into the issue.\n"}}
ATTEMPTS = {
    "toy__calc-1": [BREAK, FIX, NOTE, NOTE],
    "toy__calc-2": [NOTE, FIX, FIX, None],
    "toy__calc-3": [None, None, FIX, NOTE],
    "toy__calc-4": [NOTE, BREAK, NOTE, BREAK],
}


@dataclass(frozen=True)
class BestOfNWorld:
    tasks: Path
    rollout: Path
    """An eval folder with every attempt stored (`repogym eval -n 4`, no selection)."""

    def select(self, spec: str, out: Path, *more: str) -> dict:
        """`repogym eval ... --select spec` over a copy of the stored attempts; its summary.json."""
        shutil.copytree(self.rollout, out)
        result = cli("eval", *self.command(out), "--select", spec, *more)
        assert result.exit_code == 0, result.output
        return json.loads((out / "summary.json").read_text())

    def command(self, out: Path) -> list[str]:
        policy = f"scripted:{self.rollout.parent / 'attempts.jsonl'}"
        return [
            str(self.tasks),
            "--policy",
            policy,
            "-n",
            str(N),
            "-j",
            "2",
            "--bootstrap",
            "200",
            "--out",
            str(out),
        ]


def build_world(root: Path, toy_task: Task) -> BestOfNWorld:
    tasks = [
        toy_task,
        toy_task.replace(instance_id="toy__calc-2", PASS_TO_PASS=[]),
        toy_task.replace(instance_id="toy__calc-3"),
        toy_task.replace(instance_id="toy__calc-4"),
    ]
    save_tasks(tasks, root / "tasks.jsonl")
    rows = [
        {
            "instance_id": task_id,
            "attempt": attempt,
            "actions": [action, "submit()"] if action else ["submit()"],
        }
        for task_id, actions in ATTEMPTS.items()
        for attempt, action in enumerate(actions)
    ]
    (root / "attempts.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    world = BestOfNWorld(root / "tasks.jsonl", root / "rollout")
    result = cli("eval", *world.command(world.rollout))
    assert result.exit_code == 0, result.output
    return world


def picked(summary: dict) -> dict[str, int]:
    return {task_id: row["selection"]["attempt"] for task_id, row in summary["per_task"].items()}
