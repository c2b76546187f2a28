"""The simulated rollout scheduler of bench/sim_scheduler.py: a small discrete-event engine and a model of what
`repogym rollout` does with it (rollout/executors.py, rollout/run.py, sandbox/pool.py).

- Jobs are (task, attempt) pairs in task-major order (run.py: every attempt of a task, then the next task). One
  driver hands them out and takes each result in: a local executor's main thread (future bookkeeping, then
  `on_result`, the store's single writer: two fsynced appends) or a Ray driver (`remote()`, `ray.wait`, `ray.get`,
  then the same appends). The driver is one server; its seconds per attempt are given (measured by
  bench_attempt_cost.py).
- A worker runs one attempt at a time: the task's environment (the first attempt on a repository state builds it
  under that state's lock; attempts on the same state wait for it), a reset, N turns of (policy call, tool step),
  then the grade. Local: `-j` threads of one process. Ray: one task per attempt asking num_cpus=1, so a node runs
  at most as many attempts as it has CPUs, whatever `-j` says (it only bounds what is in flight).
- CPU is served round-robin by a node's cores in quanta (an approximation of Linux's CFS). An operation's
  host-side Python ("own" seconds) also needs its process's GIL: one GIL for all of a local executor's threads,
  none shared under Ray. "idle" seconds hold nothing (process start-up waits, fsync, namespace teardown).
- A policy call holds no core of the node: the model is served elsewhere; its latency is a constant.
- Other load (for the validation on a shared machine): processes that want a core all the time.

Not modelled: memory, the policy server's own queue, Ray's scheduling beyond the driver's cost, failures.

Why plain heapq and not simpy: the model needs FIFO servers with capacity, delays, and processes written as
generators, which is simpy's core in about 60 lines here; simpy would be a dependency that nothing else in repogym
uses, in the package's environment and CI, for a script run by hand.
"""

from __future__ import annotations

import heapq
import itertools
import random
import statistics
from collections import deque
from collections.abc import Generator
from dataclasses import dataclass, field

# -- the engine ---------------------------------------------------------------------------------------------


class Resource:
    """A FIFO server with `capacity` slots that counts its busy slot-seconds."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.in_use = 0
        self.waiting: deque[Process] = deque()
        self.busy = 0.0
        self._since = 0.0

    def _account(self, now: float) -> None:
        self.busy += self.in_use * (now - self._since)
        self._since = now

    def acquire(self, sim: Sim, process: Process) -> None:
        if self.in_use < self.capacity:
            self._account(sim.now)
            self.in_use += 1
            sim.resume(process)
        else:
            self.waiting.append(process)

    def release(self, sim: Sim) -> None:
        """Hand the slot to the longest waiting process, or free it."""
        if self.waiting:
            sim.resume(self.waiting.popleft())
        else:
            self._account(sim.now)
            self.in_use -= 1

    def busy_at(self, now: float) -> float:
        """Slot-seconds busy from the start to `now` (the current time)."""
        self._account(now)
        return self.busy


@dataclass(frozen=True)
class Delay:
    """What a process yields to wait `seconds`."""

    seconds: float


@dataclass(frozen=True)
class Acquire:
    """What a process yields to take a slot of `resource` (it resumes once it holds one; it releases it itself)."""

    resource: Resource


Process = Generator[Delay | Acquire, None, None]


class Sim:
    """The clock and the event heap: processes are generators that yield Delay or Acquire."""

    def __init__(self) -> None:
        self.now = 0.0
        self._events: list[tuple[float, int, Process]] = []
        self._order = itertools.count()

    def start(self, process: Process) -> None:
        self.resume(process)

    def resume(self, process: Process, after: float = 0.0) -> None:
        heapq.heappush(self._events, (self.now + after, next(self._order), process))

    def run(self) -> None:
        """Until no process has anything left to do."""
        while self._events:
            self.now, _, process = heapq.heappop(self._events)
            try:
                request = next(process)
            except StopIteration:
                continue
            if isinstance(request, Delay):
                self.resume(process, request.seconds)
            else:
                request.resource.acquire(self, process)


# -- what an attempt does -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Work:
    """One operation's measured demand: host-side Python (needs the GIL), jailed CPU, and waits on neither."""

    own_s: float
    jail_s: float
    idle_s: float

    @property
    def cpu_s(self) -> float:
        return self.own_s + self.jail_s


