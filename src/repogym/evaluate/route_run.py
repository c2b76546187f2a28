"""`repogym eval --route`: evaluate two policies on every task, then route between them offline.

Layout of a routed eval folder DIR:

- `small/`, `large/`: one eval folder per policy (`repogym.evaluate.run`'s layout, n = 1, stages
  `<stage>-small` and `<stage>-large`), each policy alone on every task; re-running the command resumes them.
- `summary.json`: an eval summary (`kind: "repogym.eval"`, `policy: "route:small=...,large=..."`) of the routed
  run at the chosen threshold: `pass@1` with its interval and breakdown, as any eval has, `per_task[...]["route"]`
  (the task's risk, where it went, what each policy's attempt did) and `routing` (`repogym.evaluate.routing`:
  each policy alone, the chosen row and the curve over thresholds).
- `predictions.jsonl`, `swebench_report.json`: of each task's attempt by the policy it was routed to.

Routing reads only the stored attempts, so changing `--by` or `--threshold` and re-running the same folder
recomputes the curve without running or grading an attempt again (the verifier scores the small attempts anew).
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from repogym.agent.trajectory import Trajectory
from repogym.errors import ConfigError
from repogym.evaluate.difficulty import difficulty
from repogym.evaluate.groups import task_groups
from repogym.evaluate.layout import (
    PREDICTIONS_FILE,
    ROLLOUT_DIR,
    SUMMARY_FILE,
    SUMMARY_KIND,
    SWEBENCH_REPORT_FILE,
)
from repogym.evaluate.routing import (
    PREDICTORS,
    ROUTE_KEYS,
    PolicyAttempt,
    Route,
    RoutedTask,
    check_threshold,
    keeps_small,
    routing_block,
)
from repogym.evaluate.run import EvalConfig, Notify, Progress, eval_tasks, run_eval, stored_trajectories
from repogym.evaluate.scores import TaskCounts, eval_scores
from repogym.evaluate.swebench import first_attempts, predictions_of, swebench_report
from repogym.files import write_json
from repogym.predictions import save_predictions
from repogym.rollout.store import TrajectoryStore
from repogym.task import Task

#: The routed eval's stage when --stage gives none (its two policies' evals: route-small, route-large).
ROUTE_STAGE = "route"


def check_routed(config: EvalConfig, route: Route) -> None:
    """What routing needs of the eval's options, checked before any attempt runs (and before the CLI loads a
    verifier: its scoring is checked by `run_routed_eval`)."""
    check_threshold(route.threshold)
    if route.by not in PREDICTORS:
        raise ConfigError(f"--by {route.by!r}: unknown predictor; use difficulty or verifier:V")
    if config.n != 1:
        raise ConfigError(
            f"--route: routing compares one attempt of each policy per task; use -n 1 (got -n {config.n})"
        )
    if config.select is not None:
        raise ConfigError("--route: --select picks an attempt among n, --route a policy per task; use one")


def policy_eval(config: EvalConfig, route: Route, key: str) -> EvalConfig:
    """The eval of one of the route's policies alone on every task, in DIR/<key>."""
    return EvalConfig(
        out=os.fspath(config.root / key), rollout=config.rollout, policy=route.policy(key),
        stage=f"{config.stage or ROUTE_STAGE}-{key}", split=config.split, context=config.context,
        bootstrap=config.bootstrap,
    )  # fmt: skip


def run_routed_eval(
    config: EvalConfig, route: Route, *, notify: Notify = lambda _: None, progress: Progress | None = None
) -> dict[str, Any]:
    """Evaluate the small and then the large policy on every task (resuming what is stored), route offline and
    write DIR/summary.json; returns it. `config` gives the tasks, sampling, limits, labels and DIR; its own
    policy is not run (each of the route's is, in its own folder)."""
    check_routed(config, route)
    if PREDICTORS[route.by] and route.verifier_scores is None:
        raise ConfigError(f"--by {route.predictor}: load the verifier first (its scoring is not set)")
    for key in ROUTE_KEYS:
        run_eval(policy_eval(config, route, key), notify=notify, progress=progress)
    return finish_routed_eval(config, route)


