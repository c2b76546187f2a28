"""Ray grading under a trainer's burst: what RayGrader's back-pressure holds, and what a request costs through Ray,
against a local thread pool in the same run (for docs/benchmarks.md).

A burst of --burst requests (default 1,000) cycles over four candidates of the toy task with four different
verdicts (the gold fix, a wrong fix, a non-diff, a task whose repository is gone), so nearly every request is a
copy whose verdict is shared (grading/verdicts.py): the figures are the scheduler's, not the grader's. Both sides
are warm: environments built, and a warm-up burst has left every worker's verdicts stored.

Rows, in one process and one Ray session:

- local pool (the baseline): `guarded_grade(share_verdicts=True)` on a thread pool of this machine's cores over
  one runtime pool, as GRPO's local reward grading runs (`machine_workers()` threads);
- Ray, max_in_flight N for each N of --in-flight: `RayGrader(max_in_flight=N).grade_many(burst)` on a local Ray
  of this machine's cores (or the cluster at --address);
- Ray, unbounded: max_in_flight = the burst, every request submitted at once: what back-pressure prevents.

Columns: wall seconds, requests per second, time per request as a multiple of the local pool's, the most grading
tasks in Ray at once and results held for an earlier one (the grader's counts), the driver's RSS growth during
the burst (its peak over the results minus its value before), and verdicts equal to a local grade of the same
candidate (outcome, status, every test's status).

--statement-kb K pads each task's problem statement by K KB, so a request weighs what a real task's does (its
statement, test patch and test lists) rather than the toy's few KB: the driver's memory then shows what the bound
holds back.

    .venv/bin/python bench/bench_ray_grading.py [--burst 1000] [--in-flight 1,4,16] [--statement-kb 0]
        [--address HOST:PORT]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _common import load_average, machine_line, markdown_table, private_cache

from repogym.grading.batch import guarded_grade
from repogym.grading.report import GradeResult
from repogym.rollout.ray_grading import GradeRequest, RayGrader, RayTaskCounts
from repogym.rollout.ray_session import connect
from repogym.sandbox.pool import RuntimePool
from repogym.task import Task
from repogym.testing import BUGGY_SOURCE, make_toy_task, toy_patch
from repogym.train.rl_tasks import machine_workers


def rss_bytes() -> int:
    line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith("VmRSS:"))
    return int(line.split()[1]) * 1024


def verdict(result: GradeResult) -> tuple[object, ...]:
    return (result.instance_id, result.outcome, result.status, result.fail_to_pass, result.pass_to_pass)


def candidates(root: Path, statement_kb: int) -> list[tuple[Task, str]]:
    toy = make_toy_task(root / "toy")
    if statement_kb:  # a real task's weight (statement, test patch, test lists)
        toy = toy.replace(problem_statement=toy.problem_statement + "\n" + "x" * (statement_kb * 1024))
    wrong = toy_patch(toy, "src/calc/__init__.py", BUGGY_SOURCE.replace("a - b", "a * b"))
    gone = toy.replace(instance_id="toy__calc-gone", repo_source=str(root / "no-such-repo"))
    return [(toy, toy.patch), (toy, wrong), (toy, "not a diff\n"), (gone, toy.patch)]


def burst(distinct: list[tuple[Task, str]], size: int) -> Iterator[GradeRequest]:
    for index in range(size):
        yield GradeRequest(*distinct[index % len(distinct)])


def local_pool(requests: Iterable[GradeRequest], pool: ThreadPoolExecutor, runtimes: RuntimePool) -> list:
    """The baseline: every request submitted to the pool at once (GRPO's local scorer does the same per batch)."""
    futures = [
        pool.submit(guarded_grade, r.task, r.patch, runtimes=runtimes, share_verdicts=True) for r in requests
    ]
    return [f.result() for f in futures]


def measured(grade_all: Callable[[], Iterable[GradeResult]]) -> tuple[float, list[GradeResult], int]:
    """(wall seconds, results, driver RSS growth in bytes: the peak over the results minus the start)."""
    before = peak = rss_bytes()
    results = []
    started = time.perf_counter()
    for result in grade_all():
        results.append(result)
        if len(results) % 25 == 0:
            peak = max(peak, rss_bytes())
    elapsed = time.perf_counter() - started
    return elapsed, results, max(peak, rss_bytes()) - before


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--burst", type=int, default=1000, help="requests per burst")
    parser.add_argument(
        "--in-flight", default="1,4,16", help="RayGrader max_in_flight values, comma-separated"
    )
    parser.add_argument(
        "--statement-kb", type=int, default=0, help="pad each task's statement by this many KB"
    )
    parser.add_argument("--address", default=None, help="a running Ray cluster (default: a local Ray)")
    args = parser.parse_args(argv)
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    workers = machine_workers()
    with private_cache() as scratch:
        distinct = candidates(scratch, args.statement_kb)
        runtimes = RuntimePool("bwrap")
        expected = [verdict(guarded_grade(t, p, runtimes=runtimes, share_verdicts=True)) for t, p in distinct]
        print(
            f"load average at start: {load_average()}; {workers} workers; burst {args.burst}", file=sys.stderr
        )
        connect(args.address, workers)  # one Ray session for every row: its workers stay warm between rows
        with RayGrader(args.address, max_in_flight=workers) as warm:
            list(warm.grade_many(burst(distinct, 16 * workers)))  # each worker grades each candidate once

        rows: list[list[object]] = []
        with ThreadPoolExecutor(workers, thread_name_prefix="bench-grade") as pool:
            base_s, results, grown = measured(lambda: local_pool(burst(distinct, args.burst), pool, runtimes))
        settings = [(f"Ray, max_in_flight {n}", int(n)) for n in args.in_flight.split(",")]
        settings.append(("Ray, unbounded", args.burst))

        def row(
            label: str, elapsed: float, results: list[GradeResult], grown: int, counts: RayTaskCounts
        ) -> None:
            same = sum(verdict(r) == expected[i % len(expected)] for i, r in enumerate(results))
            rows.append([
                label, f"{elapsed:.2f}", f"{len(results) / elapsed:.0f}", f"{elapsed / base_s:.1f}x",
                counts.peak_in_flight, counts.peak_held, f"{grown / 2**20:.1f}", f"{same}/{args.burst}",
            ])  # fmt: skip

        # The pool's queue takes the whole burst at once: all of it is "in flight" there.
        row(
            f"local pool, {workers} threads", base_s, results, grown, RayTaskCounts(peak_in_flight=args.burst)
        )
        for label, max_in_flight in settings:
            grader = RayGrader(args.address, max_in_flight=max_in_flight)
            elapsed, results, grown = measured(lambda g=grader: g.grade_many(burst(distinct, args.burst)))
            row(label, elapsed, results, grown, grader.counts)
        header = ["grading", "wall s", "requests/s", "time vs local pool", "peak in flight", "peak held",
                  "driver RSS growth MB", "verdicts as local"]  # fmt: skip
        print(markdown_table(header, rows))
        print(f"\n{machine_line()}")
        import ray

        ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
