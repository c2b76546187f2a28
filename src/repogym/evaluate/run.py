"""`repogym eval`: roll a policy out n times per task, then score it (pass@k with intervals) and
write SWE-bench's files, all in one folder.

Layout of an eval folder DIR (the report and `eval compare` read it):

- `summary.json`: `kind: "repogym.eval"`, the run's labels (`stage`, `split`, `policy`,
  `model_name_or_path`, `mode`), `n`, `pass@1` and `pass@k` for each k reported, their
  `intervals`, `bootstrap` settings, `breakdown[repo|method|difficulty|split][label]` and
  `per_task[instance_id]` (n, c, each pass@k, each attempt's outcome). With a best-of-n selection
  (`select`, see `repogym.evaluate.bestofn`): `best@n` beside them (overall and per group, with its
  interval) and `per_task[...]["selection"]` (the attempt picked, whether it resolved, its score and every
  attempt's).
- `rollout/`: the trajectory store (`repogym.rollout.store`); re-running the same command resumes it.
- `predictions.jsonl`: SWE-bench predictions, one per task, from its first attempt.
- `swebench_report.json`: the report `repogym grade --predictions` writes, for those predictions.

The rollout is the existing machinery (`run_rollout`) with every attempt kept; the scores come from
its ledger, so attempts that failed before grading count as not resolved, never as missing. Progress goes
to callbacks the caller supplies (`notify` lines, `progress` counts): the CLI draws them, the library never
draws anything itself.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repogym.agent.trajectory import Trajectory
from repogym.config import validate_config
from repogym.dataset import load_tasks
from repogym.env.options import EnvOptions
from repogym.errors import ConfigError
from repogym.evaluate.bestofn import Attempted, Pick, Selection, select_attempts
from repogym.evaluate.bootstrap import BootstrapSettings
from repogym.evaluate.groups import task_groups
from repogym.evaluate.layout import (
    PREDICTIONS_FILE,
    ROLLOUT_DIR,
    SUMMARY_FILE,
    SUMMARY_KIND,
    SWEBENCH_REPORT_FILE,
)
from repogym.evaluate.scores import TaskCounts, check_ks, eval_scores
from repogym.evaluate.swebench import PREDICTION_ATTEMPT, first_attempts, predictions_of, swebench_report
from repogym.files import write_json
from repogym.predictions import save_predictions
from repogym.rollout.run import RolloutConfig, plan_rollout, run_rollout
from repogym.rollout.store import TrajectoryStore
from repogym.sandbox.pool import RuntimePool
from repogym.task import Task

MODES = ("agent", "agentless")
_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")

Notify = Callable[[str], None]
#: (what, done, total): a live count for the caller's display; `what` names the count before any ':'
#: ("eval sft-heldout-repo: 3/8 resolved"), and a total of 0 means not known yet.
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True, init=False)
class EvalConfig:
    """One `repogym eval` invocation: the rollout that makes the attempts, and what the eval adds to it.

    Built as `EvalConfig(out, rollout=RolloutConfig(...))`, or with the rollout's fields by name
    (`EvalConfig(out=..., tasks=..., policy=..., n=4, sampling=...)`; `sampling` is the rollout's
    `settings_sampling`); fields given by name beside a rollout change it. Either way the rollout writes
    into DIR/rollout and keeps every attempt.
    """

    rollout: RolloutConfig
    """The attempts: tasks, policy, n, jobs, sampling, limits, sandbox, mode, env options, ..."""
    out: str
    """The eval folder (see the module docstring)."""
    ks: tuple[int, ...] = ()
    """More k values to report (each 1 <= k <= n); pass@1 and pass@n are always reported."""
    stage: str = ""
    """What model this is in the training story: baseline, sft, grpo (or any label); the report's columns."""
    split: str = ""
    """Which task split this run measures (e.g. heldout-functions, heldout-repo); the report's rows."""
    model_name: str = ""
    """`model_name_or_path` in the predictions (default: the policy spec)."""
    context: str | None = None
    """The agentless env's context option (e.g. 'window'); None leaves the env's default."""
    bootstrap: BootstrapSettings = field(default_factory=BootstrapSettings)
    select: Selection | None = None
    """Best-of-n: how to pick one attempt per task (scored as best@n); None picks nothing."""

    def __init__(
        self,
        out: str,
        rollout: RolloutConfig | None = None,
        *,
        ks: tuple[int, ...] = (),
        stage: str = "",
        split: str = "",
        model_name: str = "",
        context: str | None = None,
        bootstrap: BootstrapSettings | None = None,
        select: Selection | None = None,
        **attempts: Any,
    ) -> None:
        if "sampling" in attempts:
            attempts["settings_sampling"] = attempts.pop("sampling")
        where = {"out": os.fspath(Path(out) / ROLLOUT_DIR), "keep": "all"}
        if rollout is None:
            rollout = RolloutConfig(**where, **attempts)
        else:  # fields given by name change the rollout's (dataclasses.replace(config, mode=...) does this)
            rollout = dataclasses.replace(rollout, **where, **attempts)
        values = {"rollout": rollout, "out": out, "ks": tuple(ks), "stage": stage, "split": split,
                  "model_name": model_name, "context": context, "bootstrap": bootstrap or BootstrapSettings(),
                  "select": select}  # fmt: skip
        for name, value in values.items():
            object.__setattr__(self, name, value)

    @property
    def root(self) -> Path:
        return Path(self.out)

    @property
    def n(self) -> int:
        """Attempts per task (the rollout's)."""
        return self.rollout.n

    def checked_ks(self) -> list[int]:
        return check_ks(self.ks, self.n) if self.n >= 1 else []


