"""Find what a report can show under the run folders it is given, and read it defensively.

What is recognised (anywhere under a RUN_DIR, up to `MAX_DEPTH` folders down; hidden folders and
training checkpoints are skipped):

- an eval folder: `summary.json` with `kind: "repogym.eval"` (`repogym eval --out`); its `stage`
  and `split` place it in the before/after table, its `rollout/` feeds the trajectory viewer, and a routed
  eval's `routing` (`repogym eval --route`) the routing section;
- a training run: `metrics.jsonl` (one JSON row per logging step; SFT rows carry `loss`, RL rows
  `reward...` terms); its folder's path names the run;
- a plain rollout folder: `trajectories-*.jsonl` or `.ledger` (`repogym rollout --out`);
- a verify folder: `summary.json` with `kind: "repogym.verify"` (`repogym verify --out`): its reliability bins,
  AUC and ECE;
- a funnel: any `*funnel*.json` (`repogym mine --funnel`, `repogym validate`'s OUT.funnel.json,
  synth's), classified by its shape (`repogym.evaluate.report.funnels`).

A RUN_DIR under which none of these exists is a user error naming it. Unreadable files are skipped
with a warning, not fatal: a report of what is there beats no report.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repogym.errors import ConfigError
from repogym.evaluate.layout import KNOWN_STAGES, ROLLOUT_DIR, SUMMARY_FILE, SUMMARY_KIND, VERIFY_SUMMARY_KIND
from repogym.files import METRICS_FILE, read_jsonl_records

MAX_DEPTH = 4
_FUNNEL_NAME = re.compile(r"funnel.*\.json$", re.IGNORECASE)
_SHARD = re.compile(r"^trajectories-\d{5,}\.jsonl$")
TRAINING_STAGES = ("pretrain", "sft", "grpo", "rl", "flywheel")
_SKIP_DIR = re.compile(r"^(\..*|checkpoint-\d+|__pycache__|node_modules)$")


@dataclass(frozen=True)
class EvalRun:
    path: Path
    summary: dict[str, Any]
    label: str
    """'stage split' when given, else the folder's name."""

    @property
    def stage(self) -> str:
        return str(self.summary.get("stage") or self.path.name)

    @property
    def split(self) -> str:
        return str(self.summary.get("split") or "all tasks")

    @property
    def routing(self) -> dict[str, Any] | None:
        """The routing curve of a routed eval (`repogym eval --route`), None for any other eval or a curve
        without its rows and both policies alone."""
        routing = self.summary.get("routing")
        if not isinstance(routing, dict) or not isinstance(routing.get("curve"), list):
            return None
        alone = [routing.get(key) for key in ("small", "large")]
        return routing if all(isinstance(policy, dict) for policy in alone) else None

    @property
    def rollout_dir(self) -> Path:
        files = self.summary.get("files")
        name = files.get("rollout") if isinstance(files, dict) else None
        return self.path / str(name or ROLLOUT_DIR)


@dataclass(frozen=True)
class TrainingRun:
    path: Path
    label: str
    rows: list[dict[str, Any]]


@dataclass(frozen=True)
class RolloutRun:
    path: Path
    label: str


@dataclass(frozen=True)
class VerifyRun:
    """A `repogym verify --out` folder: its summary.json (auc, ece, intervals, reliability bins)."""

    path: Path
    label: str
    summary: dict[str, Any]


@dataclass(frozen=True)
class FunnelFile:
    path: Path
    label: str
    data: Any


@dataclass
class ReportInputs:
    evals: list[EvalRun] = field(default_factory=list)
    trainings: list[TrainingRun] = field(default_factory=list)
    rollouts: list[RolloutRun] = field(default_factory=list)
    funnels: list[FunnelFile] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    verifies: list[VerifyRun] = field(default_factory=list)

    def count(self) -> int:
        return sum(map(len, (self.evals, self.trainings, self.rollouts, self.funnels, self.verifies)))

    def ordered_trainings(self) -> list[TrainingRun]:
        """Pretraining, then SFT, then RL runs (by a stage word in their path), then the rest."""

        def rank(run: TrainingRun) -> int:
            # The run's own folder and its parent ("model/pretrained", "train/sft"), not the folder the
            # user named, which may hold any word; by prefix: "pretrained" is a pretraining run.
            words = re.split(r"[^a-z]+", "/".join(Path(run.label).parts[-2:]).lower())
            return next(
                (i for i, stage in enumerate(TRAINING_STAGES) if any(w.startswith(stage) for w in words)),
                len(TRAINING_STAGES),
            )

        return sorted(self.trainings, key=rank)

    def ordered_evals(self) -> list[EvalRun]:
        """Known stages first (swap, baseline, sft, grpo), then others in the order found."""
        rank = {stage: i for i, stage in enumerate(KNOWN_STAGES)}
        return sorted(self.evals, key=lambda e: (rank.get(e.stage, len(rank)), self.evals.index(e)))


