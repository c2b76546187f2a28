"""GRPO's agentless reward graded on a Ray cluster (`grpo.grading_executor: ray`), with back-pressure.

Each completion of a batch is one Ray task that scores it on a worker exactly as `agentless_scorer` scores it in
this process: `AgentlessEnv.step(answer)` on an env of its task (the answer applied, its diff graded in a fresh
sandbox episode, copies of one candidate sharing one verdict within the worker, the components composed). The
tasks go through `RayTasks` (rollout/ray_grading.py): at most `grpo.ray_max_in_flight` completions in Ray at
once, read as slots free up, results in batch order, every one counted.

A completion whose Ray task failed (its worker or node died) abstains on every term: TRL gives it no advantage,
as for a masked format error, since an infrastructure failure says nothing about the answer. `Scored.grade` is
then the INFRA_ERROR grade naming the Ray error.

Agent mode has no Ray switch: each rollout is graded in its own episode, in the trainer's process (rl_tools).
The verifier term (reward.verifier) is scored in this process after the batch, as it is locally.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import repogym.env
from repogym.env.base import TaskEnv
from repogym.rewards import ComposedReward, RewardBreakdown
from repogym.rollout.ray_grading import RayTasks
from repogym.sandbox.pool import RuntimePool
from repogym.task import Task
from repogym.train.rl_reward import BatchScorer, Scored, completion_text, scored_from_info
from repogym.train.rl_tasks import TaskEnvs


@dataclass(frozen=True)
class AgentlessScoring:
    """What a worker needs to make the envs `TaskEnvs` makes (picklable): the reward, the env options, the sandbox."""

    reward: ComposedReward
    env_options: dict[str, Any]
    sandbox: str


def ray_agentless_scorer(envs: TaskEnvs, ray_tasks: RayTasks) -> BatchScorer:
    """Score a batch of SWE-RL answers on Ray workers, at most `ray_tasks.max_in_flight` at a time."""
    scoring = AgentlessScoring(envs.reward, dict(envs.env_options), envs.sandbox)

    def score(completions: Sequence[Any], kwargs: dict[str, Any]) -> list[Scored]:
        items = (
            (envs.tasks.get(instance_id), completion_text(completion))
            for instance_id, completion in zip(kwargs["instance_id"], completions, strict=True)
        )
        return list(ray_tasks.map(score_on_ray_worker, scoring, items, on_failure=_abstained))

    return score


def _abstained(task: Task, grade: Any) -> Scored:
    """Every term abstains (an empty breakdown), the Ray error kept as the grade."""
    now = time.monotonic()
    return Scored(
        RewardBreakdown(total=0.0), resolved=False, format_error=False, started=now, finished=now, grade=grade
    )


#: This worker process's envs, one per (scoring, task): a Ray worker runs one task at a time, so one suffices.
_WORKER_ENVS: dict[tuple[str, str], TaskEnv] = {}
_WORKER_RUNTIMES: dict[str, RuntimePool] = {}


def score_on_ray_worker(scoring: AgentlessScoring, task: Task, answer: str) -> Scored:
    """The Ray task body: `answer` scored by an env of `task` on this worker (`agentless_scorer`'s score_one)."""
    started = time.monotonic()
    env = _worker_env(scoring, task)
    env.reset()
    _, _, _, _, info = env.step(answer)
    return scored_from_info(info, started=started)


def _worker_env(scoring: AgentlessScoring, task: Task) -> TaskEnv:
    # The task's whole definition keys its env, as verdicts are keyed (two tasks may share an id).
    key = (repr(scoring), hashlib.sha256(repr(task).encode("utf-8")).hexdigest())
    if key not in _WORKER_ENVS:
        runtimes = _WORKER_RUNTIMES.setdefault(scoring.sandbox, RuntimePool(scoring.sandbox))
        _WORKER_ENVS[key] = repogym.env.make(
            task.instance_id, task, mode="agentless", runtime=runtimes.runtime(task), reward=scoring.reward,
            **scoring.env_options,
        )  # fmt: skip
    return _WORKER_ENVS[key]
