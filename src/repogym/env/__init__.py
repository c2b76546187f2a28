"""The gym: a task's repository as a gymnasium env (`make`), groups of them for GRPO (`make_group`), a checker.

    import repogym
    env = repogym.make("acme__calc-12", tasks="tasks.jsonl")
    observation, info = env.reset()
    observation, reward, terminated, truncated, info = env.step("view_file('calc.py', '1:20')")

The env is also registered with gymnasium as `repogym/RepoFix-v0` when this package is imported;
`gymnasium.make("repogym.env:repogym/RepoFix-v0", instance_id=..., tasks=...)` imports it first.
Agent mode is `repogym.env.repo_env.RepoEnv`, agentless mode `repogym.env.agentless.AgentlessEnv`.
This module imports neither the sandbox nor grading until an env is made.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import gymnasium

from repogym.config import validate_config
from repogym.dataset import coerce_tasks
from repogym.env.agentless import AgentlessEnv
from repogym.env.base import build_reward
from repogym.env.checker import check_env as _check_env
from repogym.env.options import EnvOptions
from repogym.env.repo_env import RepoEnv
from repogym.errors import ConfigError
from repogym.sandbox.runtime import TaskRuntime
from repogym.task import Task

if TYPE_CHECKING:
    from repogym.env.base import RewardSpec, TaskEnv
    from repogym.sandbox.base import Limits, Sandbox
    from repogym.sandbox.runtime import TaskRuntime
    from repogym.task import Task

ENV_ID = "repogym/RepoFix-v0"


def make(
    instance_id: str,
    tasks: str | os.PathLike[str] | Iterable[Task] | Task | None = None,
    *,
    sandbox: str | Sandbox = "bwrap",
    mode: str = "agent",
    max_steps: int = 50,
    reward: RewardSpec = None,
    repos_dir: str | None = None,
    limits: Limits | None = None,
    runtime: TaskRuntime | None = None,
    render_mode: str | None = None,
    **options: Any,
) -> TaskEnv:
    """The env of task `instance_id` from `tasks` (a task file, loaded tasks, or one Task).

    `reward` is a `RewardConfig`, the seed's `reward:` mapping, a `ComposedReward`, or None for the
    default (see `repogym.env.base.default_reward_config`). `options` are `EnvOptions` fields
    (observation_chars, bash_timeout_s, time_budget_s, ...). The task's runtime (mirror, checkout,
    Python environment) is prepared here unless `runtime` is given; an unknown instance id raises
    UnknownNameError listing the closest ids.
    """

    task = find_task(instance_id, tasks)
    env_options = validate_config(
        {"mode": mode, "max_steps": max_steps, **options}, EnvOptions, source="env options"
    )
    reward_fn = build_reward(reward, env_options.mode)
    if runtime is None:
        runtime = TaskRuntime.create(task, sandbox, repos_dir, limits).prepare()
    elif (runtime.task.repo, runtime.task.base_commit) != (task.repo, task.base_commit):
        raise ConfigError(
            f"runtime: it was prepared for {runtime.task.instance_id!r} ({runtime.task.repo} at "
            f"{runtime.task.base_commit[:12]}), not for {task.instance_id!r}"
        )
    if env_options.mode == "agentless":
        return AgentlessEnv(task, runtime, env_options, reward_fn, render_mode)

    return RepoEnv(task, runtime, env_options, reward_fn, render_mode)


def make_group(
    instance_id: str,
    n: int,
    tasks: str | os.PathLike[str] | Iterable[Task] | Task | None = None,
    **kwargs: Any,
) -> list[TaskEnv]:
    """`n` independent envs of one task (a GRPO group) sharing one prepared runtime: one Python
    environment and one pristine checkout; each env has its own episode layer. Close each env."""

    if n < 1:
        raise ConfigError(f"n: a group needs at least one env, got {n}")
    task = find_task(instance_id, tasks)
    runtime = (
        kwargs.pop("runtime", None)
        or TaskRuntime.create(
            task, kwargs.pop("sandbox", "bwrap"), kwargs.pop("repos_dir", None), kwargs.pop("limits", None)
        ).prepare()
    )
    return [make(instance_id, task, runtime=runtime, **kwargs) for _ in range(n)]


def find_task(instance_id: str, tasks: str | os.PathLike[str] | Iterable[Task] | Task | None) -> Task:
    """The task `instance_id` of `tasks`; UnknownNameError (with the closest ids) when it is not there."""

    if tasks is None:
        raise ConfigError(
            "tasks: give a task file (JSONL, JSON or parquet) or loaded tasks, e.g. tasks='tasks.jsonl'"
        )
    task_set = coerce_tasks([tasks] if isinstance(tasks, Task) else tasks)
    return task_set.get(instance_id)


def register() -> None:
    """Register `repogym/RepoFix-v0` with gymnasium (idempotent); its kwargs are `make`'s."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point="repogym.env:make", disable_env_checker=False)


def check_env(env: Any, **kwargs: Any) -> Any:
    """Check an env's API and that the gold patch resolves through tool actions; see `repogym.env.checker`."""

    return _check_env(env, **kwargs)


register()

__all__ = ["ENV_ID", "check_env", "find_task", "make", "make_group", "register"]
