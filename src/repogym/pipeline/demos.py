"""The demonstrations stage (`repogym.train.mutation_demos`): synth's methods injected into the training
repositories' other functions and into the standard library -> FOLDER/demos.jsonl, cheap SFT rows that are
not validated in the sandbox.

Guarantees: nothing held out is used: the held-out repository is not among `repo_folders`, held-out
functions are left out of the repository rows, and a row (repository or corpus) whose answer writes a
held-out task's fixed line or fixed function body is dropped (`repogym.train.leakage`; each guard's drops
are in the record's `dropped`). Not guaranteed: that a demonstration's "fix" is the only right one (it
restores the original line).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from repogym.dataset import load_tasks
from repogym.files import read_jsonl_records, write_jsonl
from repogym.locate import task_locations
from repogym.pipeline.record import StageResult
from repogym.pipeline.runner import Hooks
from repogym.pipeline.split import HELD_OUT_SPLITS
from repogym.train.leakage import LeakageGuard
from repogym.train.mutation_demos import DemoOptions, DemoReport, build_demos, drop_held_out, repo_demos


@dataclass(frozen=True)
class DemosInput:
    split_folder: Path
    """The split stage's folder: its held-out task files say what must never be shown."""
    folder: Path
    """Where demos.jsonl, demos-corpus.jsonl and the record (demos.json) go."""
    options: DemoOptions
    repo_folders: tuple[Path, ...]
    """Working trees of the training repositories (never the held-out one); missing ones are skipped."""
    workers: int = 2


@dataclass(frozen=True)
class DemosResult(StageResult):
    RECORD: ClassVar[str] = "demos.json"
    repo_rows: int
    corpus_rows: int
    corpus: dict[str, Any]
    """The corpus build's report (`DemoReport.to_dict`)."""
    repos: dict[str, Any]
    """The repository rows' report."""


def demos_stage(given: DemosInput, hooks: Hooks) -> DemosResult:
    held_out = [
        task for split in HELD_OUT_SPLITS for task in load_tasks(given.split_folder / f"{split}.jsonl")
    ]
    banned = {location for task in held_out for location in task_locations(task)}
    corpus_path = given.folder / "demos-corpus.jsonl"
    guard = LeakageGuard.from_tasks(held_out)
    corpus = build_demos(corpus_path, given.options, guard=guard, workers=given.workers)
    report = DemoReport()
    rows = repo_demos([f for f in given.repo_folders if f.is_dir()], given.options, banned, report)
    rows = drop_held_out(rows, guard, report)
    report.rows = len(rows)
    write_jsonl(given.folder / "demos.jsonl", [*rows, *read_jsonl_records(corpus_path)])
    return DemosResult(
        repo_rows=len(rows), corpus_rows=corpus.rows, corpus=corpus.to_dict(), repos=report.to_dict()
    )
