"""The split stage: validated tasks -> train / held-out functions / held-out repository (`repogym tasks split`).

The held-out repository's tasks are never trained on (a repository the model has not seen); the other
repositories' tasks are split by function (`repogym.split`, `by="function"`), so no function, as
`repogym.locate.task_locations` names it, has a task on both sides. Writes
FOLDER/{train,heldout-functions,heldout-repo}.jsonl, manifest.json and the record (stage.json).

Guarantees: the same tasks, ratio and seed give the same split; both held-out splits hold at least one task
(else a PipelineError says how to get more). Not guaranteed: that the held-out splits hold every method:
with `eval_methods`, held-out tasks of other methods are dropped (not moved to train: their functions are
held out).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from repogym.dataset import load_tasks, save_tasks
from repogym.files import write_json
from repogym.pipeline.record import StageResult
from repogym.pipeline.runner import Hooks, PipelineError
from repogym.split import split_tasks
from repogym.task import Task
from repogym.train.mutation_demos import shorten_statements

#: The held-out splits, in the order the quickstart evaluates and tabulates them.
HELD_OUT_SPLITS = ("heldout-functions", "heldout-repo")


@dataclass(frozen=True)
class SplitInput:
    tasks_file: Path
    folder: Path
    """Where the three task files, manifest.json and the record go."""
    held_out_repo: str
    """owner/name of the repository held out whole."""
    ratio: float
    """Share of the other repositories' tasks in train."""
    seed: int
    eval_methods: tuple[str, ...] = ()
    """Synth methods of the held-out tasks kept (empty: every task)."""
    short_statements: bool = False
    """Cut each statement to its first paragraph (`repogym.train.mutation_demos.short_statement`)."""


@dataclass(frozen=True)
class SplitResult(StageResult):
    train: int
    heldout_functions: int
    heldout_repo: int


def split_stage(given: SplitInput, hooks: Hooks) -> SplitResult:
    """Train / held-out functions / held-out repo (see the module docstring)."""
    tasks = list(load_tasks(given.tasks_file))
    if given.short_statements:
        tasks = shorten_statements(tasks)
    repo_tasks = [task for task in tasks if task.repo == given.held_out_repo and _evaluated(task, given)]
    rest = [task for task in tasks if task.repo != given.held_out_repo]
    if not repo_tasks or len(rest) < 2:
        raise PipelineError(
            f"{given.tasks_file}: {len(repo_tasks)} task(s) of the held-out repository {given.held_out_repo} "
            f"and {len(rest)} of the others; both splits need tasks (raise --repos or the synth bugs per repo)"
        )
    split = split_tasks(rest, "function", ratio=given.ratio, seed=given.seed)
    # Held-out tasks of other methods are dropped, not moved to train: their functions are held out.
    tested = [task for task in split.test if _evaluated(task, given)]
    if not split.train or not tested:
        raise PipelineError(f"split by function: {len(split.train)} train / {len(tested)} held-out tasks")
    save_tasks(list(split.train), given.folder / "train.jsonl")
    save_tasks(tested, given.folder / "heldout-functions.jsonl")
    save_tasks(repo_tasks, given.folder / "heldout-repo.jsonl")
    write_json(given.folder / "manifest.json", {**split.manifest, "held_out_repo": given.held_out_repo})
    return SplitResult(train=len(split.train), heldout_functions=len(tested), heldout_repo=len(repo_tasks))


def _evaluated(task: Task, given: SplitInput) -> bool:
    """Whether a held-out task is evaluated: every task, or only synthetic ones of `eval_methods`."""
    return not given.eval_methods or task.metadata.get("method") in given.eval_methods