def rollout_config(config: EvalConfig) -> RolloutConfig:
    """The rollout that feeds the eval: every attempt kept, into DIR/rollout; bad options raise here."""
    if config.n < 1:
        raise ConfigError(f"-n: attempts per task must be >= 1, got {config.n}")
    config.checked_ks()
    if config.select is not None:
        Selection.parse(config.select.spec, config.n)  # the same checks as the CLI's --select
        if config.select.verifier and config.select.verifier_scores is None:
            raise ConfigError(
                f"--select {config.select.spec}: load the verifier first (its scoring is not set)"
            )
    for name, value in (("--stage", config.stage), ("--split", config.split)):
        if value and not _LABEL.match(value):
            raise ConfigError(f"{name} {value!r}: use letters, digits and _.+- (e.g. baseline, sft, grpo)")
    if config.root.exists() and not config.root.is_dir():
        raise ConfigError(f"--out {config.root}: exists and is not a folder")
    if config.rollout.mode not in MODES:
        raise ConfigError(f"--mode {config.rollout.mode!r}: use one of {', '.join(MODES)}")
    return dataclasses.replace(config.rollout, env_options=_env_options(config))


def _env_options(config: EvalConfig) -> dict[str, Any]:
    options = dict(config.rollout.env_options)
    if config.context is not None:
        options["context"] = config.context
    if "mode" in options:
        raise ConfigError("--env-option mode=...: give the mode as --mode agent|agentless")
    validate_config({"mode": config.rollout.mode, **options}, EnvOptions, source="--env-option")
    return options


def run_eval(
    config: EvalConfig, *, notify: Notify = lambda _: None, progress: Progress | None = None
) -> dict[str, Any]:
    """Roll out (resuming what is done), then score and write the folder; returns the summary.

    `notify` hears when attempts are already stored (a resumed run); `progress` counts the attempts run
    now and how many of them resolved."""
    label = "-".join(name for name in (config.stage, config.split) if name)
    what = f"eval {label}" if label else "eval"
    if progress is not None:
        progress(f"{what}: checking the configuration and loading the policy", 0, 0)
    plan = plan_rollout(rollout_config(config))
    if plan.skipped:
        notify(f"resuming: {plan.skipped} attempt(s) already in {plan.config.out}, {len(plan.jobs)} to run")
    run_rollout(plan.config, on_result=attempt_counter(what, len(plan.jobs), progress), plan=plan)
    return finish_eval(config)


def attempt_counter(what: str, total: int, progress: Progress | None) -> Callable[[Trajectory], None] | None:
    """A rollout's `on_result` as `progress` counts: attempts done of `total`, and how many resolved."""
    if progress is None:
        return None
    counts = {"done": 0, "resolved": 0}
    progress(what, 0, total)

    def on_result(trajectory: Trajectory) -> None:
        counts["done"] += 1
        counts["resolved"] += trajectory.resolved
        progress(f"{what}: {counts['resolved']}/{counts['done']} resolved", counts["done"], total)

    return on_result


