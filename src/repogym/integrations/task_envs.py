"""The envs a bridge grades in and acts through, kept for the life of the trainer's worker process.

A trainer calls a bridge's reward function as a plain function, row after row and from many threads, with
nothing but the row: there is no object to hold prepared runtimes. `BridgeEnvs` is that object, one per
process (`ENVS`): one `RuntimePool` per sandbox backend (each repository state prepared once: mirror,
pristine checkout, Python environment), and idle envs per task, made once and reset for every answer,
as GRPO's `TaskEnvs` does. Envs are keyed by the whole task record, so two rows that share an instance id
but not their record never share an env.

Not bounded: a process keeps one idle env per concurrent use of each task it met; a task set of
thousands costs thousands of small objects (the envs hold no open sandbox between answers).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import repogym.env
from repogym.env.base import TaskEnv
from repogym.sandbox.pool import RuntimePool
from repogym.task import Task
from repogym.train.rl_tasks import UNBOUNDED_AGENT_EPISODE


class BridgeEnvs:
    """Prepared runtimes per sandbox backend and idle envs per (mode, sandbox, task record); thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pools: dict[str, RuntimePool] = {}
        self._idle: dict[tuple[str, str, str], list[TaskEnv]] = {}

    def take(self, task: Task, record: str, mode: str, sandbox: str) -> TaskEnv:
        """An idle env of the task (made when none is idle); `record` is the task's JSON text, its key.

        Preparing the task's runtime can raise RepoSourceError or EnvBuildError (the pool remembers them)."""
        with self._lock:
            idle = self._idle.get((mode, sandbox, record))
            if idle:
                return idle.pop()
            pool = self._pools.setdefault(sandbox, RuntimePool(sandbox))
        # Agent mode: the trainer's turn and token budgets end a trajectory, never the env (as under TRL).
        options = UNBOUNDED_AGENT_EPISODE if mode == "agent" else {}
        return repogym.env.make(task.instance_id, task, mode=mode, runtime=pool.runtime(task), **options)

    def give(self, env: TaskEnv, record: str, mode: str, sandbox: str) -> None:
        """Put an env back for the next answer to the same task (its episode closed first)."""
        env.close()
        with self._lock:
            self._idle.setdefault((mode, sandbox, record), []).append(env)

    @contextmanager
    def borrowed(self, task: Task, record: str, mode: str, sandbox: str) -> Iterator[TaskEnv]:
        env = self.take(task, record, mode, sandbox)
        try:
            yield env
        finally:
            self.give(env, record, mode, sandbox)


#: This process's envs (see the module docstring).
ENVS = BridgeEnvs()
