"""Validation throughput: candidates per minute with 1 and 2 workers, and the 2-vs-1 ratio.

Candidates come from generated sample repositories (`repogym.samples`) mined
with `repogym.mining.mine`; without the miner, from copies of the toy task.
Environments are built once before timing (a warm-up validation of every
candidate, not timed), so the figures measure validation itself: checkout,
test patch, K runs before and K runs after the gold patch, in the bwrap
sandbox. Each timed run starts from an empty partial file (nothing resumed)
with scrubbing off. Everything lives in a temporary REPOGYM_CACHE.

    .venv/bin/python bench/bench_validate.py [--repos 2] [--fixes 3] [--runs 2] [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from repogym.task import Task
from repogym.validate import ValidateConfig, validate_candidates


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def sample_candidates(root: Path, repos: int, fixes: int) -> tuple[list[Task], str]:
    """Candidates mined from generated sample repositories, or toy-task copies when there is no miner."""
    try:
        from repogym.mining import mine
        from repogym.samples.generate import generate_repo
    except ImportError:
        from repogym.testing import make_toy_task

        toy = make_toy_task(root)
        copies = [
            toy.replace(instance_id=f"toy-{i}", FAIL_TO_PASS=[], PASS_TO_PASS=[]) for i in range(4 * repos)
        ]
        return copies, f"{len(copies)} copies of the toy task (no miner installed)"
    found: list[Task] = []
    libraries = []
    for seed in range(repos):
        repo = generate_repo(root / f"repo{seed}", seed=seed, n_bug_fixes=fixes)
        libraries.append(repo.library)
        found += mine(repo.path, prs=repo.prs_path).tasks
    return found, f"{len(found)} candidates mined from {repos} sample repos ({', '.join(libraries)})"


def timed(candidates: list[Task], out: Path, workers: int, runs: int) -> tuple[float, int]:
    """(wall seconds, tasks validated) of one run from an empty partial file."""
    config = ValidateConfig(workers=workers, runs=runs, scrub=False)
    started = time.perf_counter()
    run = validate_candidates(candidates, out, config)
    return time.perf_counter() - started, len(run.tasks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=int, default=2, help="sample repositories to mine")
    parser.add_argument("--fixes", type=int, default=3, help="planted bug fixes per repository")
    parser.add_argument("--runs", type=int, default=2, help="runs before and after the gold patch")
    parser.add_argument(
        "--repeat", type=int, default=2, help="timed runs per worker count, interleaved (best is reported)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-validate.") as tmp:
        root = Path(tmp)
        os.environ["REPOGYM_CACHE"] = str(root / "cache")
        candidates, source = sample_candidates(root / "repos", args.repos, args.fixes)
        started = time.perf_counter()
        timed(candidates, root / "warmup.jsonl", 2, 1)
        warmup_s = time.perf_counter() - started
        # Interleaved (1, 2, 1, 2, ...) so a change in the machine's load hits both worker counts alike.
        seconds: dict[int, list[float]] = {1: [], 2: []}
        validated: dict[int, int] = {}
        for k in range(args.repeat):
            for workers in (1, 2):
                took, validated[workers] = timed(
                    candidates, root / f"w{workers}-{k}.jsonl", workers, args.runs
                )
                seconds[workers].append(took)
    base_rate = 60 * len(candidates) / min(seconds[1])
    print(f"# Validation throughput ({time.strftime('%Y-%m-%d')})\n")
    print(
        f"- machine: {cpu_model()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, {sys.platform}"
    )
    print(f"- load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"- candidates: {source}; --runs {args.runs}; bwrap sandbox; scrubbing off")
    print(f"- warm-up (environment builds + one validation pass, 2 workers, not timed): {warmup_s:.1f} s\n")
    print("| workers | candidates | validated | seconds (best; all runs) | candidates/min | vs 1 worker |")
    print("|--:|--:|--:|--:|--:|--:|")
    for workers, runs in seconds.items():
        rate = 60 * len(candidates) / min(runs)
        shown = f"{min(runs):.1f} ({', '.join(f'{t:.1f}' for t in runs)})"
        print(
            f"| {workers} | {len(candidates)} | {validated[workers]} | {shown} | {rate:.1f} | {rate / base_rate:.2f}x |"
        )


if __name__ == "__main__":
    main()
