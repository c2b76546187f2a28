"""Where an eval writes what, as names: what the comparison and the report read, without importing the eval itself
(which brings the rollout, env and sandbox stack: half a second of a `repogym report` start)."""

from __future__ import annotations

SUMMARY_KIND = "repogym.eval"
SUMMARY_FILE = "summary.json"
ROLLOUT_DIR = "rollout"
PREDICTIONS_FILE = "predictions.jsonl"
SWEBENCH_REPORT_FILE = "swebench_report.json"
#: Stage names the report knows the order of (others follow, in the order given): the non-learned baseline
#: (`--policy heuristic:swap`), the model before training, after SFT, after GRPO, then the two models sampled.
KNOWN_STAGES = ("swap", "baseline", "sft", "grpo", "sft-sampled", "grpo-sampled")
