"""Fixtures for verifier tests: graded rollouts of eleven real tasks (the toy task and two generated sample
libraries' planted fixes) by three scripted policies, each attempt graded in the sandbox and stored by the real
rollout store; the tiny model and one torch thread as the training tests have them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from repogym.agent.policies import PolicyConfig
from repogym.dataset import save_tasks
from repogym.rollout.run import RolloutConfig, run_rollout

from ..support.tasks import sample_library_tasks
from ..train.conftest import one_torch_thread, tiny_model

__all__ = ["one_torch_thread", "tiny_model"]  # the training tests' fixtures: one torch thread, TRL or skip

#: The three kinds of attempt: the gold patch (resolves), a note file beside the bug (does not), no change.
POLICIES = ("gold", "note", "empty")


@dataclass(frozen=True)
class GradedRollouts:
    tasks_file: Path
    folders: dict[str, Path]
    """Policy kind -> its rollout folder (one attempt per task)."""

    @property
    def all(self) -> list[str]:
        return [str(self.folders[kind]) for kind in POLICIES]


@pytest.fixture(scope="session")
def graded_rollouts(toy_task, tmp_path_factory: pytest.TempPathFactory) -> GradedRollouts:
    """Eleven tasks, one attempt each by `scripted:gold` (all resolved), a script that writes NOTES.md and
    submits (all unresolved: the bug is still there) and one that submits at once (unresolved, empty diff)."""
    root = tmp_path_factory.mktemp("verifier-rollouts")
    tasks = [toy_task]
    for seed in (1, 2):  # a dates library and a calculator library, five planted fixes each
        tasks += sample_library_tasks(root / f"lib{seed}", seed=seed, n_bug_fixes=5)
    tasks_file = root / "tasks.jsonl"
    save_tasks(tasks, tasks_file)
    note = {"name": "create_file", "arguments": {"path": "NOTES.md", "text": "Looked into the issue.\n"}}
    scripts = {"note": [note, "submit()"], "empty": ["submit()"]}
    specs = {"gold": "scripted:gold"}
    for kind, actions in scripts.items():
        script = root / f"{kind}.jsonl"
        script.write_text(json.dumps({"actions": actions}) + "\n")
        specs[kind] = f"scripted:{script}"
    folders = {}
    for kind in POLICIES:
        folders[kind] = root / kind
        summary = run_rollout(
            RolloutConfig(
                tasks=str(tasks_file), policy=PolicyConfig(spec=specs[kind]), out=str(folders[kind]), jobs=2
            )
        )
        assert summary.attempts == len(tasks) and summary.resolved == (len(tasks) if kind == "gold" else 0)
    return GradedRollouts(tasks_file, folders)
