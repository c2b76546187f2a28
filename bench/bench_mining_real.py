"""Mining throughput on real histories, end to end (privacy stage included), against an older repogym.

Each repository (a clone of a public project) is mined by repogym at
`--revision` and at `--baseline` (source trees extracted with `git archive`
into a temporary folder, so editing the checkout during a run changes
nothing), each in its own Python process, runs alternating so a change in the
machine's load hits both; both keep every change kind. The candidate sets are
compared record by record: the task fields (ids, base commits, patches, test
patches, ...) must agree, every difference is printed, and the candidates
whose other fields (statement, metadata) differ are counted per field. Reported per repository:
commits scanned, wall seconds, commits/s, CPU seconds (the process and its git
and worker children), and the ratio against the baseline; and the same for this
checkout with the privacy stage off (the walk alone).

    .venv/bin/python bench/bench_mining_real.py --repo ../repos/pytest --repo ../repos/flask \\
        [--baseline 0d275aa] [--rounds 2] [--baseline-rounds 1] [--out DIR]

The figures in docs/benchmarks.md were measured on clones of mirrors of the public repositories
(github:pytest-dev/pytest, github:pallets/flask).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from _common import load_average, machine_line, markdown_table

ROOT = Path(__file__).resolve().parent.parent
TARGET_RATE = 2_000
# Run in a fresh interpreter with one source tree first on the path: mine, write, report timings.
_RUNNER = """
import json, resource, sys, time
from repogym.dataset import save_tasks
from repogym.mining import MiningConfig, mine
def cpu():
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
repo, out, redact = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
# Every change kind where the code classifies (the baseline keeps everything): the same candidate set.
options = {"kinds": ["fix", "feature", "refactor", "removal"]} if "kinds" in MiningConfig.model_fields else {}
started, before = time.perf_counter(), cpu()
result = mine(repo, MiningConfig(redact_secrets=redact, **options))
save_tasks(result.tasks, out)
print(json.dumps({"scanned": result.funnel.scanned, "written": len(result.tasks),
                  "wall_s": time.perf_counter() - started, "cpu_s": cpu() - before}))
"""


@dataclass(frozen=True)
class Run:
    label: str
    scanned: int
    written: int
    wall_s: float
    cpu_s: float

    @property
    def rate(self) -> float:
        return self.scanned / self.wall_s


def run_miner(source: Path, repo: Path, out: Path, redact: bool, label: str) -> Run:
    env = {**os.environ, "PYTHONPATH": str(source), "PYTHONHASHSEED": "0"}
    print(f"  running {label} on {repo.name} ...", flush=True)
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER, str(repo), str(out), "1" if redact else "0"],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{label} failed on {repo}:\n{done.stderr[-3000:]}")
    data = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"    {data['scanned']} commits, {data['written']} candidates, {data['wall_s']:.1f} s, "
          f"{data['cpu_s']:.1f} CPU s, load {load_average()}", flush=True)  # fmt: skip
    return Run(label, data["scanned"], data["written"], data["wall_s"], data["cpu_s"])


def extract_source(revision: str, into: Path) -> Path:
    """The `src` tree of repogym at `revision`, written under `into` (so edits during a run change nothing)."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision, "src"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into / "src"


#: What makes two candidates the same task; other fields (statement, metadata) are compared and counted.
TASK_FIELDS = (
    "instance_id",
    "repo",
    "base_commit",
    "patch",
    "test_patch",
    "created_at",
    "hints_text",
    "license",
)


