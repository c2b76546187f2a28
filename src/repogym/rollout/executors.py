"""Executors: where attempts run. `local` is a thread pool in this process; `ray` makes each attempt a Ray task.

Both hand every finished trajectory to `on_result` in the calling thread, so
the store has one writer. Local threads share one policy (an `hf` model is
loaded once, its batcher sees every thread's requests) and one runtime per
task; policy calls of some attempts overlap sandbox work of others. On Ray,
each worker process builds its own policy and runtimes from the picklable
`AttemptSettings`, and the sandbox runs on the node that runs the task (spread over
the nodes: rollout/ray_session.py); the trajectory's metadata names that node.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor
from typing import Any, Protocol

from repogym.agent.policies import Policy
from repogym.agent.trajectory import AttemptOutcome, Trajectory
from repogym.errors import ConfigError
from repogym.interrupts import wait_interruptibly
from repogym.registry import Registry
from repogym.rollout.attempt import AttemptSettings, Worker, failed
from repogym.rollout.ray_session import SANDBOX_SCHEDULING, connect, node_id, require_ray
from repogym.task import Task

Job = tuple[Task, int]
OnResult = Callable[[Trajectory], None]


class Executor(Protocol):
    """Runs (task, attempt) jobs and reports each trajectory as it finishes."""

    def run(self, jobs: Sequence[Job], on_result: OnResult) -> None: ...


class LocalExecutor:
    """A pool of `jobs` threads in this process."""

    def __init__(self, settings: AttemptSettings, jobs: int = 1, policy: Policy | None = None) -> None:
        if jobs < 1:
            raise ConfigError(f"-j/--jobs: must be >= 1, got {jobs}")
        self.jobs = jobs
        self.worker = Worker(settings, policy)

    def run(self, jobs: Sequence[Job], on_result: OnResult) -> None:
        pool = ThreadPoolExecutor(self.jobs, thread_name_prefix="rollout")
        pending: set[Future[Trajectory]] = set()
        queue = list(jobs)[::-1]
        try:
            while queue or pending:
                # Keep a few jobs queued per thread, not all: an interrupt then drops little unstarted work.
                while queue and len(pending) < 2 * self.jobs:
                    task, attempt = queue.pop()
                    pending.add(pool.submit(self.worker.run, task, attempt))
                done, pending = wait_interruptibly(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    on_result(future.result())
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def close(self) -> None:
        self.worker.close()


class RayExecutor:
    """One Ray task per attempt (1 CPU each), on a local Ray or the cluster at `address`."""

    def __init__(
        self, settings: AttemptSettings, jobs: int = 2, address: str | None = None, max_in_flight: int = 0
    ) -> None:
        require_ray("--executor ray")
        self.settings = settings
        self.jobs = jobs
        self.address = address
        self.max_in_flight = max_in_flight or 2 * jobs
        self._started_ray = False

    def run(self, jobs: Sequence[Job], on_result: OnResult) -> None:
        import ray

        self._started_ray = connect(self.address, self.jobs) or self._started_ray
        remote = ray.remote(num_cpus=1, max_retries=0, scheduling_strategy=SANDBOX_SCHEDULING)(
            run_on_ray_worker
        )
        settings_ref = ray.put(self.settings)
        queue = list(jobs)[::-1]
        pending: dict[Any, Job] = {}
        while queue or pending:
            while queue and len(pending) < self.max_in_flight:
                job = queue.pop()
                pending[remote.remote(settings_ref, job[0], job[1])] = job
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                task, attempt = pending.pop(ref)
                on_result(self._collect(ref, task, attempt))

    def _collect(self, ref: Any, task: Task, attempt: int) -> Trajectory:
        import ray

        started = time.perf_counter()
        try:
            return Trajectory.from_dict(ray.get(ref))
        except Exception as exc:  # the worker died (OOM, node lost): the attempt fails, the run goes on
            detail = f"Ray task failed: {type(exc).__name__}: {str(exc)[:500]}"
            return failed(
                task, attempt, self.settings.policy.spec, AttemptOutcome.INFRA_ERROR, detail, started
            )

    def close(self) -> None:
        if self._started_ray:
            import ray

            ray.shutdown()
            self._started_ray = False


#: One Worker per Ray worker process and settings (policies and runtimes are reused across its tasks).
_RAY_WORKERS: dict[str, Worker] = {}


def run_on_ray_worker(settings: AttemptSettings, task: Task, attempt: int) -> dict[str, Any]:
    """The Ray task body: runs on the worker, returns the trajectory row, its metadata naming the Ray node
    (`ray_node`) beside the worker process (`worker`: host:pid, which nodes of one machine share)."""
    key = repr(settings)
    if key not in _RAY_WORKERS:
        _RAY_WORKERS[key] = Worker(settings)
    trajectory = _RAY_WORKERS[key].run(task, attempt)
    metadata = {**trajectory.metadata, "ray_node": node_id()}
    return dataclasses.replace(trajectory, metadata=metadata).to_dict()


executors: Registry[type] = Registry("executor")
executors.add("local", LocalExecutor)
executors.add("ray", RayExecutor)