def finish_eval(config: EvalConfig) -> dict[str, Any]:
    """Score a finished rollout under DIR/rollout and write summary.json, predictions and the report."""
    tasks = eval_tasks(config)
    store = TrajectoryStore(config.root / ROLLOUT_DIR)
    counts = task_counts(tasks, list(store.ledger_rows()), config.n, config.root / ROLLOUT_DIR)
    picks = _picks(config, tasks, store)
    counts = [dataclasses.replace(c, best=picks[c.instance_id].resolved) if picks else c for c in counts]
    chosen = first_attempts(
        stored_trajectories(store, {t.instance_id for t in tasks}, PREDICTION_ATTEMPT + 1)
    )
    model_name = config.model_name or config.rollout.policy.spec
    save_predictions(predictions_of(chosen, model_name), config.root / PREDICTIONS_FILE)
    report = swebench_report(chosen, total_instances=len(tasks)).to_dict()
    write_json(config.root / SWEBENCH_REPORT_FILE, report)
    rollout = config.rollout
    scores = eval_scores(counts, config.checked_ks(), config.bootstrap)
    for task_id, pick in picks.items():
        scores["per_task"][task_id]["selection"] = pick.to_dict()
    summary = {
        "kind": SUMMARY_KIND, "schema_version": 1, "stage": config.stage, "split": config.split,
        "policy": rollout.policy.spec, "model_name_or_path": model_name, "mode": rollout.mode,
        "context": config.context, "sampling": rollout.settings_sampling.to_dict(),
        "limits": dataclasses.asdict(rollout.limits), "tasks_file": os.fspath(rollout.tasks), "n": config.n,
        "select": config.select.spec if config.select else None, **scores,
        "first_attempt_resolved": report["resolved_instances"],
        "prediction_attempt": f"first (attempt {PREDICTION_ATTEMPT})",
        "files": {"rollout": ROLLOUT_DIR, "predictions": PREDICTIONS_FILE, "swebench_report": SWEBENCH_REPORT_FILE},
    }  # fmt: skip
    write_json(config.root / SUMMARY_FILE, summary)
    return summary


def task_counts(tasks: list[Task], ledger: list[dict[str, Any]], n: int, where: Path) -> list[TaskCounts]:
    """Per task, its first n attempts from the ledger; a task short of n attempts is an unfinished rollout."""
    by_task: dict[str, dict[int, dict[str, Any]]] = {}
    for row in ledger:
        attempt = row.get("attempt")
        if isinstance(attempt, int) and 0 <= attempt < n:
            by_task.setdefault(str(row.get("instance_id")), {})[attempt] = row
    counts, short = [], []
    for task in tasks:
        rows = by_task.get(task.instance_id, {})
        if len(rows) < n:
            short.append(task.instance_id)
            continue
        ordered = [rows[a] for a in range(n)]
        counts.append(TaskCounts(
            instance_id=task.instance_id, n=n, c=sum(1 for r in ordered if r.get("resolved")),
            groups=task_groups(task),
            outcomes=tuple(str(r.get("grade_outcome") or r.get("outcome")) for r in ordered),
        ))  # fmt: skip
    if short:
        shown = ", ".join(short[:3]) + (f" and {len(short) - 3} more" if len(short) > 3 else "")
        raise ConfigError(
            f"{where}: {len(short)} task(s) have fewer than {n} finished attempts ({shown}); re-run the same "
            "`repogym eval` command to finish the rollout"
        )
    return counts


def _picks(config: EvalConfig, tasks: list[Task], store: TrajectoryStore) -> dict[str, Pick]:
    """Per task, the attempt `config.select` picks among its first n; {} without a selection."""
    if config.select is None:
        return {}
    stored: dict[str, dict[int, Trajectory]] = {task.instance_id: {} for task in tasks}
    for trajectory in stored_trajectories(
        store, set(stored), config.n
    ):  # a later row of an attempt wins, as in the ledger
        stored[trajectory.instance_id][trajectory.attempt] = trajectory
    attempts = {
        task_id: [Attempted(t.attempt, t.final_patch, t.resolved) for _, t in sorted(found.items())]
        for task_id, found in stored.items()
    }
    runtimes = RuntimePool(config.rollout.sandbox, config.rollout.repos_dir)
    return select_attempts(config.select, attempts, tasks, runtimes)


def stored_trajectories(store: TrajectoryStore, wanted: set[str], attempts: int) -> list[Trajectory]:
    """The stored attempts numbered below `attempts` of the tasks in `wanted`."""
    found = []
    for number, row in enumerate(store.rows(), start=1):
        attempt = row.get("attempt")
        if isinstance(attempt, int) and 0 <= attempt < attempts and row.get("instance_id") in wanted:
            found.append(Trajectory.from_dict(row, where=f"{store.root} row {number}"))
    return found


def eval_tasks(config: EvalConfig) -> list[Task]:
    """The tasks an eval scores: the task file's, or those --instance names, in that order."""
    task_set = load_tasks(config.rollout.tasks)
    if config.rollout.instance_ids:
        return [task_set.get(instance_id) for instance_id in config.rollout.instance_ids]
    return list(task_set)
