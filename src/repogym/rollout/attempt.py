"""One attempt on a worker: prepare (or reuse) the task's runtime, make the env, run the agent loop.

`AttemptSettings` is everything a worker needs besides the task, picklable so a
Ray worker can rebuild it; `Worker` holds what attempts on one process share
(the policy, prepared runtimes) and turns every failure into a recorded
outcome: an environment that cannot be built is ENV_BUILD_FAILED, anything
else unexpected INFRA_ERROR with the error's last line. Nothing escapes.
Runtimes come from the sandbox's `RuntimePool` (one per repository state,
failures remembered).
"""

from __future__ import annotations

import os
import socket
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import repogym.env
from repogym.agent.loop import AgentLimits, AgentLoop
from repogym.agent.policies import Policy, PolicyConfig, SamplingParams, make_policy
from repogym.agent.prompts import load_prompts
from repogym.agent.trajectory import AttemptOutcome, Trajectory
from repogym.errors import EnvBuildError, RepoSourceError
from repogym.sandbox.pool import RuntimePool
from repogym.sandbox.runtime import TaskRuntime
from repogym.task import Task


@dataclass(frozen=True)
class AttemptSettings:
    """How every attempt of a run is made (the same on every worker)."""

    policy: PolicyConfig
    sampling: SamplingParams = field(default_factory=SamplingParams)
    limits: AgentLimits = field(default_factory=AgentLimits)
    sandbox: str = "bwrap"
    repos_dir: str | None = None
    prompts_dir: str | None = None
    reward: dict[str, Any] | None = None
    """The seed's `reward:` mapping; None = the env's default for agent mode."""
    env_options: dict[str, Any] = field(default_factory=dict)
    """Extra `EnvOptions` fields (observation_chars, bash_timeout_s, ...)."""


class Worker:
    """Runs attempts; one per process (local threads share it, each Ray worker process has its own)."""

    def __init__(self, settings: AttemptSettings, policy: Policy | None = None) -> None:
        self.settings = settings
        self.policy = policy or make_policy(settings.policy)
        self.loop = AgentLoop(
            self.policy, settings.sampling, settings.limits, load_prompts(settings.prompts_dir)
        )
        self.runtimes = RuntimePool(settings.sandbox, settings.repos_dir)

    def run(self, task: Task, attempt: int) -> Trajectory:
        started = time.perf_counter()
        try:
            runtime = self.runtime(task)
        except (EnvBuildError, RepoSourceError) as exc:
            return failed(
                task, attempt, self.policy.policy_id, AttemptOutcome.ENV_BUILD_FAILED, str(exc), started
            )
        except Exception as exc:
            return failed(
                task, attempt, self.policy.policy_id, AttemptOutcome.INFRA_ERROR, _last_line(exc), started
            )
        env = None
        try:
            env = repogym.env.make(
                task.instance_id, task, runtime=runtime, reward=self.settings.reward,
                **{**self.settings.env_options, **self.settings.limits.env_options()},
            )  # fmt: skip
            return self.loop.run(env, task, attempt, metadata={"worker": _worker_name()})
        except Exception as exc:  # a bug or a broken sandbox: this attempt fails, the run goes on
            detail = _last_line(exc)
            return failed(task, attempt, self.policy.policy_id, AttemptOutcome.INFRA_ERROR, detail, started)
        finally:
            if env is not None:
                env.close()

    def runtime(self, task: Task) -> TaskRuntime:
        """The task's prepared runtime, built once per (repo, commit, env) and reused; failures are remembered."""
        return self.runtimes.runtime(task)

    def close(self) -> None:
        self.policy.close()


def failed(
    task: Task, attempt: int, policy_id: str, outcome: AttemptOutcome, detail: str, started: float
) -> Trajectory:
    """The trajectory of an attempt that never reached the policy."""
    return Trajectory(
        instance_id=task.instance_id,
        attempt=attempt,
        policy_id=policy_id,
        messages=[],
        outcome=outcome,
        detail=detail,
        timings={"total_s": time.perf_counter() - started},
    )


def _last_line(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"[:1000]


def _worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"
