"""Grading as Ray tasks with back-pressure: a trainer's burst of completions graded on a cluster without more than
`max_in_flight` grades in Ray at any time.

`RayGrader(address, max_in_flight=N).grade_many(requests)` reads (task, patch) requests lazily from any iterable
and yields one `GradeResult` per request, in request order. Each request is one Ray task (1 CPU, spread over the
nodes: rollout/ray_session.py) that runs `repogym.grading.batch.guarded_grade` over that worker process's runtime
pool with verdict sharing on (grading/verdicts.py): the grader `repogym grade` and the envs use, not one of its own.

Back-pressure, and what it bounds:

- At most `max_in_flight` grading tasks exist at once. The next request is read from the iterable only when one
  finishes, so neither the driver nor a raylet ever holds a burst's thousands of tasks, refs or patches.
- A result that finishes before an earlier request's waits in the driver until that one is yielded. At most
  `HELD_PER_SLOT * max_in_flight` requests lie between the oldest one not yet yielded and the newest submitted:
  a slow grade stalls submission instead of letting finished results pile up behind it.
- The consumer sets the pace: nothing is submitted while the generator is not being iterated; closing it early
  cancels what is still in flight.

Nothing is lost, and it is counted (`RayGrader.counts`): every request read yields exactly one result, in its
place. A Ray task that fails (its worker or node died) yields an INFRA_ERROR grade naming the Ray error, as a
grade that raises does (`crash_result`); neither is ever dropped nor retried behind the caller's back. An
exception the task's body itself raised is not a failure of Ray: `map` raises it, as the body would have raised
in this process (RayGrader's body, `guarded_grade`, makes a grade's own failure its INFRA_ERROR grade).

The machinery is `RayTasks.map`, for any sandbox work of that shape: GRPO's agentless reward (train/rl_ray.py)
sends (task, answer) items through it to be scored on the workers as the env scores them.

Not guaranteed:

- Verdicts are shared within one worker process (each has its own runtimes and verdict stores), so copies of a
  candidate that land on different workers are each graded once per worker, not once per cluster.
- A result's `report.log_path` is a path on the node that graded it.
- Each node needs what a local grade needs: bubblewrap, and the task's environment in its own REPOGYM_CACHE
  (built on first use by the node's first grade of that repository state): docs/ray.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Self, TypeVar

from repogym.errors import ConfigError
from repogym.grading.batch import crash_result, guarded_grade
from repogym.grading.report import GradeResult, SkipRule
from repogym.rollout.ray_session import SANDBOX_SCHEDULING, connect, require_ray
from repogym.sandbox.base import Limits
from repogym.sandbox.pool import RuntimePool
from repogym.task import Task

Settings = TypeVar("Settings")
Item = TypeVar("Item")
Result = TypeVar("Result")

#: Requests allowed between the oldest one not yet yielded and the newest submitted, per in-flight slot.
HELD_PER_SLOT = 4


@dataclass(frozen=True)
class GradeRequest:
    """One candidate to grade: `patch` (a unified diff) for `task`."""

    task: Task
    patch: str


@dataclass(frozen=True)
class GradingSettings:
    """How every request is graded (the same on every worker): `grade()`'s options."""

    sandbox: str = "bwrap"
    repos_dir: str | None = None
    """Where the workers find repositories that are not in their cache (None: the task's repo_source)."""
    skip_rule: SkipRule = SkipRule.STRICT
    """STRICT for anything a reward is computed from (grading/judge.py)."""
    test_limits: Limits | None = None
    """The test run's limits where they differ from the runtime's."""


@dataclass
class RayTaskCounts:
    """What a `RayTasks` (a grader) has done so far, over all its calls."""

    submitted: int = 0
    """Items (requests) read and sent to Ray."""
    returned: int = 0
    """Results yielded (equals `submitted` once every call has been iterated to its end)."""
    ray_failures: int = 0
    """Results that are INFRA_ERROR because the Ray task itself failed (counted in `returned` too)."""
    in_flight: int = 0
    """Grading tasks in Ray now."""
    peak_in_flight: int = 0
    held: int = 0
    """Finished results waiting in the driver for an earlier item's."""
    peak_held: int = 0


