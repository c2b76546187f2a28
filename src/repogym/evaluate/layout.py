"""Where an eval writes what, as names: what the comparison and the report read, without importing the eval itself
(which brings the rollout, env and sandbox stack: half a second of a `repogym report` start)."""

from __future__ import annotations

import re

SUMMARY_KIND = "repogym.eval"
#: `repogym verify --out`'s summary.json (the verifier package writes it; the report reads it without importing it).
VERIFY_SUMMARY_KIND = "repogym.verify"
SUMMARY_FILE = "summary.json"
ROLLOUT_DIR = "rollout"
PREDICTIONS_FILE = "predictions.jsonl"
SWEBENCH_REPORT_FILE = "swebench_report.json"
#: An eval of one checkpoint of a training run: stage `<run>-step-<N>` (the quickstart's `grpo-step-4`); the
#: report draws these as a curve over the steps, not as before/after columns.
STEP_STAGE = re.compile(r"^(?P<run>.+)-step-(?P<step>\d+)$")


def checkpoint_stage(run: str, step: int | str) -> str:
    """The stage label of an eval of `run`'s checkpoint at `step`.

    >>> checkpoint_stage("grpo", 4), bool(STEP_STAGE.match(checkpoint_stage("grpo", 4)))
    ('grpo-step-4', True)
    """
    return f"{run}-step-{step}"


def sampled_stage(stage: str) -> str:
    """The stage label of `stage`'s model evaluated with sampled attempts (pass@k) beside its greedy eval."""
    return f"{stage}-sampled"


#: Stage names the report knows the order of (others follow, in the order given): the non-learned baseline
#: (`--policy heuristic:swap`), the model before training, after SFT, after GRPO, then the two models sampled.
KNOWN_STAGES = ("swap", "baseline", "sft", "grpo", sampled_stage("sft"), sampled_stage("grpo"))