def compare(old: Path, new: Path) -> tuple[list[str], dict[str, int]]:
    """Differences in the task fields, one line each, and how many candidates differ in each other field."""
    before = {row["instance_id"]: row for row in map(json.loads, old.read_text().splitlines())}
    after = {row["instance_id"]: row for row in map(json.loads, new.read_text().splitlines())}
    lines = [f"only in the baseline: {key}" for key in before.keys() - after.keys()]
    lines += [f"only in this checkout: {key}" for key in after.keys() - before.keys()]
    other: dict[str, int] = {}
    for key in before.keys() & after.keys():
        names = before[key].keys() | after[key].keys()
        fields = sorted(name for name in names if before[key].get(name) != after[key].get(name))
        if any(name in TASK_FIELDS for name in fields):
            lines.append(f"{key}: differs in {', '.join(name for name in fields if name in TASK_FIELDS)}")
        for name in fields:
            if name not in TASK_FIELDS:
                other[name] = other.get(name, 0) + 1
    if [k for k in before if k in after] != [k for k in after if k in before]:
        lines.append("the candidates come in another order")
    return sorted(lines), other


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, action="append", required=True, help="a git clone (repeatable)")
    parser.add_argument("--baseline", default="0d275aa", help="repogym revision to compare with")
    parser.add_argument("--revision", default="HEAD", help="repogym revision to measure (default: HEAD)")
    parser.add_argument("--rounds", type=int, default=2, help="runs of this checkout per repository")
    parser.add_argument("--baseline-rounds", type=int, default=1, help="runs of the baseline per repository")
    parser.add_argument("--out", type=Path, default=None, help="keep the candidate files here")
    args = parser.parse_args()

    rows = []
    exit_code = 0
    with tempfile.TemporaryDirectory(prefix="repogym-bench-real-") as scratch:
        work = args.out or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        baseline_src = extract_source(args.baseline, Path(scratch) / "baseline")
        source = extract_source(args.revision, Path(scratch) / "measured")
        for repo in args.repo:
            name = repo.resolve().name
            load_before = load_average()
            new_runs, old_runs = [], []
            for index in range(max(args.rounds, args.baseline_rounds)):
                if index < args.rounds:
                    new_runs.append(run_miner(source, repo, work / f"{name}-new.jsonl", True, args.revision))
                if index < args.baseline_rounds:
                    old_runs.append(
                        run_miner(baseline_src, repo, work / f"{name}-old.jsonl", True, "baseline")
                    )
            walk = run_miner(source, repo, work / f"{name}-walk.jsonl", False, "walk only")
            differences, other = compare(work / f"{name}-old.jsonl", work / f"{name}-new.jsonl")
            new_rate = statistics.median(r.rate for r in new_runs)
            old_rate = statistics.median(r.rate for r in old_runs)
            new_cpu = statistics.median(r.cpu_s for r in new_runs)
            old_cpu = statistics.median(r.cpu_s for r in old_runs)
            print(f"{name}: {new_runs[0].scanned} commits, {new_runs[0].written} candidates; "
                  f"{args.revision} {', '.join(f'{r.wall_s:.1f} s' for r in new_runs)}; "
                  f"baseline {', '.join(f'{r.wall_s:.1f} s' for r in old_runs)}; walk only {walk.wall_s:.1f} s; "
                  f"load {load_before} -> {load_average()}")  # fmt: skip
            print(f"  task fields: {'identical' if not differences else f'{len(differences)} differences'}; "
                  f"other fields that differ (candidates): {other or 'none'}")  # fmt: skip
            for line in differences[:20]:
                print(f"    {line}")
            exit_code |= 1 if differences or new_rate < TARGET_RATE else 0
            rows.append([
                name, f"{new_runs[0].scanned:,}", new_runs[0].written, f"{old_rate:,.0f}", f"{new_rate:,.0f}",
                f"{new_rate / old_rate:.1f}x", f"{old_cpu:.1f}", f"{new_cpu:.1f}", f"{old_cpu / new_cpu:.1f}x",
                f"{walk.rate:,.0f}", "identical" if not differences else f"{len(differences)} differ", load_before,
            ])  # fmt: skip
    print()
    print(f"{machine_line()}; baseline {args.baseline}")
    print(markdown_table(
        ["repo", "commits", "candidates", "baseline commits/s", "commits/s", "ratio", "baseline CPU s",
         "CPU s", "CPU ratio", "walk only commits/s", "candidates vs baseline", "load before"],
        rows,
    ))  # fmt: skip
    print(
        f"\ntarget: >= {TARGET_RATE:,} commits/s end to end, same candidates: {'met' if not exit_code else 'NOT met'}"
    )
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
