"""A rollout run: N attempts of a policy on every task, stored as they finish, resumable, summarised.

`run_rollout(config)` checks everything that can be wrong with the
configuration first (tasks file, policy spec, prompts, reward, executor,
output folder) and raises before any attempt starts; after that, nothing that
happens to an attempt stops the run. Attempts already in the output folder are
skipped, so re-running the same command after a crash finishes the work
without repeating any of it.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repogym.agent.backends.openai import EndpointReport, OpenAIPolicy, endpoint_report
from repogym.agent.loop import AgentLimits
from repogym.agent.policies import Policy, PolicyConfig, SamplingParams, make_policy
from repogym.agent.prompts import load_prompts
from repogym.agent.trajectory import GRADED_OUTCOMES, Trajectory
from repogym.dataset import load_tasks
from repogym.errors import ConfigError
from repogym.files import write_json
from repogym.rewards.compose import compose
from repogym.rollout.attempt import AttemptSettings
from repogym.rollout.executors import LocalExecutor, RayExecutor, executors
from repogym.rollout.store import TrajectoryStore
from repogym.task import Task

KEEP_CHOICES = ("all", "resolved")


@dataclass(frozen=True)
class RolloutConfig:
    """One `repogym rollout` invocation."""

    tasks: str
    """Task file (JSONL, JSON or parquet)."""
    policy: PolicyConfig
    out: str
    """Output folder: trajectory shards, the ledger, run.json."""
    n: int = 1
    """Attempts per task (a GRPO group)."""
    jobs: int = 1
    """Attempts running at once (threads locally; CPUs of a local Ray)."""
    executor: str = "local"
    ray_address: str | None = None
    keep: str = "all"
    """'all' or 'resolved' (the rejection-sampled SFT set)."""
    instance_ids: tuple[str, ...] = ()
    """Only these tasks (empty: all)."""
    settings_sampling: SamplingParams = field(default_factory=SamplingParams)
    limits: AgentLimits = field(default_factory=AgentLimits)
    sandbox: str = "bwrap"
    repos_dir: str | None = None
    prompts_dir: str | None = None
    reward: dict[str, Any] | None = None
    env_options: dict[str, Any] = field(default_factory=dict)
    mode: str = "agent"
    """'agent' (tool calls, many turns) or 'agentless' (one SEARCH/REPLACE answer per attempt)."""

    def settings(self) -> AttemptSettings:
        return AttemptSettings(
            policy=self.policy, sampling=self.settings_sampling, limits=self.limits, sandbox=self.sandbox,
            repos_dir=self.repos_dir, prompts_dir=self.prompts_dir, reward=self.reward,
            env_options={**self.env_options, "mode": self.mode},
        )  # fmt: skip

    def identity(self) -> dict[str, Any]:
        """What must not change between a run and its resumption (else the folder would mix two runs)."""
        return {
            "policy": self.policy.spec, "sampling": self.settings_sampling.to_dict(), "keep": self.keep,
            "mode": self.mode,
        }  # fmt: skip


@dataclass(frozen=True)
class RolloutSummary:
    """Counts and means over every attempt in the folder (this run's and earlier ones')."""

    attempts: int
    resolved: int
    tasks: int
    tasks_resolved: int
    """Tasks with at least one resolved attempt (pass@n)."""
    outcomes: dict[str, int]
    grade_outcomes: dict[str, int]
    format_errors: dict[str, int]
    mean_reward: float
    mean_components: dict[str, float]
    mean_steps: float
    mean_tokens: float
    kept: int
    ran_now: int = 0
    skipped: int = 0
    graded_now: int = 0
    """Attempts of this run that got as far as a graded patch (the rest: endpoint down, env build failed, ...)."""
    first_failure: str = ""
    """The outcome and detail of this run's first attempt that was not graded, to say why in one line."""
    endpoint: EndpointReport | None = None
    """openai policies: the client's timeout and retries, what its requests went through, the server's state."""

    @property
    def resolve_rate(self) -> float:
        return self.resolved / self.attempts if self.attempts else 0.0

    @property
    def produced_nothing(self) -> bool:
        """Attempts ran now and not one of them reached grading: the run produced nothing to learn from."""
        return self.ran_now > 0 and self.graded_now == 0

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "resolve_rate": self.resolve_rate}


def summarize(rows: Iterable[Mapping[str, Any]], ran_now: int = 0, skipped: int = 0) -> RolloutSummary:
    """The summary of ledger rows (see `repogym.rollout.store.ledger_row`)."""
    rows = list(rows)
    outcomes: dict[str, int] = {}
    grades: dict[str, int] = {}
    errors: dict[str, int] = {}
    components: dict[str, list[float]] = {}
    by_task: dict[str, bool] = {}
    for row in rows:
        outcomes[row["outcome"]] = outcomes.get(row["outcome"], 0) + 1
        grade = row.get("grade_outcome") or "not_graded"
        grades[grade] = grades.get(grade, 0) + 1
        for kind, count in (row.get("format_errors") or {}).items():
            errors[kind] = errors.get(kind, 0) + count
        for name, value in (row.get("components") or {}).items():
            components.setdefault(name, []).append(float(value or 0.0))
        by_task[row["instance_id"]] = by_task.get(row["instance_id"], False) or bool(row.get("resolved"))
    count = len(rows)

    def mean(values: Iterable[float]) -> float:
        values = list(values)
        return sum(values) / len(values) if values else 0.0

    return RolloutSummary(
        attempts=count, resolved=sum(1 for r in rows if r.get("resolved")), tasks=len(by_task),
        tasks_resolved=sum(by_task.values()), outcomes=outcomes, grade_outcomes=grades, format_errors=errors,
        mean_reward=mean(float(r.get("reward") or 0.0) for r in rows),
        mean_components={name: mean(values) for name, values in components.items()},
        mean_steps=mean(r.get("steps", 0) for r in rows),
        mean_tokens=mean(r.get("prompt_tokens", 0) + r.get("completion_tokens", 0) for r in rows),
        kept=sum(1 for r in rows if r.get("kept")), ran_now=ran_now, skipped=skipped,
    )  # fmt: skip


