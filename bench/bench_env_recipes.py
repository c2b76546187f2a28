"""Yield of `repogym validate` on a real history with per-commit environment recipes (issue 11).

Steps, each a `repogym` command in its own process (nice 19):
1. mine the repository since --since (fix-classified candidates; with --others N also N candidates of
   the other kinds, drawn with --seed) and draw a fixed random sample of --sample fix candidates;
2. validate the sample (-j WORKERS, no scrub: the figure is about environments, not privacy);
3. grade every written task with its gold patch and with an empty patch (`repogym grade
   --predictions`): a kept task must resolve with the first and not with the second;
4. print the funnel (per-reason counts), the yield over fix-classified candidates, the environments
   and the grade check, and write them to OUT/summary.json.
With --baseline-partial (a partial file of the same sample validated by an older repogym, or with
--no-recipe) the same candidates' verdicts are compared.

    python bench/bench_env_recipes.py --repo ../repos/flask --repo-name pallets/flask --since 2018-12-01 \\
        --sample 50 --others 14 --out /tmp/recipes-flask -j 2
    python bench/bench_env_recipes.py --candidates OUT/sample.jsonl --out OUT -j 2   # reuse a sample
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

REPOGYM = [sys.executable, "-m", "repogym"]


def run(args: list[str], log: Path) -> float:
    started = time.perf_counter()
    with log.open("w") as handle:
        subprocess.run(
            ["nice", "-n", "19", *REPOGYM, *args], stdout=handle, stderr=subprocess.STDOUT, check=False
        )
    return time.perf_counter() - started


def read_jsonl(path: Path) -> list[dict]:
    return (
        [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    )


def draw_sample(args: argparse.Namespace, out: Path) -> Path:
    fixes, everything = out / "fix.jsonl", out / "all.jsonl"
    common = ["mine", args.repo, "--since", args.since, "--repo-name", args.repo_name]
    run([*common, "--out", str(fixes)], out / "mine-fix.log")
    sample = read_jsonl(fixes)
    random.Random(args.seed).shuffle(sample)
    sample = sample[: args.sample]
    if args.others:
        run(
            [*common, "--out", str(everything), "--kinds", "fix,feature,refactor,removal"],
            out / "mine-all.log",
        )
        ids = {c["instance_id"] for c in read_jsonl(fixes)}
        rest = [c for c in read_jsonl(everything) if c["instance_id"] not in ids]
        random.Random(args.seed).shuffle(rest)
        sample += rest[: args.others]
    path = out / "sample.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in sample))
    return path


def grade(
    tasks: Path, out: Path, workers: int, limit: int = 0, seed: int = 11, saved_only: bool = False
) -> dict[str, dict[str, bool]]:
    """{instance_id: {"gold": resolved, "empty": resolved}}: `repogym grade --instance ID --gold/--empty --json`
    (the empty patch is really run, not counted as empty); `limit` > 0 grades a seeded sample of that many."""
    from concurrent.futures import ThreadPoolExecutor

    def one(job: tuple[str, str]) -> tuple[str, str, bool | None]:
        iid, which = job
        saved = out / "grades" / f"{iid}.{which}.json"
        try:  # resumable: a grade saved by an earlier call (--grade-partial) is not run again
            return iid, which, bool(json.loads(saved.read_text()).get("resolved"))
        except (OSError, json.JSONDecodeError):
            if saved_only:
                return iid, which, None
        done = subprocess.run(
            ["nice", "-n", "19", *REPOGYM, "grade", str(tasks), "--instance", iid, f"--{which}", "--json"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        saved.parent.mkdir(exist_ok=True)
        saved.with_suffix(".log").write_text(done.stderr)
        try:
            resolved = bool(json.loads(done.stdout).get("resolved"))
            saved.write_text(done.stdout)
            return iid, which, resolved
        except json.JSONDecodeError:
            saved.with_suffix(".log").write_text(done.stdout + done.stderr)
            return iid, which, False

    ids = [t["instance_id"] for t in read_jsonl(tasks)]
    if limit and len(ids) > limit:
        ids = sorted(random.Random(seed).sample(ids, limit))
    jobs = [(iid, which) for iid in ids for which in ("gold", "empty")]
    results: dict[str, dict[str, bool]] = collections.defaultdict(dict)
    with ThreadPoolExecutor(workers) as pool:
        for iid, which, resolved in pool.map(one, jobs):
            if resolved is not None:
                results[iid][which] = resolved
    return {iid: found for iid, found in results.items() if len(found) == 2}


def partial_tasks(sample: Path, out: Path) -> Path:
    """The tasks validated so far (from the partial file), written as validation would write them."""
    from repogym.dataset import load_tasks, save_tasks
    from repogym.validate import CandidateOutcome

    candidates = {t.instance_id: t for t in load_tasks(sample)}
    tasks = []
    for record in read_jsonl(out / "tasks.jsonl.partial.jsonl"):
        outcome = CandidateOutcome.from_record(record)
        if outcome.validated and outcome.instance_id in candidates:
            tasks.append(outcome.to_task(candidates[outcome.instance_id]))
    path = out / "partial-tasks.jsonl"
    save_tasks(tasks, path)
    return path


def summarise(sample: Path, out: Path, graded: dict[str, dict[str, bool]], seconds: float) -> dict:
    candidates = {c["instance_id"]: c for c in read_jsonl(sample)}
    outcomes = {r["instance_id"]: r for r in read_jsonl(out / "tasks.jsonl.partial.jsonl")}
    kinds = {iid: c["metadata"]["mining"].get("change_kind", "fix") for iid, c in candidates.items()}
    funnel = json.loads((out / "funnel.json").read_text()) if (out / "funnel.json").exists() else {}
    fix_ids = [iid for iid in candidates if kinds[iid] == "fix"]
    kept = [iid for iid in fix_ids if outcomes.get(iid, {}).get("verdict") == "validated"]
    honest = [iid for iid in kept if graded.get(iid, {}).get("gold") and not graded.get(iid, {}).get("empty")]
    return {
        "candidates": len(candidates),
        "fix_candidates": len(fix_ids),
        "finished": sum(iid in outcomes for iid in candidates),
        "validated": sum(r["verdict"] == "validated" for r in outcomes.values()),
        "fix_validated": len(kept),
        "fix_yield": round(len(kept) / len(fix_ids), 3) if fix_ids else 0.0,
        "fix_kept_resolving_gold_not_empty": len(honest),
        "graded": len(graded),
        "reasons": dict(collections.Counter(r["verdict"] for r in outcomes.values()).most_common()),
        "reasons_fix": dict(
            collections.Counter(outcomes[i]["verdict"] for i in fix_ids if i in outcomes).most_common()
        ),
        "environments": funnel.get("environments", {}),
        "gold_resolved": sum(g.get("gold", False) for g in graded.values()),
        "empty_resolved": sum(g.get("empty", False) for g in graded.values()),
        "validate_s": round(seconds, 1),
        "load_avg_end": os.getloadavg(),
    }


def compare(baseline_partial: Path, out: Path) -> dict[str, int]:
    """Per (baseline verdict -> new verdict) counts over the candidates both runs finished."""
    old = {r["instance_id"]: r["verdict"] for r in read_jsonl(baseline_partial)}
    new = {r["instance_id"]: r["verdict"] for r in read_jsonl(out / "tasks.jsonl.partial.jsonl")}
    pairs = collections.Counter(f"{old[i]} -> {new[i]}" for i in old if i in new)
    return dict(pairs.most_common())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repo")
    parser.add_argument("--repo-name", default="")
    parser.add_argument("--since", default="2018-12-01")
    parser.add_argument("--sample", type=int, default=60)
    parser.add_argument("--others", type=int, default=0)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--candidates", type=Path, help="an existing sample (skips mining)")
    parser.add_argument("--baseline-partial", type=Path)
    parser.add_argument("--skip-validate", action="store_true", help="reuse OUT's validation")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("-j", "--workers", type=int, default=2)
    parser.add_argument(
        "--grade-partial", action="store_true", help="grade what the partial file holds so far, then stop"
    )
    parser.add_argument("--grade-saved-only", action="store_true", help="summarise saved grades, run none")
    parser.add_argument(
        "--grade-max", type=int, default=0, help="grade a seeded sample of N written tasks (0 = all)"
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    sample = args.candidates or draw_sample(args, args.out)
    if args.grade_partial:  # while validation runs: grades are saved and reused by the final summary
        graded = grade(partial_tasks(sample, args.out), args.out, args.workers, args.grade_max, args.seed)
        print(json.dumps(graded, indent=2))
        return
    tasks = args.out / "tasks.jsonl"
    seconds = 0.0
    if not args.skip_validate:
        seconds = run(["validate", str(sample), "--out", str(tasks), "-j", str(args.workers), "--no-scrub",
                       "--funnel", str(args.out / "funnel.json"), "--log-dir", str(args.out / "logs")],
                      args.out / "validate.log")  # fmt: skip
    if not tasks.exists() and args.skip_validate:  # a validation stopped early: what its partial file holds
        tasks = partial_tasks(sample, args.out)
    graded = (
        grade(tasks, args.out, args.workers, args.grade_max, args.seed, args.grade_saved_only)
        if tasks.exists()
        else {}
    )
    summary = summarise(sample, args.out, graded, seconds)
    if args.baseline_partial:
        summary["against_baseline"] = compare(args.baseline_partial, args.out)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
