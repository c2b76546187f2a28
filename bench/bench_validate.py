"""Validation throughput: candidates per minute with 1 and 2 workers, and the 2-vs-1 ratio.

Candidates come from generated sample repositories (`repogym.samples`) mined
with `repogym.mining.mine`; without the miner, from copies of the toy task.
Environments are built once before timing (a warm-up validation of every
candidate, not timed), so the figures measure validation itself: checkout,
test patch, K runs before and K runs after the gold patch, in the bwrap
sandbox. Each timed run starts from an empty partial file (nothing resumed)
with scrubbing off. Everything lives in a temporary REPOGYM_CACHE.

    .venv/bin/python bench/bench_validate.py [--repos 2] [--fixes 3] [--runs 2] [--repeat 1]
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
        "--repeat", type=int, default=1, help="timed runs per worker count (best is reported)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-validate.") as tmp:
        root = Path(tmp)
        os.environ["REPOGYM_CACHE"] = str(root / "cache")
        candidates, source = sample_candidates(root / "repos", args.repos, args.fixes)
        started = time.perf_counter()
        timed(candidates, root / "warmup.jsonl", 2, 1)
        warmup_s = time.perf_counter() - started
        results: dict[int, tuple[float, int]] = {}
        for workers in (1, 2):
            best = min(
                timed(candidates, root / f"w{workers}-{k}.jsonl", workers, args.runs)
                for k in range(args.repeat)
            )
            results[workers] = best
    base_rate = 60 * len(candidates) / results[1][0]
    print(f"# Validation throughput ({time.strftime('%Y-%m-%d')})\n")
    print(
        f"- machine: {cpu_model()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, {sys.platform}"
    )
    print(f"- load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"- candidates: {source}; --runs {args.runs}; bwrap sandbox; scrubbing off")
    print(f"- warm-up (environment builds + one validation pass, 2 workers, not timed): {warmup_s:.1f} s\n")
    print("| workers | candidates | validated | seconds | candidates/min | vs 1 worker |")
    print("|--:|--:|--:|--:|--:|--:|")
    for workers, (seconds, validated) in results.items():
        rate = 60 * len(candidates) / seconds
        print(
            f"| {workers} | {len(candidates)} | {validated} | {seconds:.1f} | {rate:.1f} | {rate / base_rate:.2f}x |"
        )


if __name__ == "__main__":
    main()
