"""The data stage: built-in sample repositories -> generate -> mine + synth -> validate -> grade -> OUT/tasks.jsonl.

It needs nothing but this machine and the package index (for the sample repos' test environments): the
repositories are generated (`repogym.samples`), their histories mined and single-line bugs injected into
their covered functions (`repogym.synth`), every candidate proved in the sandbox, and the validated tasks
graded with their gold patches (which must resolve) and with empty patches (which must not). Funnels land
where `repogym report` looks: OUT/mine/, OUT/synth/ and OUT/tasks.jsonl.funnel.json; the result is recorded
in OUT/data.json.

Guarantees: the same seed generates the same repositories (a rerun regenerates them rather than trusting a
half-written folder) and validation and grading resume from what they wrote. Not guaranteed: that every
planted fix becomes a task (validation decides), nor that gold patches resolve: `DataResult.behaved` says
whether they did.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from repogym.dataset import TaskSet, save_tasks
from repogym.files import write_json
from repogym.grading.batch import BatchReport, grade_predictions
from repogym.mining.config import MiningConfig
from repogym.mining.mine import mine
from repogym.pipeline.record import StageResult
from repogym.pipeline.runner import Hooks, Progress
from repogym.predictions import Prediction, save_predictions
from repogym.samples import SampleRepo, generate_suite
from repogym.synth.config import SynthConfig
from repogym.synth.synth import synthesize
from repogym.task import Task
from repogym.validate.batch import ValidateConfig, ValidationRun, validate_candidates


@dataclass(frozen=True)
class DataInput:
    out: Path
    """The run folder: repos/, candidates.jsonl, tasks.jsonl, predictions and reports, funnels."""
    seed: int = 0
    """Seed of the sample repositories and of synth."""
    repos: int = 2
    """Sample repositories generated (the quickstart holds the last one out)."""
    synth_per_repo: int = 0
    """Synthetic single-line bugs drawn per repository (0: mined tasks only)."""
    workers: int = 2
    """Parallel validations and gradings."""
    sandbox: str = "bwrap"

    @property
    def folder(self) -> Path:
        return self.out


@dataclass(frozen=True)
class DataResult(StageResult):
    """What the data stage made (the quickstart prints it as its first table)."""

    RECORD: ClassVar[str] = "data.json"
    repos: tuple[str, ...]
    """The sample repositories' owner/name, in generation order (the quickstart holds the last one out)."""
    planted_fixes: int
    commits_scanned: int
    candidates: int
    """Mined candidates."""
    synth_candidates: int
    validated: int
    """Candidates proved by their tests (before the privacy scrub)."""
    privacy_dropped: int
    tasks: int
    """Tasks written to OUT/tasks.jsonl."""
    gold_resolved: int
    empty_resolved: int
    timings: dict[str, float]
    """Seconds per step: generate_s, mine_s, synth_s (with synth), validate_s, grade_s."""

    @property
    def behaved(self) -> bool:
        """Tasks were made, every gold patch resolves its task and no empty patch does."""
        return self.tasks > 0 and self.gold_resolved == self.tasks and self.empty_resolved == 0


def data_stage(given: DataInput, hooks: Hooks) -> DataResult:
    """Generate -> mine -> synth -> validate -> grade into `given.out` (see the module docstring)."""
    out = given.out.absolute()  # every later stage (git included) may run in another folder
    out.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    with _timed(timings, "generate_s"):
        samples = _generate(out / "repos", given.seed, given.repos)
    hooks.notify(f"generated {len(samples)} sample repositories in {out / 'repos'}")
    with _timed(timings, "mine_s"):
        candidates, scanned = _mine_all(samples, out)
    mined = len(candidates)
    hooks.notify(f"mined {mined} candidates from {scanned} commits")
    synthetic: list[Task] = []
    if given.synth_per_repo:
        with _timed(timings, "synth_s"):
            synthetic = _synth_all(samples, out, given, hooks.progress)
        hooks.notify(f"injected {len(synthetic)} single-line bugs into covered functions (synth)")
    candidates += synthetic
    save_tasks(candidates, out / "candidates.jsonl")
    with _timed(timings, "validate_s"):
        run = _validate(candidates, out, given, hooks)
    tasks = list(run.tasks)
    hooks.notify(f"validated {len(tasks)} tasks -> {out / 'tasks.jsonl'}")
    with _timed(timings, "grade_s"):
        gold = _grade_all(tasks, out, "gold", lambda task: task.patch, given)
        empty = _grade_all(tasks, out, "empty", lambda task: "", given)
    return DataResult(
        repos=tuple(sample.github for sample in samples), planted_fixes=sum(len(s.fixes) for s in samples),
        commits_scanned=scanned, candidates=mined, synth_candidates=len(synthetic),
        validated=sum(1 for outcome in run.outcomes.values() if outcome.validated),
        privacy_dropped=len(run.scrub.dropped) if run.scrub else 0, tasks=len(tasks),
        gold_resolved=_resolved(gold), empty_resolved=_resolved(empty), timings=timings,
    )  # fmt: skip


