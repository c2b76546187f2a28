"""Meters for bench_attempt_cost.py: the core-seconds of an operation (jails included) and a sampler of the jails'
memory and run-queue waits (see that script's docstring for what each figure means)."""

from __future__ import annotations

import os
import resource
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_rl_grading import CoreSeconds

SAMPLE_EVERY_S = 0.02


@dataclass(frozen=True)
class Cost:
    """One measured operation: core-seconds (jails included), this process's own CPU seconds, wall seconds."""

    cpu_s: float
    own_s: float
    wall_s: float


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed(meter: CoreSeconds, operation: Callable[[], Any]) -> tuple[Cost, Any]:
    cpu, own, wall = meter.now(), own_cpu(), time.perf_counter()
    value = operation()
    return Cost(meter.now() - cpu, own_cpu() - own, time.perf_counter() - wall), value


class Sampler:
    """Samples, while entered, this process's descendants (the jails keep their host pids) every 20 ms: the
    peak of their summed VmRSS, the largest VmHWM (one process's own peak), and the run-queue wait of every
    descendant and of this process's threads (/proc/PID/schedstat): on a shared machine part of an operation's
    wall is waiting for a core, which an idle node would not pay. What a process did in its last 20 ms can be
    missed. The sampler's own CPU is counted too, to be taken off the cgroup's figure."""

    def __init__(self) -> None:
        self.peak_rss_kib = 0
        self.peak_hwm_kib = 0
        self._waits: dict[int, int] = {}
        self._start_waits = {tid: _schedstat(f"/proc/self/task/{tid}")[1] for tid in _own_threads()}
        self._sampler_run_ns = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="bench-sampler", daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def sampler_cpu_s(self) -> float:
        return self._sampler_run_ns / 1e9

    def figures(self) -> dict[str, float]:
        own_waits = sum(
            max(0, _schedstat(f"/proc/self/task/{tid}")[1] - self._start_waits.get(tid, 0))
            for tid in _own_threads()
        )
        return {
            "peak_rss_mib": self.peak_rss_kib / 1024,
            "peak_process_hwm_mib": self.peak_hwm_kib / 1024,
            "runqueue_wait_s": (sum(self._waits.values()) + own_waits) / 1e9,
        }

    def _sample(self) -> None:
        me = threading.get_native_id()
        self._start_waits.pop(me, None)
        while not self._stop.wait(SAMPLE_EVERY_S):
            total = 0
            for pid in _descendants(os.getpid()):
                rss, hwm = _status_kib(pid)
                total += rss
                self.peak_hwm_kib = max(self.peak_hwm_kib, hwm)
                self._waits[pid] = max(self._waits.get(pid, 0), _schedstat(f"/proc/{pid}")[1])
            self.peak_rss_kib = max(self.peak_rss_kib, total)
        self._sampler_run_ns = _schedstat(f"/proc/self/task/{me}")[0]


def sampled(meter: CoreSeconds, operation: Callable[[], Any]) -> dict[str, float]:
    """One more run of `operation` under a Sampler: its memory and run-queue wait, with its core-seconds less
    the sampler's own and its wall seconds."""
    with Sampler() as sampler:
        cost, _ = timed(meter, operation)
    return {**sampler.figures(), "cpu_s": cost.cpu_s - sampler.sampler_cpu_s, "wall_s": cost.wall_s}


def _own_threads() -> list[int]:
    me = threading.get_native_id()
    return [int(tid) for tid in os.listdir("/proc/self/task") if int(tid) != me]


def _schedstat(proc: str) -> tuple[int, int]:
    """(ns on a CPU, ns waiting on a run queue) of a process or thread; zeros for one gone."""
    try:
        run, wait, _ = Path(proc, "schedstat").read_text().split()
    except (OSError, ValueError):
        return 0, 0
    return int(run), int(wait)


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _status_kib(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process in KiB; zeros for one gone or without memory (a kernel thread)."""
    fields = {"VmRSS:": 0, "VmHWM:": 0}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            parts = line.split()
            if parts and parts[0] in fields:
                fields[parts[0]] = int(parts[1])
    except OSError:
        pass
    return fields["VmRSS:"], fields["VmHWM:"]


def rss_mib() -> float:
    return _status_kib(os.getpid())[0] / 1024
