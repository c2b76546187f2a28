"""Yield on real history (issue 31): fix candidates mined from each setup-benchmark project -> kept tasks.

The projects are bench_setup.py's (chosen before anything was measured), in its order, service projects left
out. For each: `repogym mine` over the three years before HEAD (fix-classified candidates); where there are at least 20,
a seeded sample of --sample of them validated (`repogym validate`, per-commit environments, no scrub), and every kept task graded
with its gold patch and an empty one (a kept task must resolve with the first and not the second) -- each
project one bench_env_recipes.py run into WORK/<dir>, resumable (a project with a summary.json is not run
again). Projects are started in order until --budget seconds have passed; the rest are listed as pending.

Reported per project: fix candidates mined, sampled, finished, kept, yield (kept / sampled), the drops by
reason, and the gold / empty check; then the mean yield over the projects with at least 20 fix candidates
(issue 31 asks >= 50%).

    python bench/bench_yield.py --repos REPOS --work WORK --budget 3600
    python bench/bench_yield.py --repos REPOS --work WORK --only attrs click --sample 20
    python bench/bench_yield.py --repos REPOS --work WORK --table-only
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import subprocess
import sys
import time
from pathlib import Path

from _common import machine_line, markdown_table
from bench_env_recipes import read_jsonl
from bench_setup import PROJECTS, YEARS, Project

HERE = Path(__file__).resolve().parent
#: Projects with fewer fix candidates than this are shown but not averaged (issue 31's threshold).
MIN_CANDIDATES = 20


def since(clone: Path) -> str:
    """The day YEARS years before HEAD's commit date: the mined window, as bench_setup's historic commits."""
    stamp = subprocess.run(
        ["git", "-C", str(clone), "log", "-1", "--format=%cI", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    head = datetime.datetime.fromisoformat(stamp)
    return (head - datetime.timedelta(days=365 * YEARS)).date().isoformat()


def mine(project: Project, repos: Path, work: Path) -> int:
    """`repogym mine` over the window into WORK/<dir>/fix.jsonl (once); the number of fix candidates."""
    out = work / project.directory
    out.mkdir(parents=True, exist_ok=True)
    fixes = out / "fix.jsonl"
    if not fixes.exists():
        clone = repos / project.directory
        command = [sys.executable, "-m", "repogym", "mine", str(clone), "--since", since(clone),
                   "--repo-name", project.name, "--out", str(fixes)]  # fmt: skip
        with (out / "mine.log").open("w") as log:
            subprocess.run(["nice", "-n", "19", *command], stdout=log, stderr=subprocess.STDOUT, check=False)
        if not fixes.exists() and "nothing produced" in (out / "mine.log").read_text():
            fixes.write_text("")  # no commit in the window became a candidate: 0, not pending
    return len(read_jsonl(fixes))


def run_project(project: Project, work: Path, sample: int, workers: int, grade_max: int, seed: int) -> None:
    """Validate a seeded sample of the mined fix candidates and grade the kept ones (bench_env_recipes.py)."""
    out = work / project.directory
    drawn = out / "sample.jsonl"
    if not drawn.exists():
        candidates = read_jsonl(out / "fix.jsonl")
        random.Random(seed).shuffle(candidates)
        drawn.write_text("".join(json.dumps(c) + "\n" for c in candidates[:sample]))
    command = [
        sys.executable, str(HERE / "bench_env_recipes.py"), "--candidates", str(drawn), "--out", str(out),
        "-j", str(workers), "--grade-max", str(grade_max), "--seed", str(seed),
    ]  # fmt: skip
    with (out / "bench.log").open("a") as log:
        subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=False)


def row(project: Project, work: Path) -> dict | None:
    """The project's figures: mined only (below MIN_CANDIDATES), or with its sample's summary; None before."""
    out = work / project.directory
    if not (out / "fix.jsonl").exists():
        return None
    mined = len(read_jsonl(out / "fix.jsonl"))
    try:
        summary = json.loads((out / "summary.json").read_text())
    except (OSError, json.JSONDecodeError):
        return {"project": project.name, "mined": mined} if mined < MIN_CANDIDATES else None
    return {"project": project.name, "mined": mined, **summary}


def table(rows: list[dict], pending: list[str]) -> str:
    header = [
        "project",
        "fix candidates (3 years)",
        "sampled",
        "finished",
        "kept",
        "yield",
        "gold / empty",
        "drops",
    ]
    sampled_rows = [r for r in rows if "fix_candidates" in r]
    body = [
        [
            r["project"],
            r["mined"],
            r["fix_candidates"],
            r["finished"],
            r["fix_validated"],
            f"{100 * r['fix_yield']:.0f}%",
            f"{r['gold_resolved']} / {r['empty_resolved']} of {r['graded']}",
            ", ".join(f"{k} {v}" for k, v in r["reasons_fix"].items() if k != "validated") or "none",
        ]
        for r in sampled_rows
    ]
    lines = [markdown_table(header, body)]
    few = [f"{r['project']} {r['mined']}" for r in rows if "fix_candidates" not in r]
    if few:
        lines.append(
            f"\nFewer than {MIN_CANDIDATES} fix candidates (mined, not validated): {', '.join(few)}."
        )
    counted = [r for r in sampled_rows if r["mined"] >= MIN_CANDIDATES]
    if counted:
        mean = sum(r["fix_yield"] for r in counted) / len(counted)
        kept = sum(r["fix_validated"] for r in counted)
        sampled = sum(r["fix_candidates"] for r in counted)
        lines.append(
            f"\nMean yield over the {len(counted)} projects with >= {MIN_CANDIDATES} fix candidates: "
            f"{100 * mean:.0f}% (pooled: {kept} of {sampled} sampled, {100 * kept / max(sampled, 1):.0f}%)."
        )
    if pending:
        lines.append(f"\nPending (budget spent): {', '.join(pending)}.")
    lines.append(f"\nMachine: {machine_line()}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repos", type=Path, required=True, help="folder holding a clone of each project")
    parser.add_argument("--work", type=Path, required=True, help="one folder per project, and table.md")
    parser.add_argument("--sample", type=int, default=20, help="fix candidates validated per project")
    parser.add_argument(
        "--budget", type=float, default=3600.0, help="start no project after this many seconds"
    )
    parser.add_argument("--only", nargs="*", default=None, help="directories of the projects to run")
    parser.add_argument("-j", "--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=11, help="draws the sample of fix candidates")
    parser.add_argument(
        "--grade-max", type=int, default=6, help="kept tasks graded gold and empty per project"
    )
    parser.add_argument(
        "--table-only", action="store_true", help="write the table from the results, run nothing"
    )
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    chosen = [p for p in PROJECTS if not p.service and (args.only is None or p.directory in args.only)]
    started = time.perf_counter()
    pending: list[str] = []
    for project in chosen:
        if args.table_only or row(project, args.work) is not None:
            continue
        if not (args.repos / project.directory / ".git").exists():
            print(f"{project.name}: no clone at {args.repos / project.directory}", file=sys.stderr)
            continue
        if time.perf_counter() - started > args.budget:
            pending.append(project.name)
            continue
        mined = mine(project, args.repos, args.work)
        print(f"{project.name}: {mined} fix candidates", flush=True)
        if mined >= MIN_CANDIDATES:
            run_project(project, args.work, args.sample, args.workers, args.grade_max, args.seed)
    rows = [r for p in chosen if (r := row(p, args.work)) is not None]
    pending += [p.name for p in chosen if row(p, args.work) is None and p.name not in pending]
    text = table(rows, sorted(set(pending)))
    (args.work / "table.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