def finish_routed_eval(config: EvalConfig, route: Route) -> dict[str, Any]:
    """Route over the two finished evals under DIR and write the routed summary, predictions and report."""
    tasks = eval_tasks(config)
    stored = {key: _first_attempts(config, key, tasks) for key in ROUTE_KEYS}
    risks, verifier_s = _risks(route, tasks, stored["small"])
    routed = [
        RoutedTask(t.instance_id, risks[t.instance_id].value, PolicyAttempt.of(stored["small"][t.instance_id]),
                   PolicyAttempt.of(stored["large"][t.instance_id]))
        for t in tasks
    ]  # fmt: skip
    routing = routing_block(routed, route, verifier_s)
    went = {t.instance_id: "small" if keeps_small(t.risk, route.threshold) else "large" for t in routed}
    chosen = {task_id: stored[key][task_id] for task_id, key in went.items()}
    counts = [
        TaskCounts(t.instance_id, n=1, c=int(chosen[t.instance_id].resolved), groups=task_groups(t),
                   outcomes=(_outcome(chosen[t.instance_id]),))
        for t in tasks
    ]  # fmt: skip
    scores = eval_scores(counts, [1], config.bootstrap)
    for task in routed:
        scores["per_task"][task.instance_id]["route"] = {
            "risk": task.risk, "to": went[task.instance_id], "small_resolved": task.small.resolved,
            "large_resolved": task.large.resolved, **risks[task.instance_id].basis,
        }  # fmt: skip
    model_name = config.model_name or f"route:{route.spec}"
    save_predictions(predictions_of(chosen, model_name), config.root / PREDICTIONS_FILE)
    report = swebench_report(chosen, total_instances=len(tasks)).to_dict()
    write_json(config.root / SWEBENCH_REPORT_FILE, report)
    rollout = config.rollout
    summary = {
        "kind": SUMMARY_KIND, "schema_version": 1, "stage": config.stage or ROUTE_STAGE, "split": config.split,
        "policy": f"route:{route.spec}", "model_name_or_path": model_name, "mode": rollout.mode,
        "context": config.context, "sampling": rollout.settings_sampling.to_dict(),
        "limits": dataclasses.asdict(rollout.limits), "tasks_file": os.fspath(rollout.tasks), "n": 1,
        "select": None, **scores, "routing": routing, "first_attempt_resolved": report["resolved_instances"],
        "prediction_attempt": "the attempt of the policy each task was routed to",
        "files": {"small": "small", "large": "large", "predictions": PREDICTIONS_FILE,
                  "swebench_report": SWEBENCH_REPORT_FILE},
    }  # fmt: skip
    write_json(config.root / SUMMARY_FILE, summary)
    return summary


def _first_attempts(config: EvalConfig, key: str, tasks: Sequence[Task]) -> dict[str, Trajectory]:
    """Each task's stored attempt 0 in DIR/<key>; an eval that lacks one is unfinished."""
    folder = config.root / key / ROLLOUT_DIR
    found = first_attempts(stored_trajectories(TrajectoryStore(folder), {t.instance_id for t in tasks}, 1))
    missing = [t.instance_id for t in tasks if t.instance_id not in found]
    if missing:
        raise ConfigError(
            f"{folder}: no stored attempt for {len(missing)} task(s) ({', '.join(missing[:3])}); re-run the same "
            "`repogym eval --route` command to finish it"
        )
    return found


@dataclass(frozen=True)
class Risk:
    """The predicted risk that the small policy fails a task, and what it was computed from."""

    value: float
    basis: dict[str, Any]
    """Recorded beside the risk in per_task[...]["route"]: {"difficulty": ...} or {"p_yes": ...}."""


def _risks(
    route: Route, tasks: Sequence[Task], small: dict[str, Trajectory]
) -> tuple[dict[str, Risk], float]:
    """Per task, the risk that the small policy fails; and the verifier's seconds (0 by difficulty)."""
    if route.by == "difficulty":
        scored = {task.instance_id: difficulty(task) for task in tasks}
        return {task_id: Risk(d.score, {"difficulty": d.to_dict()}) for task_id, d in scored.items()}, 0.0
    if route.verifier_scores is None:
        raise ConfigError(
            f"--by {route.predictor}: no verifier was loaded to score the small policy's attempts"
        )
    judged = [t for t in tasks if small[t.instance_id].final_patch.strip()]
    started = time.perf_counter()
    p_yes = dict(
        zip(
            (t.instance_id for t in judged),
            route.verifier_scores([(t, small[t.instance_id].final_patch) for t in judged]),
            strict=True,
        )
    )
    verifier_s = time.perf_counter() - started if judged else 0.0
    risks = {}
    for task in tasks:
        score = p_yes.get(task.instance_id)
        risks[task.instance_id] = Risk(1.0 if score is None else 1.0 - score, {"p_yes": score})
    return risks, verifier_s


def _outcome(trajectory: Trajectory) -> str:
    """As the eval's ledger records it: the grade's outcome, else the attempt's."""
    return trajectory.grade_outcome or trajectory.outcome.value
