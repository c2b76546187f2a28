"""The whole pipeline on built-in sample repositories: generate -> mine -> validate -> grade.

This is what `repogym quickstart` runs. It needs nothing but this machine and
the package index (for the sample repos' test environments): the repositories
are generated (`repogym.samples`), their histories mined, every candidate proved
in the sandbox, and the validated tasks graded with their gold patches (which
must resolve) and with empty patches (which must not).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from repogym.dataset import save_tasks
from repogym.grading.batch import BatchReport, grade_predictions
from repogym.predictions import Prediction, save_predictions
from repogym.task import Task

Notify = Callable[[str], None]


@dataclass
class QuickstartResult:
    out_dir: Path
    repos: list[str] = field(default_factory=list)
    planted_fixes: int = 0
    commits_scanned: int = 0
    candidates: int = 0
    validated: int = 0
    """Candidates proved by their tests (before the privacy stage)."""
    privacy_dropped: int = 0
    tasks: list[Task] = field(default_factory=list)
    gold: BatchReport | None = None
    empty: BatchReport | None = None
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def gold_resolved(self) -> int:
        return sum(r.resolved for r in self.gold.results.values()) if self.gold else 0

    @property
    def empty_resolved(self) -> int:
        return sum(r.resolved for r in self.empty.results.values()) if self.empty else 0


def run_quickstart(
    out_dir: str | Path,
    *,
    seed: int = 0,
    n_repos: int = 2,
    workers: int = 2,
    sandbox: str = "bwrap",
    notify: Notify = lambda _: None,
) -> QuickstartResult:
    """Run every stage into `out_dir` (re-running resumes validation and grading)."""
    from repogym.mining.config import MiningConfig
    from repogym.mining.mine import mine
    from repogym.samples import generate_suite
    from repogym.validate.batch import ValidateConfig, validate_candidates

    out = Path(out_dir).absolute()  # every later stage (git included) may run in another folder
    out.mkdir(parents=True, exist_ok=True)
    result = QuickstartResult(out)
    started = time.perf_counter()
    repos_root = out / "repos"
    if repos_root.exists():
        import shutil

        shutil.rmtree(repos_root)  # generation is deterministic: same seed, same repositories
    samples = generate_suite(repos_root, seed=seed, n_repos=n_repos)
    result.repos = [sample.name for sample in samples]
    result.planted_fixes = sum(len(sample.fixes) for sample in samples)
    result.timings["generate_s"] = time.perf_counter() - started
    notify(f"generated {len(samples)} sample repositories in {repos_root}")

    started = time.perf_counter()
    candidates: list[Task] = []
    for sample in samples:
        mined = mine(sample.path, MiningConfig(repo_name=sample.github), prs=sample.prs_path)
        result.commits_scanned += mined.funnel.scanned
        candidates.extend(mined.tasks)
    result.candidates = len(candidates)
    candidates_path = out / "candidates.jsonl"
    save_tasks(candidates, candidates_path)
    result.timings["mine_s"] = time.perf_counter() - started
    notify(f"mined {len(candidates)} candidates from {result.commits_scanned} commits -> {candidates_path}")

    started = time.perf_counter()
    notify("validating candidates in the sandbox (the first environment build reaches the package index)")
    run = validate_candidates(
        candidates,
        out / "tasks.jsonl",
        ValidateConfig(workers=workers, sandbox=sandbox),  # privacy scrub on: secrets, licence allowlist
        funnel_path=out / "validate-funnel.json",
    )
    result.tasks = list(run.tasks)
    result.validated = sum(1 for outcome in run.outcomes.values() if outcome.validated)
    result.privacy_dropped = len(run.scrub.dropped) if run.scrub else 0
    result.timings["validate_s"] = time.perf_counter() - started
    notify(f"validated {len(result.tasks)} tasks -> {out / 'tasks.jsonl'}")

    started = time.perf_counter()
    result.gold = _grade_all(result.tasks, out, "gold", lambda task: task.patch, workers, sandbox)
    result.empty = _grade_all(result.tasks, out, "empty", lambda task: "", workers, sandbox)
    result.timings["grade_s"] = time.perf_counter() - started
    return result


def _grade_all(
    tasks: list[Task], out: Path, label: str, patch_of: Callable[[Task], str], workers: int, sandbox: str
) -> BatchReport:
    from repogym.dataset import TaskSet

    predictions = [Prediction(task.instance_id, label, patch_of(task)) for task in tasks]
    save_predictions(predictions, out / f"predictions.{label}.jsonl")
    return grade_predictions(
        TaskSet(tasks), predictions, out / f"report.{label}.json", workers=workers, sandbox=sandbox
    )
