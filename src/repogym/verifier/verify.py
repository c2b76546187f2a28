"""`repogym verify ROLLOUT_DIR --verifier V --out DIR`: score stored attempts with a verifier and measure it.

Layout of DIR:

- `summary.json`: `kind: "repogym.verify"`, `auc` and `ece` (each with its bootstrap interval under
  `intervals`), the reliability bins (equal width: count, mean score, share resolved per bin), which tasks
  were scored and which were left out because the verifier was trained on them, the bootstrap settings.
- `scores.jsonl`: one row per scored attempt (instance_id, attempt, folder, resolved, score).

Held out: when the verifier's manifest lists its training tasks, attempts on those tasks are not scored (a
verifier measured on what it was trained on says little); the summary names both sets. `auc` is null, with
`auc_undefined` saying why, when the scored attempts are all resolved or all unresolved (nothing to rank);
`ece` is still measured then.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repogym.errors import ConfigError
from repogym.evaluate.bootstrap import BootstrapSettings
from repogym.evaluate.layout import VERIFY_SUMMARY_KIND
from repogym.files import write_json, write_jsonl
from repogym.verifier.data import label_counts, read_attempts
from repogym.verifier.metrics import DEFAULT_BINS, auc, calibration_bins, ece, task_bootstrap
from repogym.verifier.score import load_verifier, score_prompts

SUMMARY_KIND = VERIFY_SUMMARY_KIND
SUMMARY_FILE = "summary.json"
SCORES_FILE = "scores.jsonl"


@dataclass(frozen=True)
class VerifyConfig:
    """One `repogym verify` run."""

    rollout_dirs: tuple[str, ...]
    """Rollout or eval folders whose graded attempts are scored."""
    verifier: str
    """A verifier folder (`repogym train verifier`'s, or any causal LM with a chat template)."""
    out: str
    bins: int = DEFAULT_BINS
    """Equal-width bins of the ECE and the reliability diagram."""
    bootstrap: BootstrapSettings = field(default_factory=BootstrapSettings)


def run_verify(config: VerifyConfig, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Score the held-out attempts, write scores.jsonl and summary.json; returns the summary.

    `progress(done, total)` hears after each batch of attempts scored."""
    if config.bins < 1:
        raise ConfigError(f"--bins {config.bins}: must be at least 1")
    verifier = load_verifier(config.verifier)
    attempts = read_attempts(config.rollout_dirs, verifier.include_trajectory)
    if not attempts:
        raise ConfigError(f"{', '.join(config.rollout_dirs)}: no graded attempt to score")
    trained_on = sorted({a.instance_id for a in attempts} & verifier.training_tasks)
    scored = [attempt for attempt in attempts if attempt.instance_id not in verifier.training_tasks]
    if not scored:
        raise ConfigError(
            f"{', '.join(config.rollout_dirs)}: every task here ({len(trained_on)}) was trained on by "
            f"{config.verifier}; give rollouts of tasks it held out (its manifest lists them under split.heldout)"
        )
    scores = score_prompts(verifier, scored, progress=progress)
    labels = [attempt.resolved for attempt in scored]
    tasks = [attempt.instance_id for attempt in scored]
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / SCORES_FILE, (
        {"instance_id": a.instance_id, "attempt": a.attempt, "folder": a.folder, "resolved": a.resolved,
         "score": score}
        for a, score in zip(scored, scores, strict=True)
    ))  # fmt: skip
    ece_of = functools.partial(ece, bins=config.bins)
    auc_value = auc(scores, labels)
    intervals = {
        "auc": task_bootstrap(auc, scores, labels, tasks, config.bootstrap),
        "ece": task_bootstrap(ece_of, scores, labels, tasks, config.bootstrap),
    }
    summary = {
        "kind": SUMMARY_KIND, "schema_version": 1, "verifier": os.fspath(config.verifier),
        "rollout_dirs": list(config.rollout_dirs), "attempts": len(scored), **label_counts(scored),
        "auc": auc_value, "ece": ece_of(scores, labels), "mean_score": mean_scores(scores, labels),
        "intervals": {name: list(bounds) if bounds else None for name, bounds in intervals.items()},
        **({} if auc_value is not None else {"auc_undefined": "the scored attempts are all of one kind"}),
        "bins": config.bins, "reliability": [b.to_dict() for b in calibration_bins(scores, labels, config.bins)],
        "tasks": {
            "scored": sorted(set(tasks)), "left_out_as_trained_on": trained_on,
            "restriction": "tasks the verifier held out of training" if verifier.training_tasks
            else "none: the verifier has no manifest of its training tasks",
        },
        "bootstrap": config.bootstrap.to_dict(), "files": {"scores": SCORES_FILE},
    }  # fmt: skip
    write_json(out / SUMMARY_FILE, summary)
    return summary


def mean_scores(scores: list[float], labels: list[bool]) -> dict[str, float | None]:
    """The mean p(YES) of resolved and of unresolved attempts: how far apart the verifier puts them (AUC only
    ranks, so scores a hair apart rank as well as scores far apart).

    >>> mean_scores([0.9, 0.7, 0.2], [True, True, False])
    {'resolved': 0.8, 'unresolved': 0.2}
    """
    found: dict[str, float | None] = {}
    for name, wanted in (("resolved", True), ("unresolved", False)):
        values = [score for score, label in zip(scores, labels, strict=True) if label is wanted]
        found[name] = round(sum(values) / len(values), 12) if values else None
    return found
