"""Validation's view of the sandbox's runtime pool: a recipe filled in before the build, the spec recorded after.

The pool itself (one environment per key, built once per run even when several worker threads ask for
it, a failed build remembered so the candidates sharing its key are dropped at once) is the sandbox's,
`repogym.sandbox.pool.RuntimePool`. What is validation's own is here: the env fields a candidate
leaves empty are filled from its commit's files (`repogym.validate.envresolve`) before its environment
is chosen, each candidate gets a runtime of its own (`runtime.task` is what a validated task records),
the environment is recorded as an `EnvSpecRecord`, and the synthetic candidates of one repository
state share the suite's clean runs.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from repogym.sandbox.base import Limits, Sandbox
from repogym.sandbox.envbuild import install_script
from repogym.sandbox.pool import RuntimePool
from repogym.sandbox.runtime import TaskRuntime
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


class ValidationPool:
    """Hands out prepared runtimes of candidates, with their env recipes and spec records; thread-safe."""

    def __init__(
        self,
        sandbox: str | Sandbox = "bwrap",
        repos_dir: str | None = None,
        limits: Limits | None = None,
        recipes: bool = True,
    ):
        self.runtimes = RuntimePool(sandbox, repos_dir, limits)
        self.recipes = recipes
        """Fill the env fields a task leaves empty from its commit's files (`repogym.validate.envresolve`)."""
        self.clean_runs = CleanRuns()
        """The suite's runs at clean commits, shared by the synthetic candidates of each repo state."""

    def checkout(self, task: Task) -> tuple[Path, Path]:
        """(the repository's mirror, the pristine checkout of the task's base commit); RepoSourceError."""
        return self.runtimes.checkout(task)

    def runtime(self, task: Task) -> tuple[TaskRuntime, EnvSpecRecord]:
        """A prepared runtime at the task's base commit; raises RepoSourceError / EnvBuildError.

        The runtime's `task` carries the environment it was built for (the recipe's fields filled in);
        its install layers are made by its first episode."""
        started = time.perf_counter()
        mirror_path, pristine = self.checkout(task)
        if self.recipes:
            task = resolve_task_env(task, pristine, mirror_path)
        checkout_s = time.perf_counter() - started
        runtime = self.runtimes.prepare(task, checkout=(mirror_path, pristine), install_layers=False)
        runtime.timings["checkout_s"] = checkout_s  # made here, with the recipe's reading of it
        env = runtime.env
        assert env is not None  # prepare() built it
        spec = EnvSpecRecord(
            python=env.interpreter.version,
            env_key=env.key,
            install_script=install_script(task, pristine, env.interpreter),
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


def environment_usage(pool: ValidationPool) -> EnvironmentUsage:
    """Count the pool's environments and measure their folders."""
    total = 0
    for handle in pool.runtimes.built.values():
        for root, _dirs, files in os.walk(handle.venv):
            for name in files:
                try:
                    total += os.lstat(os.path.join(root, name)).st_size
                except OSError:
                    continue
    return EnvironmentUsage(len(pool.runtimes.built), total)