@dataclass
class RolloutPlan:
    """A checked configuration, ready to run: the tasks, the pending jobs, the open store."""

    config: RolloutConfig
    tasks: list[Task]
    jobs: list[tuple[Task, int]]
    store: TrajectoryStore
    skipped: int
    policy: Policy | None


def plan_rollout(config: RolloutConfig) -> RolloutPlan:
    """Check the configuration and open the output folder; raises ConfigError/DatasetError before any attempt."""
    _check_numbers(config)
    tasks = _load_tasks(config)
    load_prompts(config.prompts_dir)
    if config.reward is not None:
        compose(config.reward)
    policy = make_policy(config.policy)  # a bad spec, path or URL fails here
    if config.executor == "ray":
        policy.close()  # Ray workers build their own
        policy = None
    try:
        store = TrajectoryStore(config.out).open()
    except BaseException:
        if policy is not None:
            policy.close()
        raise
    try:
        _check_identity(store.root, config)
    except BaseException:
        store.close()
        if policy is not None:
            policy.close()
        raise
    all_jobs = [(task, attempt) for task in tasks for attempt in range(config.n)]
    jobs = [(task, attempt) for task, attempt in all_jobs if (task.instance_id, attempt) not in store.done]
    return RolloutPlan(config, tasks, jobs, store, len(all_jobs) - len(jobs), policy)


def run_rollout(
    config: RolloutConfig,
    on_result: Callable[[Trajectory], None] | None = None,
    plan: RolloutPlan | None = None,
) -> RolloutSummary:
    """Run the pending attempts of `config`, store each as it finishes, and summarise the folder."""
    plan = plan or plan_rollout(config)
    keep_all = config.keep == "all"
    executor = _executor(config, plan.policy)
    ran, graded, first_failure = 0, 0, ""

    def record(trajectory: Trajectory) -> None:
        nonlocal ran, graded, first_failure
        plan.store.append(trajectory, keep=keep_all or trajectory.resolved)
        ran += 1
        if trajectory.outcome in GRADED_OUTCOMES:
            graded += 1
        elif not first_failure:
            first_failure = f"{trajectory.outcome.value}: {trajectory.detail}"[:300]
        if on_result is not None:
            on_result(trajectory)

    try:
        executor.run(plan.jobs, record)
    finally:
        executor.close()
        plan.store.close()
    summary = summarize(plan.store.ledger_rows(), ran_now=ran, skipped=plan.skipped)
    return dataclasses.replace(
        summary, graded_now=graded, first_failure=first_failure, endpoint=_endpoint(config, plan.policy)
    )


def _endpoint(config: RolloutConfig, policy: Policy | None) -> EndpointReport | None:
    if config.policy.kind != "openai":
        return None
    return endpoint_report(config.policy, policy if isinstance(policy, OpenAIPolicy) else None)


def _executor(config: RolloutConfig, policy: Policy | None) -> LocalExecutor | RayExecutor:
    if config.executor == "ray":
        return RayExecutor(config.settings(), config.jobs, config.ray_address)
    return LocalExecutor(config.settings(), config.jobs, policy)


def _check_numbers(config: RolloutConfig) -> None:
    if config.n < 1:
        raise ConfigError(f"-n: attempts per task must be >= 1, got {config.n}")
    if config.jobs < 1:
        raise ConfigError(f"-j/--jobs: must be >= 1, got {config.jobs}")
    if config.mode not in ("agent", "agentless"):
        raise ConfigError(f"--mode {config.mode!r}: use agent (tool calls) or agentless (one SEARCH/REPLACE answer)")
    if "mode" in config.env_options:
        raise ConfigError("env_options.mode: set the rollout's mode instead (--mode agent|agentless)")
    if config.keep not in KEEP_CHOICES:
        raise ConfigError(f"--keep {config.keep!r}: use one of {', '.join(KEEP_CHOICES)}")
    executors.get(config.executor)  # unknown names list the known ones
    if config.ray_address and config.executor != "ray":
        raise ConfigError("--ray-address is only used with --executor ray")


def _load_tasks(config: RolloutConfig) -> list[Task]:
    task_set = load_tasks(config.tasks)
    if config.instance_ids:
        tasks = [task_set.get(instance_id) for instance_id in config.instance_ids]
    else:
        tasks = list(task_set)
    if not tasks:
        raise ConfigError(f"{config.tasks}: no tasks to run")
    return tasks


def _check_identity(root: Path, config: RolloutConfig) -> None:
    path = root / "run.json"
    identity = config.identity()
    if path.exists():
        try:
            previous = json.loads(path.read_text(encoding="utf-8")).get("identity", {})
        except (OSError, ValueError, AttributeError):
            previous = {}
        changed = sorted(k for k in identity if k in previous and previous[k] != identity[k])
        if changed:
            details = "; ".join(f"{k}: was {previous[k]!r}, now {identity[k]!r}" for k in changed)
            raise ConfigError(
                f"--out {root}: holds a run with other settings ({details}); use a new --out folder to keep "
                "runs apart"
            )
    write_json(path, {"identity": identity, "tasks": os.fspath(config.tasks), "n": config.n})