def collect(run_dirs: list[Path]) -> ReportInputs:
    """Everything recognised under `run_dirs`; raises ConfigError naming any that holds nothing."""
    inputs = ReportInputs()
    seen: set[Path] = set()
    base = _common_base(run_dirs)
    empty = []
    for given in run_dirs:
        if not given.exists():
            raise ConfigError(f"{given}: no such file or folder")
        before = inputs.count()
        if given.is_file():
            _read_file(given, base, inputs, seen)
        else:
            _walk(given, base, inputs, seen)
        if inputs.count() == before:
            empty.append(given)
    if empty:
        names = ", ".join(str(p) for p in empty)
        raise ConfigError(
            f"{names}: holds nothing the report knows (an eval folder's {SUMMARY_FILE} with kind "
            f"{SUMMARY_KIND!r}, a verify folder's with kind {VERIFY_SUMMARY_KIND!r}, a training run's {METRICS_FILE}, "
            "a rollout's trajectories-*.jsonl or .ledger, or a *funnel*.json)"
        )
    return inputs


def _walk(root: Path, base: Path, inputs: ReportInputs, seen: set[Path]) -> None:
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        depth = len(here.relative_to(root).parts)
        dirs[:] = sorted(d for d in dirs if not _SKIP_DIR.match(d)) if depth < MAX_DEPTH else []
        names = set(files)
        if SUMMARY_FILE in names:
            _read_eval(here / SUMMARY_FILE, base, inputs, seen)
        if METRICS_FILE in names:
            _read_metrics(here / METRICS_FILE, base, inputs, seen)
        is_rollout = ".ledger" in names or any(_SHARD.match(name) for name in names)
        if is_rollout and _first_time(here, seen):  # an eval's own rollout/ was marked seen with it
            inputs.rollouts.append(RolloutRun(here, _label(here, base)))
        for name in sorted(names):
            if _FUNNEL_NAME.search(name):
                _read_funnel(here / name, base, inputs, seen)


def _read_file(path: Path, base: Path, inputs: ReportInputs, seen: set[Path]) -> None:
    if path.name == METRICS_FILE:
        _read_metrics(path, base, inputs, seen)
    elif path.name == SUMMARY_FILE:
        _read_eval(path, base, inputs, seen)
    elif _FUNNEL_NAME.search(path.name):
        _read_funnel(path, base, inputs, seen)


def _read_eval(path: Path, base: Path, inputs: ReportInputs, seen: set[Path]) -> EvalRun | None:
    data = _json(path, inputs)
    if isinstance(data, dict) and data.get("kind") == VERIFY_SUMMARY_KIND:
        _read_verify(path, data, base, inputs, seen)
        return None
    if not isinstance(data, dict) or data.get("kind") != SUMMARY_KIND:
        return None  # a rollout's own summary.json, or someone else's file
    if not isinstance(data.get("per_task"), dict) or "pass@1" not in data:
        inputs.warnings.append(f"{path}: an eval summary without per_task/pass@1; skipped")
        return None
    if not _first_time(path, seen):
        return None
    label = " ".join(str(x) for x in (data.get("stage"), data.get("split")) if x) or _label(path.parent, base)
    run = EvalRun(path.parent, data, label)
    seen.add(run.rollout_dir.resolve())  # its trajectories show under the eval, not as a second rollout
    inputs.evals.append(run)
    return run


def _read_verify(path: Path, data: dict[str, Any], base: Path, inputs: ReportInputs, seen: set[Path]) -> None:
    if not isinstance(data.get("reliability"), list):
        inputs.warnings.append(f"{path}: a verify summary without reliability bins; skipped")
        return
    if _first_time(path, seen):
        inputs.verifies.append(VerifyRun(path.parent, _label(path.parent, base), data))


def _read_metrics(path: Path, base: Path, inputs: ReportInputs, seen: set[Path]) -> None:
    if not _first_time(path, seen):
        return
    rows = [row for row in read_jsonl_records(path) if isinstance(row, dict)]
    if not rows:
        inputs.warnings.append(f"{path}: no rows yet; skipped")
        return
    inputs.trainings.append(TrainingRun(path.parent, _label(path.parent, base), rows))


def _read_funnel(path: Path, base: Path, inputs: ReportInputs, seen: set[Path]) -> None:
    data = _json(path, inputs)
    if data is not None and _first_time(path, seen):
        inputs.funnels.append(FunnelFile(path, _label(path, base), data))


def _json(path: Path, inputs: ReportInputs) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        inputs.warnings.append(f"{path}: unreadable ({type(exc).__name__}); skipped")
        return None


def _first_time(path: Path, seen: set[Path]) -> bool:
    key = path.resolve()
    if key in seen:
        return False
    seen.add(key)
    return True


def _common_base(paths: list[Path]) -> Path:
    resolved = [p.resolve() for p in paths]
    try:
        common = Path(os.path.commonpath(resolved))
    except ValueError:
        return Path("/")
    return common.parent if len(resolved) == 1 or common in resolved else common


def _label(path: Path, base: Path) -> str:
    try:
        return str(path.resolve().relative_to(base)) or path.name
    except ValueError:
        return str(path)
