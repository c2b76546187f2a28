"""Prepared task runtimes shared across many tasks: one sandbox, one environment per key, one runtime per repo state.

Whoever runs many tasks (rollouts, GRPO's graders, gold demos, grading batches, the audit, synth and
validation) asks a `RuntimePool` rather than preparing each task alone (`TaskRuntime.create(...).prepare()`
stays the way to prepare one task once):

- `runtime(task)`: the prepared runtime of the task's repository state (its source, base commit and
  env spec), made once even when several threads ask at once, and shared by every task at that state.
  Its `task` is the first asker's: episodes read only what the state shares from it (the environment,
  the install step, test_env), never the task's patches or tests.
- `prepare(task)`: a runtime of the task's own over the pool's environments, for callers that read
  `runtime.task` back (validation fills a recipe's fields into it).
- Environments are built once per key (`repogym.sandbox.envbuild.env_key`): candidates of one repository
  mostly share their dependency files, so they share one environment.

Failures: a repository that cannot be read (RepoSourceError) or an environment or install step that
does not build (EnvBuildError) fails every later ask for the same state, or environment, without
trying again: the same error is raised (for an environment, naming the task whose build failed).
Anything else (a bug, a broken sandbox) is raised and not remembered, so the next ask tries again.
Not guaranteed: that a remembered failure is still a failure (a repository fixed since, a package
index back up); a new pool tries again.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from repogym.errors import EnvBuildError, RepoSourceError
from repogym.reposource import resolve_repo_source
from repogym.sandbox.base import Limits, Sandbox
from repogym.sandbox.envbuild import EnvBuilder, EnvHandle, env_key, pick_interpreter
from repogym.sandbox.repos import mirror
from repogym.sandbox.runtime import TaskRuntime, make_sandbox
from repogym.sandbox.workspace import pristine_checkout
from repogym.task import Task

#: The failures of a repository state that are the state's, not the machine's: remembered.
STATE_ERRORS = (EnvBuildError, RepoSourceError)


@dataclass
class _EnvSlot:
    lock: threading.Lock = field(default_factory=threading.Lock)
    handle: EnvHandle | None = None
    error: str = ""
    first: str = ""
    """The task whose build filled this slot (named when a later one reuses its failure)."""


@dataclass
class _StateSlot:
    lock: threading.Lock = field(default_factory=threading.Lock)
    runtime: TaskRuntime | None = None
    error: Exception | None = None


class RuntimePool:
    """Hands out prepared `TaskRuntime`s; thread-safe."""

    def __init__(
        self, sandbox: str | Sandbox = "bwrap", repos_dir: str | None = None, limits: Limits | None = None
    ) -> None:
        self._sandbox: str | Sandbox = sandbox
        self.repos_dir = repos_dir
        self.limits = limits or Limits()
        self._lock = threading.Lock()
        self._envs: dict[str, _EnvSlot] = {}
        self._states: dict[tuple[str, str, str], _StateSlot] = {}
        self.built: dict[str, EnvHandle] = {}
        """Every environment this pool used, by key (for a summary's count and disk)."""

    @property
    def sandbox(self) -> Sandbox:
        """The pool's sandbox, made on first use: a machine without one fails the asks, not the pool."""
        with self._lock:
            if isinstance(self._sandbox, str):
                self._sandbox = make_sandbox(self._sandbox)
            return self._sandbox

    def checkout(self, task: Task) -> tuple[Path, Path]:
        """(the repository's mirror, the pristine checkout of the task's base commit); RepoSourceError."""
        mirror_path = mirror(resolve_repo_source(task, self.repos_dir), (task.base_commit,))
        return mirror_path, pristine_checkout(mirror_path, task.base_commit)

    def environment(self, task: Task, pristine: Path) -> tuple[EnvHandle, float]:
        """The environment of `task` at `pristine` and the seconds this call spent building it (0 when
        another task's build is reused); EnvBuildError, also for a key whose build failed before."""
        key = env_key(task, pristine, pick_interpreter(task.env.python))
        with self._lock:
            slot = self._envs.setdefault(key, _EnvSlot())
        with slot.lock:
            if slot.error:
                raise EnvBuildError(f"{slot.error}\n(same environment as {slot.first}; not built again)")
            if slot.handle is not None:
                return slot.handle, 0.0
            slot.first = task.instance_id
            try:
                slot.handle = EnvBuilder(self.sandbox).ensure(task, pristine)
            except EnvBuildError as exc:
                slot.error = str(exc)
                raise
            self.built[key] = slot.handle
            return slot.handle, slot.handle.build_s

    def prepare(
        self, task: Task, *, checkout: tuple[Path, Path] | None = None, install_layers: bool = True
    ) -> TaskRuntime:
        """A runtime of `task`'s own: mirror and checkout (or `checkout`, already made), the pool's
        environment, and the install layers unless `install_layers` is False (then the first episode
        makes them). Raises RepoSourceError / EnvBuildError; timings as `TaskRuntime.prepare` records
        them, plus env_build_s (the build this call did)."""
        started = time.perf_counter()
        mirror_path, pristine = checkout or self.checkout(task)
        checkout_s = time.perf_counter() - started
        started = time.perf_counter()
        handle, built_s = self.environment(task, pristine)
        runtime = TaskRuntime(
            task=task,
            sandbox=self.sandbox,
            repos_dir=self.repos_dir,
            limits=self.limits,
            mirror_path=mirror_path,
            pristine=pristine,
            env=handle,
        )
        runtime.timings.update(
            checkout_s=checkout_s, env_s=time.perf_counter() - started, env_build_s=built_s
        )
        if install_layers:
            started = time.perf_counter()
            runtime.commit_layers()
            runtime.timings["install_s"] = time.perf_counter() - started
        return runtime

    def runtime(self, task: Task) -> TaskRuntime:
        """The shared prepared runtime of the task's repository state; the state's remembered failure
        (RepoSourceError / EnvBuildError) raised again."""
        key = (task.repo_source or task.repo, task.base_commit, repr(task.env))
        with self._lock:
            slot = self._states.setdefault(key, _StateSlot())
        with slot.lock:
            if slot.error is not None:
                raise slot.error
            if slot.runtime is None:
                try:
                    slot.runtime = self.prepare(task)
                except STATE_ERRORS as exc:
                    slot.error = exc
                    raise
            return slot.runtime
