"""Mining throughput: `repogym.mining.mine` against a naive miner, on a generated history of 20,000+ commits.

The naive miner runs one `git show` per commit (what a first script does) and
the same patch split as the miner; it is timed on an evenly spaced sample of the
first-parent line and extrapolated to every scanned commit, in the same run and
on the same warm repository. The miner
is timed end to end (walk, patches, filters, merge checks, Task rows), best of
--repeat runs. Targets: >= 2,000 commits/s and >= 20x the baseline.

    .venv/bin/python bench/bench_mining.py [--commits 20000] [--sample 400] [--repeat 3]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from repogym.mining import MiningConfig, mine
from repogym.mining.split import PathRules, split_patch
from repogym.samples.long_history import generate_long_history

TARGET_RATE = 2_000
TARGET_RATIO = 20


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def naive_rate(repo: Path, sample: int) -> tuple[float, int]:
    """Commits per second of a naive miner: one `git show` per commit, then the same split as the miner.

    Timed on `sample` commits spread evenly over the first-parent line.
    """
    shas = subprocess.run(
        ["git", "rev-list", "--first-parent", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.split()
    step = max(1, len(shas) // sample)
    chosen = shas[::step][:sample]
    rules = PathRules(MiningConfig())
    started = time.perf_counter()
    for sha in chosen:
        out = subprocess.run(
            ["git", "show", "--diff-merges=first-parent", "--raw", "--patch", "--binary", "-M",
             "--format=%H%x00%P%x00%an%x00%at%x00%B%x00", sha],
            cwd=repo, capture_output=True, check=True,
        ).stdout  # fmt: skip
        header, _, patch = out.decode("utf-8", "replace").partition("\ndiff --git ")
        header.split("\0")
        split_patch("diff --git " + patch if patch else "", rules)
    return len(chosen) / (time.perf_counter() - started), len(chosen)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=20_000, help="size of the generated history")
    parser.add_argument("--sample", type=int, default=400, help="commits the naive baseline is timed on")
    parser.add_argument("--repeat", type=int, default=3, help="miner runs; the best is reported")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, default=None, help="generate (or reuse) the history here")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="repogym-bench-") as scratch:
        repo = args.keep or Path(scratch) / "long"
        if not (repo / ".git").exists():
            history = generate_long_history(repo, args.commits, args.seed)
            print(
                f"generated {history.commits} commits ({history.first_parent} on main) in {history.elapsed_s:.1f} s"
            )
            print(f"  events: {dict(sorted(history.events.items()))}")
        runs = [mine(repo) for _ in range(max(1, args.repeat))]
        best = min(runs, key=lambda run: run.elapsed_s)
        baseline, sampled = naive_rate(repo, args.sample)

    funnel = best.funnel
    rate = best.commits_per_s
    ratio = rate / baseline
    cores = os.cpu_count() or 0
    print(f"miner:    {funnel.scanned} commits in {best.elapsed_s:.2f} s = {rate:,.0f} commits/s "
          f"(runs: {', '.join(f'{r.elapsed_s:.2f}' for r in runs)} s)")  # fmt: skip
    print(f"          {funnel.candidates} candidates -> {funnel.written} written")
    print(f"baseline: one `git show` per commit, {sampled} commits timed: {baseline:,.0f} commits/s "
          f"(extrapolated: {funnel.scanned / baseline:.1f} s for the whole history)")  # fmt: skip
    print(f"ratio:    {ratio:.1f}x  (targets: >= {TARGET_RATE:,} commits/s and >= {TARGET_RATIO}x)")
    print()
    print("| date | commits | miner commits/s | naive commits/s | ratio | machine |")
    print("|---|---|---|---|---|---|")
    print(f"| {datetime.date.today()} | {funnel.scanned:,} | {rate:,.0f} | {baseline:,.0f} | {ratio:.1f}x "
          f"| {cores} cores (`nproc`), {cpu_model()}, git {_git_version()}, Python {sys.version.split()[0]} |")  # fmt: skip
    met = rate >= TARGET_RATE and ratio >= TARGET_RATIO
    print(f"\n{'targets met' if met else 'targets NOT met'}")
    return 0 if met else 1


def _git_version() -> str:
    return subprocess.run(["git", "--version"], capture_output=True, text=True, check=False).stdout.split()[
        -1
    ]


if __name__ == "__main__":
    sys.exit(main())