@dataclass(frozen=True)
class Profile:
    """How attempts are drawn: `turns` x (policy latency, a tool step), then the grade; `distinct` is the share
    of grades that are not a copy of a candidate already graded (verdict sharing makes a copy free)."""

    reset: list[Work]
    steps: list[Work]
    grades: list[Work]
    turns: int = 0
    policy_s: float = 0.0
    distinct: float = 1.0
    builds_s: list[float] = field(default_factory=list)
    """Wall seconds of environment builds to draw from, one per repository state met first."""
    build_cpu_share: float = 0.5


@dataclass
class Node:
    cores: Resource
    gil: Resource | None
    """The local executor's one GIL; None under Ray (a process per attempt)."""


@dataclass(frozen=True)
class Setting:
    """One simulated run."""

    executor: str  # "local" or "ray"
    nodes: int
    cores: int
    workers: int
    """Local: -j threads per node. Ray: the in-flight bound (-j x 2 in RayExecutor); a node still runs at most
    `cores` attempts at once."""
    tasks: int
    attempts_per_task: int
    states: int
    """Repository states (environments) among the tasks; 0: all built before the run."""
    ray_cpus_per_task: float = 1.0
    """What each Ray task asks for: RayExecutor asks 1, so a node runs as many attempts as it has CPUs."""
    quantum_s: float = 0.1
    other_load: float = 0.0
    """Processes on each node that want a core all the time (the fraction: one that wants it that share)."""
    dispatch_s: float = 0.0001
    collect_s: float = 0.001
    """Per attempt, on the driver: handing it out; taking it in (with the store's fsynced append)."""
    seed: int = 0


@dataclass(frozen=True)
class Outcome:
    """A run's steady state: rates and shares over the window between its 10% and 90% completions (the start,
    with every worker beginning at once, and the tail, with few left, are not what a long run sees)."""

    setting: Setting
    per_s: float
    """Attempts finished per second."""
    core_use: float
    gil_use: float
    """Share of the time the GIL was held (holding it while waiting for a core included)."""
    driver_use: float
    core_wait_s: float
    """Mean seconds an attempt waited for a core or the GIL (its time less its demands and policy calls)."""
    build_wait_s: float
    """Mean seconds an attempt waited for its environment (its build, or another's)."""
    attempt_s: float
    makespan_per_s: float
    """Attempts over the time the last one finished: what a short measured run reports."""


def cpu(sim: Sim, node: Node, seconds: float, quantum: float) -> Process:
    """`seconds` of CPU on one of the node's cores, a quantum at a time (round-robin among those waiting)."""
    left = seconds
    while left > 1e-12:
        yield Acquire(node.cores)
        run = min(quantum, left)
        yield Delay(run)
        node.cores.release(sim)
        left -= run


def work(sim: Sim, node: Node, demand: Work, quantum: float) -> Process:
    """An operation: its host-side Python under the GIL (local executor), its jailed CPU, then its waits."""
    if demand.own_s:
        if node.gil is not None:
            yield Acquire(node.gil)
        yield from cpu(sim, node, demand.own_s, quantum)
        if node.gil is not None:
            node.gil.release(sim)
    yield from cpu(sim, node, demand.jail_s, quantum)
    if demand.idle_s:
        yield Delay(demand.idle_s)


def simulate(setting: Setting, profile: Profile) -> Outcome:
    """Run every job of `setting` to its end."""
    return RolloutRun(setting, profile).run()