class RayTasks:
    """Sandbox work as Ray tasks (1 CPU each, spread over the nodes), at most `max_in_flight` at once, results in
    the order of the items: the engine under `RayGrader` and GRPO's Ray scorer (train/rl_ray.py). On a local
    Ray of `local_cpus` CPUs, or the cluster at `address`; see the module docstring for what it bounds."""

    def __init__(self, address: str | None = None, max_in_flight: int = 8, local_cpus: int = 2) -> None:
        require_ray(type(self).__name__)
        if max_in_flight < 1:
            raise ConfigError(f"{type(self).__name__}(max_in_flight={max_in_flight}): must be at least 1")
        self.address = address
        self.max_in_flight = max_in_flight
        self.local_cpus = local_cpus
        self.counts = RayTaskCounts()
        self._started_ray = False

    def map(
        self,
        body: Callable[[Settings, Task, Item], Result],
        settings: Settings,
        items: Iterable[tuple[Task, Item]],
        on_failure: Callable[[Task, GradeResult], Result],
    ) -> Iterator[Result]:
        """`body(settings, task, item)` on a Ray worker for each (task, item), yielded in item order. `body` must
        be a module-level function (workers import it). A Ray task whose worker or node died yields
        `on_failure(task, grade)`, `grade` being the INFRA_ERROR grade that names the Ray error; an exception
        `body` raised is raised here (what is still in flight is cancelled)."""
        import ray

        self._started_ray = connect(self.address, self.local_cpus) or self._started_ray
        remote = ray.remote(num_cpus=1, max_retries=0, scheduling_strategy=SANDBOX_SCHEDULING)(body)
        settings_ref = ray.put(settings)
        window = HELD_PER_SLOT * self.max_in_flight
        source = iter(items)
        pending: dict[Any, tuple[int, Task]] = {}  # Ray ref -> (item index, its task)
        finished: dict[int, Result] = {}
        submitted = yielded = 0
        exhausted = False
        try:
            while True:
                while not exhausted and len(pending) < self.max_in_flight and submitted - yielded < window:
                    item = next(source, None)
                    if item is None:
                        exhausted = True
                        break
                    pending[remote.remote(settings_ref, *item)] = (submitted, item[0])
                    submitted += 1
                    self._note(pending, finished, yielded, submitted=1)
                if yielded in finished:
                    result = finished.pop(yielded)
                    yielded += 1
                    self._note(pending, finished, yielded, returned=1)
                    yield result
                    continue
                if not pending:
                    return
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    index, task = pending.pop(ref)
                    finished[index] = self._collect(ref, task, on_failure)
                self._note(pending, finished, yielded)
        finally:  # the consumer stopped early (or Ctrl-C): what is still in Ray is not wanted any more
            for ref in pending:
                ray.cancel(ref)
            self.counts.in_flight = self.counts.held = 0

    def _collect(self, ref: Any, task: Task, on_failure: Callable[[Task, GradeResult], Result]) -> Result:
        import ray

        try:
            return ray.get(ref)  # type: ignore[no-any-return]
        except ray.exceptions.RayTaskError:  # the body raised (Ray re-raises its exception): as it would here
            raise
        except (
            ray.exceptions.RayError
        ) as exc:  # its worker or node died: an infrastructure error, this item's result
            self.counts.ray_failures += 1
            return on_failure(task, crash_result(task, exc))

    def _note(
        self,
        pending: dict[Any, Any],
        finished: dict[int, Any],
        yielded: int,
        submitted: int = 0,
        returned: int = 0,
    ) -> None:
        """Update the counts; `held` leaves out the result that is next to be yielded (it waits for nothing)."""
        counts = self.counts
        counts.submitted += submitted
        counts.returned += returned
        counts.in_flight, counts.held = len(pending), len(finished) - (yielded in finished)
        counts.peak_in_flight = max(counts.peak_in_flight, counts.in_flight)
        counts.peak_held = max(counts.peak_held, counts.held)

    def close(self) -> None:
        """Shut Ray down if this object started or connected it."""
        if self._started_ray:
            import ray

            ray.shutdown()
            self._started_ray = False

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class RayGrader(RayTasks):
    """Grades (task, patch) requests as Ray tasks, at most `max_in_flight` at once; see the module docstring."""

    def __init__(
        self,
        address: str | None = None,
        max_in_flight: int = 8,
        settings: GradingSettings | None = None,
        local_cpus: int = 2,
    ) -> None:
        super().__init__(address, max_in_flight, local_cpus)
        self.settings = settings or GradingSettings()

    def grade_many(self, requests: Iterable[GradeRequest]) -> Iterator[GradeResult]:
        """One GradeResult per request, in request order, with the bounds of the module docstring."""
        items = ((request.task, request.patch) for request in requests)
        return self.map(grade_on_ray_worker, self.settings, items, on_failure=lambda _task, grade: grade)


#: One runtime pool per Ray worker process and settings: runtimes, and so verdicts, are shared across its tasks.
_RAY_RUNTIMES: dict[str, RuntimePool] = {}


def grade_on_ray_worker(settings: GradingSettings, task: Task, patch: str) -> GradeResult:
    """The Ray task body: grade `patch` on this worker as `repogym grade` would, one verdict per distinct
    candidate over this process's runtime of the task."""
    key = repr(settings)
    if key not in _RAY_RUNTIMES:
        _RAY_RUNTIMES[key] = RuntimePool(settings.sandbox, settings.repos_dir)
    return guarded_grade(
        task, patch, runtimes=_RAY_RUNTIMES[key], skip_rule=settings.skip_rule,
        test_limits=settings.test_limits, share_verdicts=True,
    )  # fmt: skip
