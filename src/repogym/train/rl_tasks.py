"""The tasks a GRPO run trains on: one prepared runtime per task, envs made on demand, and the prompts.

`TaskEnvs.open(config)` loads `env.task_set`, prepares every task's runtime (mirror, pristine
checkout, Python environment) on a thread pool before any training starts, and makes envs with
`repogym.make(instance_id, tasks, mode=..., runtime=..., reward=..., **env.options)`, so options a
user puts in the config (observation_chars, `context: window`, ...) reach the env unchanged.

The prompt of a task is what its env shows at reset, so training sees what `repogym play` and
`repogym rollout` show:
- agentless: one user message, the AgentlessEnv observation (issue, code, answer format);
- agent: the agent loop's system prompt (tools) and problem message around the RepoEnv observation.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import repogym.env
from repogym.agent.prompts import load_prompts
from repogym.config import RunConfig
from repogym.dataset import TaskSet, load_tasks
from repogym.env.base import TaskEnv
from repogym.errors import ConfigError, DatasetError
from repogym.rewards import ComposedReward, compose
from repogym.sandbox.pool import STATE_ERRORS, RuntimePool
from repogym.task import Task

#: The env limits of agent-mode episodes under TRL: TRL's own limits (max_tool_calling_iterations,
#: max_completion_length) end a rollout, so the env must not grade on its own mid-rollout.
UNBOUNDED_AGENT_EPISODE = {"max_steps": 10_000, "time_budget_s": 7 * 24 * 3600.0}


def machine_workers() -> int:
    """CPU cores this process may use (the affinity mask, not the host's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def reward_for(config: RunConfig) -> ComposedReward:
    """The run's reward; agentless mode scores a format error -1 (SWE-RL) even with the seed's components.

    The seed's components give a malformed answer 0 (nothing graded, empty diff), so when none of
    them judges the format (`format`, `patch_similarity`), a `format` term (weight 1) is added.
    Unknown component names fail here, naming the key and listing the known ones.
    """
    reward = compose(config.reward)
    if config.env.mode != "agentless":
        return reward
    fns = {component.fn_name for component in reward.components}
    if fns & {"format", "patch_similarity"}:
        return reward
    names = {component.name for component in reward.components}
    name = "format" if "format" not in names else "format_error"
    data = config.reward.model_dump(mode="json", by_alias=True)
    data["components"].append({"name": name, "weight": 1.0, "fn": "format"})
    return compose(data)


@dataclass
class TaskEnvs:
    """Tasks with prepared runtimes, and a pool of idle envs per task (made once, reset often)."""

    tasks: TaskSet
    mode: str
    reward: ComposedReward
    env_options: dict[str, Any]
    sandbox: str = "bwrap"
    runtimes: dict[str, Any] = field(default_factory=dict)
    _idle: dict[str, list[TaskEnv]] = field(default_factory=dict)
    _made: list[TaskEnv] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def open(cls, config: RunConfig, workers: int | None = None) -> TaskEnvs:
        """Load and prepare the configured tasks; ConfigError for a missing, empty or ungradable task set."""
        tasks = load_task_set(config.env.task_set, untested_allowed=config.reward.verifier is not None)
        options = {**config.env.options}
        if config.env.mode == "agent":
            options = {**options, **UNBOUNDED_AGENT_EPISODE}
        envs = cls(tasks, config.env.mode, reward_for(config), options, config.env.sandbox)
        envs.prepare(workers or machine_workers())
        return envs

    def prepare(self, workers: int) -> None:
        """Prepare every runtime (in parallel) and make one env per task, so bad options fail now."""

        runtimes = RuntimePool(self.sandbox)

        def prepare_one(task: Any) -> Any:
            try:
                return runtimes.runtime(task)
            except STATE_ERRORS as exc:
                return exc

        with ThreadPoolExecutor(max(1, min(workers, len(self.tasks)))) as pool:
            prepared = list(pool.map(prepare_one, self.tasks))
        broken = [
            (t.instance_id, r) for t, r in zip(self.tasks, prepared, strict=True) if isinstance(r, Exception)
        ]
        if broken:
            shown = "; ".join(f"{instance}: {exc}" for instance, exc in broken[:3])
            raise ConfigError(
                f"env.task_set: {len(broken)} task(s) cannot be set up in the sandbox ({shown}); "
                "drop them from the task file (repogym validate keeps only tasks that build)"
            )
        self.runtimes = {t.instance_id: r for t, r in zip(self.tasks, prepared, strict=True)}
        for task in self.tasks:
            self.give(task.instance_id, self.make(task.instance_id))

    def make(self, instance_id: str) -> TaskEnv:
        env = repogym.env.make(
            instance_id,
            self.tasks,
            mode=self.mode,
            runtime=self.runtimes[instance_id],
            reward=self.reward,
            **self.env_options,
        )
        with self._lock:
            self._made.append(env)
        return env

    def take(self, instance_id: str) -> TaskEnv:
        """An idle env of the task (a new one when all are busy); give it back when done."""
        with self._lock:
            idle = self._idle.get(instance_id)
            if idle:
                return idle.pop()
        return self.make(instance_id)

    def give(self, instance_id: str, env: TaskEnv) -> None:
        with self._lock:
            self._idle.setdefault(instance_id, []).append(env)

    @contextmanager
    def borrowed(self, instance_id: str) -> Iterator[TaskEnv]:
        env = self.take(instance_id)
        try:
            yield env
        finally:
            self.give(instance_id, env)

    def prompt(self, instance_id: str) -> list[dict[str, str]]:
        """The chat prompt of a task: what its env shows at reset (see the module docstring)."""
        task = self.tasks.get(instance_id)
        with self.borrowed(instance_id) as env:
            observation, _ = env.reset()
            if self.mode == "agentless":
                env.close()
                return [{"role": "user", "content": str(observation)}]
            tools = env.tool_schemas()
            env.close()

        prompts = load_prompts()
        problem = prompts.problem(str(observation), task.instance_id, task.repo, task.problem_statement)
        return [{"role": "system", "content": prompts.system(tools)}, {"role": "user", "content": problem}]

    def rows(self) -> list[dict[str, Any]]:
        """The training dataset: one row per task (TRL repeats each num_generations times)."""
        return [{"prompt": self.prompt(i), "instance_id": i} for i in self.tasks.ids()]

    def close(self) -> None:
        """Close every env made, idle or still held (by TRL's env pool in agent mode): their episodes go."""
        with self._lock:
            envs, self._made = self._made, []
            self._idle.clear()
        for env in envs:
            env.close()


def has_proven_tests(task: Task) -> bool:
    """Whether the task's tests decide its reward: it has FAIL_TO_PASS tests. Any such test is enough, validated
    here or imported with its dataset (SWE-bench's are proven by SWE-bench's harness): a task that claims tests
    is never handed to the verifier, so the rule fails closed.

    >>> has_proven_tests(Task("t", "r", "c", "", FAIL_TO_PASS=["t.py::a"])), has_proven_tests(Task("t", "r", "c", ""))
    (True, False)
    """
    return bool(task.FAIL_TO_PASS)


def load_task_set(path: str, untested_allowed: bool = False) -> TaskSet:
    """`env.task_set` as tasks; ConfigError when it is not a readable task file, holds no task, or holds tasks without
    FAIL_TO_PASS tests while no verifier (`untested_allowed`, reward.verifier) can score their attempts."""
    if not path:
        raise ConfigError(
            "env.task_set: not set; give a task file, e.g. env.task_set=DIR/tasks.jsonl "
            "(`repogym quickstart --out DIR` writes one from the sample repositories)"
        )
    if not os.path.isfile(path):
        raise ConfigError(
            f"env.task_set: {path!r} is not a task file here (dataset names are not downloaded); give a "
            "JSONL, JSON or parquet file, e.g. env.task_set=DIR/tasks.jsonl from `repogym quickstart --out DIR`"
        )
    try:
        tasks = load_tasks(path)
    except DatasetError as exc:
        raise ConfigError(f"env.task_set: {exc}") from None
    if not len(tasks):
        raise ConfigError(
            f"env.task_set: {path} holds no tasks; mine and validate some first (repogym quickstart)"
        )
    unprovable = [task.instance_id for task in tasks if not has_proven_tests(task)]
    if unprovable and not untested_allowed:
        raise ConfigError(
            f"env.task_set: {len(unprovable)} task(s) have no FAIL_TO_PASS tests, so no attempt can be "
            f"graded ({', '.join(unprovable[:5])}); validate them first (repogym validate), or set "
            "reward.verifier to score their attempts with a learned verifier"
        )
    return tasks


__all__ = ["TaskEnvs", "has_proven_tests", "load_task_set", "machine_workers", "reward_for"]