class RolloutRun:
    """One simulated `repogym rollout`: its nodes, driver, environment locks and what it has finished."""

    def __init__(self, setting: Setting, profile: Profile) -> None:
        self.setting, self.profile = setting, profile
        self.rng = random.Random(setting.seed)
        self.sim = Sim()
        local = setting.executor == "local"
        self.nodes = [
            Node(Resource(setting.cores), Resource(1) if local else None) for _ in range(setting.nodes)
        ]
        self.driver = Resource(1)
        self.jobs = deque(range(setting.tasks * setting.attempts_per_task))
        self.total = len(self.jobs)
        self.state_of = [task % setting.states if setting.states else -1 for task in range(setting.tasks)]
        self.built: set[int] = set()
        self.locks = {state: Resource(1) for state in set(self.state_of)}
        self.done: list[float] = []
        self.attempt_s: list[float] = []
        self.core_waits: list[float] = []
        self.build_waits: list[float] = []
        self.resources = [self.driver, *(n.cores for n in self.nodes), *(n.gil for n in self.nodes if n.gil)]
        #: Completion counts at 10% and 90%, and the time and resources' busy seconds when they were reached.
        self.window: dict[int, tuple[float, list[float]]] = {
            max(1, self.total // 10): (0.0, []),
            max(2, self.total * 9 // 10): (0.0, []),
        }

    def run(self) -> Outcome:
        setting = self.setting
        # Ray runs cores / num_cpus tasks a node, spread over the nodes, at most `workers` (in flight) at once.
        ray_slots = int(setting.cores / setting.ray_cpus_per_task)
        slots = (
            setting.workers
            if setting.executor == "local"
            else min(ray_slots, -(-setting.workers // setting.nodes))
        )
        hogs, part = divmod(setting.other_load, 1.0)
        for node in self.nodes:
            for _ in range(slots):
                self.sim.start(self.worker(node))
            for duty in [1.0] * int(hogs) + ([part] if part > 0.01 else []):
                self.sim.start(self.neighbour(node, duty))
        self.sim.run()
        return self.outcome()

    def worker(self, node: Node) -> Process:
        """A thread of the local pool, or a Ray task slot: the next job from the driver, the attempt, its result
        back through the driver."""
        sim, driver = self.sim, self.driver
        while self.jobs:
            yield Acquire(driver)
            if not self.jobs:
                driver.release(sim)
                return
            task = (
                self.jobs.popleft() // self.setting.attempts_per_task
            )  # task-major order, as run.py makes them
            yield Delay(self.setting.dispatch_s)
            driver.release(sim)
            yield from self.attempt(node, task)
            yield Acquire(driver)
            yield Delay(self.setting.collect_s)
            driver.release(sim)
            self.done.append(sim.now)
            if len(self.done) in self.window:
                self.window[len(self.done)] = (sim.now, [r.busy_at(sim.now) for r in self.resources])

    def attempt(self, node: Node, task: int) -> Process:
        sim, profile, quantum = self.sim, self.profile, self.setting.quantum_s
        started = sim.now
        yield from self.environment(node, self.state_of[task])
        self.build_waits.append(sim.now - started)
        demands = [self.rng.choice(profile.reset)] + [
            self.rng.choice(profile.steps) for _ in range(profile.turns)
        ]
        if self.rng.random() < profile.distinct:
            demands.append(self.rng.choice(profile.grades))
        after_build = sim.now
        for index, demand in enumerate(demands):
            if 0 < index <= profile.turns:
                yield Delay(profile.policy_s)
            yield from work(sim, node, demand, quantum)
        served = sum(d.cpu_s + d.idle_s for d in demands) + profile.turns * profile.policy_s
        self.core_waits.append(sim.now - after_build - served)
        self.attempt_s.append(sim.now - started)

    def environment(self, node: Node, state: int) -> Process:
        """The repository state's environment: built by the first attempt that needs it, under its lock (the
        runtime pool's slot lock and the environment's file lock), waited for by the others."""
        if state < 0 or state in self.built:
            return
        yield Acquire(self.locks[state])
        if state not in self.built:
            wall, share = self.rng.choice(self.profile.builds_s), self.profile.build_cpu_share
            yield from work(
                self.sim, node, Work(0.0, wall * share, wall * (1 - share)), self.setting.quantum_s
            )
            self.built.add(state)
        self.locks[state].release(self.sim)

    def neighbour(self, node: Node, duty: float) -> Process:
        """Another program on the node that wants a core `duty` of the time, until the last attempt is in."""
        quantum = self.setting.quantum_s
        while len(self.done) < self.total:
            yield from cpu(self.sim, node, quantum, quantum)
            if duty < 1:
                yield Delay(quantum * (1 - duty) / duty)

    def outcome(self) -> Outcome:
        (first, (start, before)), (last, (end, after)) = sorted(self.window.items())
        span = end - start
        use = {
            id(r): (b - a) / (r.capacity * span)
            for r, a, b in zip(self.resources, before, after, strict=True)
        }
        gils = [use[id(node.gil)] for node in self.nodes if node.gil]
        return Outcome(
            self.setting, (last - first) / span, statistics.fmean(use[id(node.cores)] for node in self.nodes),
            statistics.fmean(gils) if gils else 0.0, use[id(self.driver)], statistics.fmean(self.core_waits),
            statistics.fmean(self.build_waits), statistics.fmean(self.attempt_s), self.total / self.done[-1],
        )  # fmt: skip
