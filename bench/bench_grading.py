"""Grading throughput: patches per minute through `grade_predictions` with 1 and 2 workers.

Three toy repositories (repogym.testing) give 12 task instances (4 per repo),
graded from a predictions file that mixes gold, empty and wrong patches. The
caches are warmed first (mirrors, checkouts, the one shared environment), as
they are in any long grading or RL run; each round then grades all 12 with a
fresh report (so nothing is resumed), alternating 1 and 2 workers. Every
outcome is checked (gold RESOLVED, empty and wrong UNRESOLVED) so that a fast
but wrong grader cannot post a figure.

    .venv/bin/python bench/bench_grading.py [--quick] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from _common import machine_line, markdown_table, private_cache

from repogym.dataset import TaskSet
from repogym.grading.batch import grade_predictions
from repogym.grading.report import Outcome
from repogym.predictions import Prediction, load_predictions, save_predictions
from repogym.sandbox.runtime import TaskRuntime
from repogym.task import Task
from repogym.testing import BUGGY_SOURCE, make_toy_task, toy_patch

REPOS = 3
PER_REPO = 4
_KINDS = ("gold", "empty", "wrong")
_EXPECTED = {"gold": Outcome.RESOLVED, "empty": Outcome.UNRESOLVED, "wrong": Outcome.UNRESOLVED}


def _tasks_and_predictions(root: Path) -> tuple[TaskSet, list[Prediction], dict[str, str]]:
    tasks: list[Task] = []
    predictions: list[Prediction] = []
    kinds: dict[str, str] = {}
    for repo in range(REPOS):
        base = make_toy_task(root / f"repo{repo}", instance_id=f"toy__calc{repo}-0")
        wrong = toy_patch(base, "src/calc/__init__.py", BUGGY_SOURCE.replace("a - b", "a * b"))
        for index in range(PER_REPO):
            task = base.replace(instance_id=f"toy__calc{repo}-{index}")
            kind = _KINDS[len(tasks) % len(_KINDS)]
            patch = {"gold": task.patch, "empty": "", "wrong": wrong}[kind]
            tasks.append(task)
            kinds[task.instance_id] = kind
            predictions.append(Prediction(task.instance_id, "bench", patch))
    return TaskSet(tasks), predictions, kinds


def _check(results: dict, kinds: dict[str, str]) -> None:
    wrong = {i: r.outcome for i, r in results.items() if r.outcome is not _EXPECTED[kinds[i]]}
    if wrong or len(results) != len(kinds):
        raise SystemExit(f"grading went wrong ({len(results)} results of {len(kinds)}): {wrong}")


def measure(rounds: int) -> tuple[list[list[object]], list[list[object]], float]:
    with private_cache() as scratch:
        tasks, predictions, kinds = _tasks_and_predictions(scratch / "repos")
        preds_file = scratch / "preds.jsonl"
        save_predictions(predictions, preds_file)
        predictions = load_predictions(preds_file)
        for task in tasks[::PER_REPO]:
            TaskRuntime.create(task, "bwrap").prepare()  # warm: mirror, checkout, env
        elapsed: dict[int, list[float]] = {1: [], 2: []}
        stages: dict[str, list[float]] = {}
        for round_index in range(rounds):
            for workers in (1, 2):
                report_path = scratch / f"report-{round_index}-{workers}.json"
                started = time.perf_counter()
                report = grade_predictions(tasks, predictions, report_path, workers=workers)
                elapsed[workers].append(time.perf_counter() - started)
                _check(report.results, kinds)
                if workers == 1:
                    for result in report.results.values():
                        for stage, seconds in result.timings.items():
                            stages.setdefault(stage, []).append(seconds)
    rows = []
    rate = {w: len(predictions) * len(times) / sum(times) * 60 for w, times in elapsed.items()}
    for workers, times in elapsed.items():
        per_patch = sum(times) / (len(predictions) * len(times))
        rows.append([workers, len(predictions) * len(times), f"{rate[workers]:.0f}", f"{per_patch:.2f}"])
    breakdown = [[stage, f"{statistics.median(v):.3f}"] for stage, v in stages.items()]
    return rows, breakdown, rate[2] / rate[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one round instead of --rounds")
    parser.add_argument(
        "--rounds", type=int, default=3, help="passes over the 12 predictions per worker count"
    )
    args = parser.parse_args(argv)
    rows, breakdown, ratio = measure(1 if args.quick else args.rounds)
    print(
        f"### Grading throughput (toy tasks: 4 gold, 4 empty, 4 wrong patches per pass)\n\n{machine_line()}\n"
    )
    print(markdown_table(["workers", "patches graded", "patches/min", "s/patch (wall)"], rows))
    print(f"\n2 workers / 1 worker: {ratio:.2f}x\n")
    print("Where one grade's time goes (1 worker, median seconds per patch, from GradeResult.timings):\n")
    print(markdown_table(["stage", "median s"], breakdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
