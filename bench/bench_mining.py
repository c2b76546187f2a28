"""Mining throughput: `repogym.mining.mine` against a naive miner, on a generated history of 20,000+ commits.

The naive miner runs one `git show` per commit (what a first script does) and
the same patch split as the miner; it is timed on commits spread evenly over the
first-parent line and extrapolated per commit. Miner runs and baseline slices
alternate (--rounds), so a machine whose load changes slows both alike; the
medians are compared. Besides wall-clock rates, CPU seconds per commit (this
process and its git children) are reported: they hardly move with the load.
Targets: >= 2,000 commits/s and >= 20x the baseline.

    .venv/bin/python bench/bench_mining.py [--commits 20000] [--sample 450] [--rounds 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from repogym.mining import MiningConfig, mine
from repogym.mining.split import PathRules, split_patch
from repogym.samples.long_history import generate_long_history

TARGET_RATE = 2_000
TARGET_RATIO = 20


@dataclass(frozen=True)
class Timing:
    commits: int
    wall_s: float
    cpu_s: float
    """User + system seconds of this process and its children (git)."""

    @property
    def rate(self) -> float:
        return self.commits / self.wall_s

    @property
    def cpu_ms_per_commit(self) -> float:
        return 1000 * self.cpu_s / self.commits


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def time_miner(repo: Path) -> Timing:
    cpu = _cpu()
    result = mine(repo)
    return Timing(result.funnel.scanned, result.elapsed_s, _cpu() - cpu)


def time_naive(repo: Path, shas: list[str]) -> Timing:
    """A naive miner on `shas`: one `git show` per commit, then the same parsing and split as the miner."""
    rules = PathRules(MiningConfig())
    cpu, started = _cpu(), time.perf_counter()
    for sha in shas:
        out = subprocess.run(
            ["git", "show", "--diff-merges=first-parent", "--raw", "--patch", "--binary", "-M",
             "--format=%H%x00%P%x00%an%x00%at%x00%B%x00", sha],
            cwd=repo, capture_output=True, check=True,
        ).stdout  # fmt: skip
        header, _, patch = out.decode("utf-8", "replace").partition("\ndiff --git ")
        header.split("\0")
        split_patch("diff --git " + patch if patch else "", rules)
    return Timing(len(shas), time.perf_counter() - started, _cpu() - cpu)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _git_version() -> str:
    return subprocess.run(["git", "--version"], capture_output=True, text=True, check=False).stdout.split()[
        -1
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=20_000, help="size of the generated history")
    parser.add_argument(
        "--sample", type=int, default=450, help="commits the naive baseline is timed on, in all"
    )
    parser.add_argument("--rounds", type=int, default=3, help="alternating miner runs and baseline slices")
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
        line = subprocess.run(
            ["git", "rev-list", "--first-parent", "HEAD"],
            cwd=repo,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        rounds = max(1, args.rounds)
        chosen = line[:: max(1, len(line) // args.sample)][: args.sample]
        slices = [chosen[index::rounds] for index in range(rounds)]
        load_before = os.getloadavg()[0]
        miner, naive = [], []
        for index in range(rounds):
            miner.append(time_miner(repo))
            naive.append(time_naive(repo, slices[index]))
        load_after = os.getloadavg()[0]

    rate = statistics.median(t.rate for t in miner)
    baseline = statistics.median(t.rate for t in naive)
    ratio = rate / baseline
    cpu_mine = statistics.median(t.cpu_ms_per_commit for t in miner)
    cpu_naive = statistics.median(t.cpu_ms_per_commit for t in naive)
    scanned = miner[0].commits
    print(f"miner:    {scanned} commits, median {rate:,.0f} commits/s "
          f"(runs: {', '.join(f'{t.wall_s:.2f} s' for t in miner)}); {cpu_mine:.3f} CPU ms/commit")  # fmt: skip
    print(f"baseline: one `git show` per commit, {len(chosen)} commits in {rounds} slices: median "
          f"{baseline:,.0f} commits/s ({', '.join(f'{t.rate:,.0f}' for t in naive)}); "
          f"{cpu_naive:.3f} CPU ms/commit; {scanned / baseline:.0f} s for the whole history")  # fmt: skip
    print(f"ratio:    {ratio:.1f}x wall, {cpu_naive / cpu_mine:.1f}x CPU  "
          f"(targets: >= {TARGET_RATE:,} commits/s and >= {TARGET_RATIO}x)")  # fmt: skip
    print(f"load average: {load_before:.1f} before, {load_after:.1f} after")
    print()
    print(
        "| date | commits | miner commits/s | naive commits/s | ratio (wall) | ratio (CPU) | load | machine |"
    )
    print("|---|---|---|---|---|---|---|---|")
    print(f"| {datetime.date.today()} | {scanned:,} | {rate:,.0f} | {baseline:,.0f} | {ratio:.1f}x "
          f"| {cpu_naive / cpu_mine:.1f}x | {load_before:.1f} | {os.cpu_count()} cores (`nproc`), {cpu_model()}, "
          f"git {_git_version()}, Python {sys.version.split()[0]} |")  # fmt: skip
    met = rate >= TARGET_RATE and ratio >= TARGET_RATIO
    print(f"\n{'targets met' if met else 'targets NOT met'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
