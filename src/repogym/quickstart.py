"""The quickstart's data stages on built-in sample repositories: generate -> mine + synth -> validate -> grade.

This is the first half of `repogym quickstart` (the training half is `repogym.quickstart_loop`). It
needs nothing but this machine and the package index (for the sample repos' test environments):
the repositories are generated (`repogym.samples`), their histories mined and single-line bugs
injected into their covered functions (`repogym.synth`), every candidate proved in the sandbox, and
the validated tasks graded with their gold patches (which must resolve) and with empty patches
(which must not). Funnels land where `repogym report` looks: OUT/mine/, OUT/synth/ and
OUT/tasks.jsonl.funnel.json.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repogym.dataset import save_tasks
from repogym.files import write_json
from repogym.grading.batch import BatchReport, grade_predictions
from repogym.predictions import Prediction, save_predictions
from repogym.task import Task

Notify = Callable[[str], None]
#: (what, done, total): a stage's counter, for a live progress bar.
Progress = Callable[[str, int, int], None]


@dataclass
class QuickstartResult:
    out_dir: Path
    repos: list[str] = field(default_factory=list)
    """The sample repositories' owner/name, in generation order (the last one is held out by the loop)."""
    planted_fixes: int = 0
    commits_scanned: int = 0
    candidates: int = 0
    """Mined candidates."""
    synth_candidates: int = 0
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

    def to_dict(self) -> dict[str, Any]:
        """What quickstart.json records of the data stages (a resumed run prints its table from it)."""
        return {
            "repos": self.repos, "planted_fixes": self.planted_fixes, "commits_scanned": self.commits_scanned,
            "candidates": self.candidates, "synth_candidates": self.synth_candidates, "validated": self.validated,
            "privacy_dropped": self.privacy_dropped, "tasks": len(self.tasks), "gold_resolved": self.gold_resolved,
            "empty_resolved": self.empty_resolved, "timings": self.timings,
        }  # fmt: skip


def run_quickstart(
    out_dir: str | Path,
    *,
    seed: int = 0,
    n_repos: int = 2,
    synth_per_repo: int = 0,
    workers: int = 2,
    sandbox: str = "bwrap",
    notify: Notify = lambda _: None,
    progress: Progress | None = None,
) -> QuickstartResult:
    """Run the data stages into `out_dir` (re-running resumes validation and grading)."""
    from repogym.samples import generate_suite

    out = Path(out_dir).absolute()  # every later stage (git included) may run in another folder
    out.mkdir(parents=True, exist_ok=True)
    result = QuickstartResult(out)
    started = time.perf_counter()
    repos_root = out / "repos"
    if repos_root.exists():
        shutil.rmtree(repos_root)  # generation is deterministic: same seed, same repositories
    samples = generate_suite(repos_root, seed=seed, n_repos=n_repos)
    result.repos = [sample.github for sample in samples]
    result.planted_fixes = sum(len(sample.fixes) for sample in samples)
    result.timings["generate_s"] = time.perf_counter() - started
    notify(f"generated {len(samples)} sample repositories in {repos_root}")

    started = time.perf_counter()
    candidates = _mine_all(samples, out, result)
    result.timings["mine_s"] = time.perf_counter() - started
    notify(f"mined {result.candidates} candidates from {result.commits_scanned} commits")
    if synth_per_repo:
        started = time.perf_counter()
        synthetic = _synth_all(samples, out, synth_per_repo, seed, sandbox, progress)
        result.synth_candidates = len(synthetic)
        candidates += synthetic
        result.timings["synth_s"] = time.perf_counter() - started
        notify(f"injected {len(synthetic)} single-line bugs into covered functions (synth)")
    candidates_path = out / "candidates.jsonl"
    save_tasks(candidates, candidates_path)

    started = time.perf_counter()
    _validate(candidates, out, result, workers, sandbox, notify, progress)
    result.timings["validate_s"] = time.perf_counter() - started
    notify(f"validated {len(result.tasks)} tasks -> {out / 'tasks.jsonl'}")

    started = time.perf_counter()
    result.gold = _grade_all(result.tasks, out, "gold", lambda task: task.patch, workers, sandbox)
    result.empty = _grade_all(result.tasks, out, "empty", lambda task: "", workers, sandbox)
    result.timings["grade_s"] = time.perf_counter() - started
    return result


def _mine_all(samples: list[Any], out: Path, result: QuickstartResult) -> list[Task]:
    from repogym.mining.config import MiningConfig
    from repogym.mining.mine import mine

    candidates: list[Task] = []
    for sample in samples:
        mined = mine(sample.path, MiningConfig(repo_name=sample.github), prs=sample.prs_path)
        write_json(out / "mine" / f"{sample.name}.funnel.json", mined.funnel.to_dict())
        result.commits_scanned += mined.funnel.scanned
        candidates.extend(mined.tasks)
    result.candidates = len(candidates)
    return candidates


def _synth_all(
    samples: list[Any], out: Path, per_repo: int, seed: int, sandbox: str, progress: Progress | None
) -> list[Task]:
    """Single-line bugs only: they are what a tiny model can learn to repair from a 3-line window."""
    from repogym.config import validate_config
    from repogym.synth.config import SynthConfig
    from repogym.synth.synth import synthesize

    tasks: list[Task] = []
    for sample in samples:
        config = validate_config(
            {"methods": ["single_line"], "max_candidates": per_repo, "seed": seed, "repo_name": sample.github,
             "sandbox": sandbox},
            SynthConfig, source="quickstart synth settings",
        )  # fmt: skip
        report = (lambda stage, done, total, name=sample.name: progress(f"synth {name}: {stage}", done, total)) \
            if progress else None  # fmt: skip
        synthesized = synthesize(sample.path, config, out / "synth-repos", progress=report)
        write_json(out / "synth" / f"{sample.name}.funnel.json", [synthesized.funnel.to_dict()])
        tasks.extend(synthesized.tasks)
    return tasks


def _validate(
    candidates: list[Task], out: Path, result: QuickstartResult, workers: int, sandbox: str, notify: Notify,
    progress: Progress | None,
) -> None:  # fmt: skip
    from repogym.validate.batch import ValidateConfig, validate_candidates

    notify("validating candidates in the sandbox (the first environment build reaches the package index)")
    counts = {"done": 0, "total": len(candidates)}

    def on_start(todo: int, done: int) -> None:
        counts.update(done=done, total=todo + done)
        if progress:
            progress("validate", done, counts["total"])

    def on_result(_outcome: Any) -> None:
        counts["done"] += 1
        if progress:
            progress("validate", counts["done"], counts["total"])

    run = validate_candidates(
        candidates,
        out / "tasks.jsonl",
        ValidateConfig(workers=workers, sandbox=sandbox),  # privacy scrub on: secrets, licence allowlist
        funnel_path=out / "tasks.jsonl.funnel.json",
        on_start=on_start,
        on_result=on_result,
    )
    result.tasks = list(run.tasks)
    result.validated = sum(1 for outcome in run.outcomes.values() if outcome.validated)
    result.privacy_dropped = len(run.scrub.dropped) if run.scrub else 0


def _grade_all(
    tasks: list[Task], out: Path, label: str, patch_of: Callable[[Task], str], workers: int, sandbox: str
) -> BatchReport:
    from repogym.dataset import TaskSet

    predictions = [Prediction(task.instance_id, label, patch_of(task)) for task in tasks]
    save_predictions(predictions, out / f"predictions.{label}.jsonl")
    return grade_predictions(
        TaskSet(tasks), predictions, out / f"report.{label}.json", workers=workers, sandbox=sandbox
    )
