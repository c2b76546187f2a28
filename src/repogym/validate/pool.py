"""Prepared runtimes shared across candidates: one sandbox, one mirror per repository, one environment per key.

Candidates of one repository mostly share their dependency files, so they
share one environment (repogym.sandbox.envbuild's key). The pool builds each
environment once per run, even when several worker threads ask for it at
once, and remembers a failed build so the candidates that share its key are
dropped at once instead of each paying for the same failing build.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from repogym.errors import EnvBuildError
from repogym.sandbox.base import Limits, Sandbox
from repogym.sandbox.envbuild import EnvBuilder, EnvHandle, env_key, install_script, pick_interpreter
from repogym.sandbox.repos import mirror, resolve_repo_source
from repogym.sandbox.runtime import TaskRuntime, make_sandbox
from repogym.sandbox.workspace import pristine_checkout
from repogym.task import Task
from repogym.validate.envresolve import resolve_task_env
from repogym.validate.synthetic import CleanRuns


@dataclass(frozen=True)
class EnvSpecRecord:
    """The environment a candidate was validated in, as recorded in its metadata."""

    python: str
    env_key: str
    install_script: str
    log_parser: str
    test_cmd: str

    def to_dict(self) -> dict[str, str]:
        return {
            "python": self.python,
            "env_key": self.env_key,
            "install_script": self.install_script,
            "log_parser": self.log_parser,
            "test_cmd": self.test_cmd,
        }


@dataclass
class _EnvSlot:
    lock: threading.Lock = field(default_factory=threading.Lock)
    handle: EnvHandle | None = None
    error: str = ""
    first: str = ""
    """The candidate whose build filled this slot (named when a later one reuses its failure)."""


class RuntimePool:
    """Hands out prepared `TaskRuntime`s; thread-safe."""

    def __init__(
        self,
        sandbox: str | Sandbox = "bwrap",
        repos_dir: str | None = None,
        limits: Limits | None = None,
        recipes: bool = True,
    ):
        self.sandbox = make_sandbox(sandbox)
        self.repos_dir = repos_dir
        self.limits = limits or Limits()
        self._lock = threading.Lock()
        self._envs: dict[str, _EnvSlot] = {}
        self.built: dict[str, EnvHandle] = {}
        """Every environment this pool used, by key (for the summary's count and disk)."""
        self.recipes = recipes
        """Fill the env fields a task leaves empty from its commit's files (`repogym.validate.envresolve`)."""
        self.clean_runs = CleanRuns()
        """The suite's runs at clean commits, shared by the synthetic candidates of each repo state."""

    def checkout(self, task: Task) -> tuple[Path, Path]:
        """(the repository's mirror, the pristine checkout of the task's base commit); RepoSourceError."""
        mirror_path = mirror(resolve_repo_source(task, self.repos_dir), (task.base_commit,))
        return mirror_path, pristine_checkout(mirror_path, task.base_commit)

    def runtime(self, task: Task) -> tuple[TaskRuntime, EnvSpecRecord]:
        """A prepared runtime at the task's base commit; raises RepoSourceError / EnvBuildError.

        The runtime's `task` carries the environment it was built for (the recipe's fields filled in)."""
        started = time.perf_counter()
        mirror_path, pristine = self.checkout(task)
        if self.recipes:
            task = resolve_task_env(task, pristine, mirror_path)
        checkout_s = time.perf_counter() - started
        started = time.perf_counter()
        interpreter = pick_interpreter(task.env.python)
        key = env_key(task, pristine, interpreter)
        with self._lock:
            slot = self._envs.setdefault(key, _EnvSlot())
        built_s = 0.0
        with slot.lock:
            if slot.error:
                raise EnvBuildError(f"{slot.error}\n(same environment as {slot.first}; not built again)")
            if slot.handle is None:
                slot.first = task.instance_id
                try:
                    slot.handle = EnvBuilder(self.sandbox).ensure(task, pristine)
                    self.built[key] = slot.handle
                    built_s = slot.handle.build_s
                except EnvBuildError as exc:
                    slot.error = str(exc)
                    raise
            handle = slot.handle
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
        spec = EnvSpecRecord(
            python=interpreter.version,
            env_key=handle.key,
            install_script=install_script(task, pristine, interpreter),
            log_parser=task.env.log_parser,
            test_cmd=task.env.test_cmd,
        )
        return runtime, spec


@dataclass(frozen=True)
class EnvironmentUsage:
    """The distinct environments a validation run used (shared by every task that resolved to them)."""

    count: int
    disk_bytes: int
    """Apparent size of their venvs (files hard-linked from uv's cache counted once per venv)."""

    def to_dict(self) -> dict[str, int | float]:
        return {"distinct": self.count, "disk_mb": round(self.disk_bytes / 2**20, 1)}


def environment_usage(pool: RuntimePool) -> EnvironmentUsage:
    """Count the pool's environments and measure their folders."""
    total = 0
    for handle in pool.built.values():
        for root, _dirs, files in os.walk(handle.venv):
            for name in files:
                try:
                    total += os.lstat(os.path.join(root, name)).st_size
                except OSError:
                    continue
    return EnvironmentUsage(len(pool.built), total)