@contextlib.contextmanager
def _timed(timings: dict[str, float], key: str) -> Iterator[None]:
    started = time.perf_counter()
    yield
    timings[key] = time.perf_counter() - started


def _generate(root: Path, seed: int, n_repos: int) -> list[SampleRepo]:
    if root.exists():
        shutil.rmtree(root)  # generation is deterministic: same seed, same repositories
    return generate_suite(root, seed=seed, n_repos=n_repos)


def _mine_all(samples: list[SampleRepo], out: Path) -> tuple[list[Task], int]:
    """Every sample's mined candidates, and the commits scanned for them."""
    candidates: list[Task] = []
    scanned = 0
    for sample in samples:
        mined = mine(sample.path, MiningConfig(repo_name=sample.github), prs=sample.prs_path)
        write_json(out / "mine" / f"{sample.name}.funnel.json", mined.funnel.to_dict())
        scanned += mined.funnel.scanned
        candidates.extend(mined.tasks)
    return candidates, scanned


def _synth_all(
    samples: list[SampleRepo], out: Path, given: DataInput, progress: Progress | None
) -> list[Task]:
    """Single-line bugs only: they are what a tiny model can learn to repair from a 3-line window."""
    tasks: list[Task] = []
    for sample in samples:
        config = SynthConfig(
            methods=["single_line"], max_candidates=given.synth_per_repo, seed=given.seed,
            repo_name=sample.github, sandbox=given.sandbox,
        )  # fmt: skip
        report = _per_repo(progress, f"synth {sample.name}") if progress else None
        synthesized = synthesize(sample.path, config, out / "synth-repos", progress=report)
        write_json(out / "synth" / f"{sample.name}.funnel.json", [synthesized.funnel.to_dict()])
        tasks.extend(synthesized.tasks)
    return tasks


def _per_repo(progress: Progress, name: str) -> Progress:
    """synth's (step, done, total) as one counter per repository, its step after the ':'."""
    return lambda step, done, total: progress(f"{name}: {step}", done, total)


def _validate(candidates: list[Task], out: Path, given: DataInput, hooks: Hooks) -> ValidationRun:
    hooks.notify(
        "validating candidates in the sandbox (the first environment build reaches the package index)"
    )
    counts = {"done": 0, "total": len(candidates)}
    progress = hooks.progress

    def on_start(todo: int, done: int) -> None:
        counts.update(done=done, total=todo + done)
        if progress:
            progress("validate", done, counts["total"])

    def on_result(_outcome: Any) -> None:
        counts["done"] += 1
        if progress:
            progress("validate", counts["done"], counts["total"])

    return validate_candidates(
        candidates,
        out / "tasks.jsonl",
        ValidateConfig(workers=given.workers, sandbox=given.sandbox),  # privacy scrub on: secrets, licences
        funnel_path=out / "tasks.jsonl.funnel.json",
        on_start=on_start,
        on_result=on_result,
    )


def _grade_all(tasks: list[Task], out: Path, label: str, patch_of: Callable[[Task], str],
               given: DataInput) -> BatchReport:  # fmt: skip
    predictions = [Prediction(task.instance_id, label, patch_of(task)) for task in tasks]
    save_predictions(predictions, out / f"predictions.{label}.jsonl")
    return grade_predictions(
        TaskSet(tasks),
        predictions,
        out / f"report.{label}.json",
        workers=given.workers,
        sandbox=given.sandbox,
    )


def _resolved(report: BatchReport) -> int:
    return sum(result.resolved for result in report.results.values())
