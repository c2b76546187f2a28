"""Synthetic tasks: synth + validate yield per method, validated tasks per CPU-minute against a naive baseline
measured in the same run, and gold/empty grading of tasks drawn at random.

Targets: the four sample libraries (`repogym samples generate DIR --repos 4`) and, with --real PATH, any git
repository with a pytest suite (docs/benchmarks.md uses toolz 1.0.0 from its PyPI sdist).

Per target:

1. `synthesize` (coverage run in the sandbox, libcst injection, commits) and `validate_candidates`
   (two workers, clean runs shared per repo state, coverage-chosen tests, early stop): tasks, funnel
   per method, wall and CPU time;
2. the naive baseline on N candidates drawn with the seed: per mutant a fresh `git clone`, the bug
   written into it, then the WHOLE suite K times with the bug and K times without, in the same bwrap
   sandbox and environment (the environment build is not counted for either side);
3. for G validated tasks drawn with the seed, `repogym grade TASKS --instance ID --gold` must resolve
   and `--empty` must not (the CLI, as a user runs it).

CPU time is the cgroup v1 cpuacct usage of this process and every descendant (the jails included: their
CPU never reaches this process's RUSAGE_CHILDREN); where no cgroup can be made it falls back to
os.times() and says so.

    nice -n 10 .venv/bin/python bench/bench_synth.py --samples-dir /tmp/s --real ../toolz --max-real 450
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from _common import machine_line, markdown_table

from repogym.dataset import save_tasks
from repogym.grading.parsers import TestRun, get_parser
from repogym.sandbox.base import OUT_DIR, PLUGIN_DIR, Bind, Mounts, read_jail_file
from repogym.sandbox.bwrap import SANDBOX_UID, is_root
from repogym.sandbox.runtime import TaskRuntime, make_sandbox
from repogym.synth.config import SynthConfig
from repogym.synth.store import TaskRepo
from repogym.synth.synth import synthesize
from repogym.task import Task
from repogym.validate import ValidateConfig, classify, validate_candidates


class CpuMeter:
    """CPU seconds of this process tree: a cpuacct cgroup of its own, else os.times() (jails not counted)."""

    def __init__(self) -> None:
        self.group = Path(f"/sys/fs/cgroup/cpuacct/h-synth-bench-{os.getpid()}")
        try:
            self.group.mkdir()
            (self.group / "cgroup.procs").write_text(str(os.getpid()))
            self.source = "cgroup cpuacct (this process and every descendant)"
        except OSError:
            self.group = None  # type: ignore[assignment]
            self.source = "os.times() of this process and its reaped children (jailed CPU NOT counted)"

    def seconds(self) -> float:
        if self.group is not None:
            return int((self.group / "cpuacct.usage").read_text()) / 1e9
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system

    def close(self) -> None:
        if self.group is not None:
            Path("/sys/fs/cgroup/cpuacct/cgroup.procs").write_text(str(os.getpid()))
            self.group.rmdir()


def measure(meter: CpuMeter, fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    wall, cpu = time.perf_counter(), meter.seconds()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - wall, meter.seconds() - cpu


def naive_one(task: Task, source: Path, runtime: TaskRuntime, runs: int) -> bool:
    """Fresh clone, bug written in, whole suite K times with the bug and K times without."""
    meta = task.metadata
    buggy = TaskRepo(Path(task.repo_source)).read(meta["synth"]["bug_commit"], meta["file"])
    parser = get_parser("pytest")
    assert runtime.env is not None
    with tempfile.TemporaryDirectory(prefix="h-synth-naive-") as scratch:
        root = Path(scratch)
        clone = root / "repo"
        subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(source), str(clone)], check=True)
        subprocess.run(["git", "checkout", "--quiet", meta["synth"]["clean_commit"]], cwd=clone, check=True)
        (root / "tmp").mkdir()
        (root / "out").mkdir()
        if is_root():
            subprocess.run(["chown", "-R", f"{SANDBOX_UID}:{SANDBOX_UID}", str(root)], check=True)

        def suite(tag: str) -> dict:
            name = f"report-{tag}.jsonl"
            mounts = Mounts(
                workspace=clone,
                tmp=root / "tmp",
                venv=runtime.env.venv,
                interpreter_prefix=runtime.env.interpreter.prefix,
                extra=(Bind(root / "out", OUT_DIR, writable=True), Bind(parser.plugin_dir, PLUGIN_DIR)),
            )
            result = runtime.sandbox.run(
                parser.command(task.env.test_cmd, [], f"{OUT_DIR}/{name}"), mounts, runtime.limits
            )
            report = parser.parse(
                TestRun(
                    result.output, read_jail_file(root / "out" / name), result.exit_code, result.timed_out
                )
            )
            return report.statuses()

        original = (clone / meta["file"]).read_text()
        (clone / meta["file"]).write_text(buggy)
        before = [suite(f"b{k}") for k in range(runs)]
        (clone / meta["file"]).write_text(original)
        after = [suite(f"a{k}") for k in range(runs)]
    found = classify(before, after)
    return bool(found.fail_to_pass and found.pass_to_pass)


def naive(tasks: list[Task], sources: dict[str, Path], runs: int) -> int:
    runtimes: dict[str, TaskRuntime] = {}
    validated = 0
    for task in tasks:
        if task.repo not in runtimes:
            runtimes[task.repo] = TaskRuntime(task, make_sandbox("bwrap")).prepare()
        runtime = runtimes[task.repo]
        runtime.limits = runtime.limits.model_copy(update={"wall_s": 120})
        validated += naive_one(task, sources[task.repo], runtime, runs)
    return validated


def grade_sample(tasks_file: Path, tasks: list[Task], count: int, seed: int) -> dict[str, int]:
    picked = random.Random(seed).sample(tasks, min(count, len(tasks)))
    counts = Counter()
    repogym = [str(Path(sys.executable).with_name("repogym"))]
    for task in picked:
        for flag in ("--gold", "--empty"):
            done = subprocess.run(
                [*repogym, "grade", str(tasks_file), "--instance", task.instance_id, flag, "--json"],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            resolved = (
                json.loads(done.stdout).get("resolved") if done.stdout.strip().startswith("{") else None
            )
            counts[f"{flag[2:]}_{'resolved' if resolved else 'not_resolved'}"] += 1
    counts["graded"] = len(picked)
    return dict(counts)


def run_target(
    name: str, repos: list[Path], work: Path, args: argparse.Namespace, meter: CpuMeter, max_candidates: int
) -> dict:
    config = SynthConfig(
        seed=args.seed,
        per_function=args.per_function,
        max_candidates=max_candidates,
        repo_name=args.repo_name if name == "real" else "",
    )
    candidates: list[Task] = []
    sources: dict[str, Path] = {}
    synth_wall = synth_cpu = 0.0
    funnels = []
    for repo in repos:
        result, wall, cpu = measure(meter, synthesize, repo, config, work / "synth-repos")
        candidates += result.tasks
        sources[result.tasks[0].repo] = repo.resolve()
        funnels.append(result.funnel.to_dict())
        synth_wall, synth_cpu = synth_wall + wall, synth_cpu + cpu
    save_tasks(candidates, work / f"{name}-candidates.jsonl")
    out = work / f"{name}-tasks.jsonl"
    run, validate_wall, validate_cpu = measure(
        meter, validate_candidates, candidates, out, ValidateConfig(workers=args.workers, runs=args.runs)
    )
    sample = random.Random(args.seed).sample(candidates, min(args.baseline, len(candidates)))
    naive_validated, naive_wall, naive_cpu = measure(meter, naive, sample, sources, args.runs)
    sampled_ids = {t.instance_id for t in sample}
    ours_on_sample = sum(1 for t in run.tasks if t.instance_id in sampled_ids)
    grades = grade_sample(out, list(run.tasks), args.grade, args.seed)
    return {
        "target": name,
        "repos": [str(r) for r in repos],
        "candidates": len(candidates),
        "validated": len(run.tasks),
        "methods_validated": sorted({t.metadata["method"] for t in run.tasks}),
        "synth": {"wall_s": round(synth_wall, 1), "cpu_s": round(synth_cpu, 1)},
        "validate": {"wall_s": round(validate_wall, 1), "cpu_s": round(validate_cpu, 1)},
        "by_method": run.funnel.to_dict().get("by_method", {}),
        "synth_funnels": funnels,
        "naive": {
            "mutants": len(sample),
            "validated": naive_validated,
            "ours_on_same_mutants": ours_on_sample,
            "wall_s": round(naive_wall, 1),
            "cpu_s": round(naive_cpu, 1),
        },
        "grade": grades,
    }


def report(results: list[dict], meter: CpuMeter, args: argparse.Namespace) -> str:
    lines = [f"Machine: {machine_line()}. CPU time: {meter.source}.", ""]
    rows = []
    for r in results:
        ours_cpu = r["synth"]["cpu_s"] + r["validate"]["cpu_s"]
        ours_rate = 60 * r["validated"] / ours_cpu if ours_cpu else 0
        naive_rate = 60 * r["naive"]["validated"] / r["naive"]["cpu_s"] if r["naive"]["cpu_s"] else 0
        rows.append([
            r["target"], r["candidates"], r["validated"], f"{r['synth']['wall_s'] + r['validate']['wall_s']:.0f}",
            f"{ours_cpu:.0f}", f"{ours_rate:.1f}", f"{r['naive']['validated']}/{r['naive']['mutants']}",
            f"{r['naive']['cpu_s']:.0f}", f"{naive_rate:.1f}", f"{ours_rate / naive_rate:.1f}x" if naive_rate else "-",
            f"{r['grade'].get('gold_resolved', 0)}/{r['grade']['graded']} gold, {r['grade'].get('empty_not_resolved', 0)}/{r['grade']['graded']} empty",
        ])  # fmt: skip
    lines.append(markdown_table(
        ["target", "candidates", "validated", "wall s", "CPU s", "validated / CPU-min", "naive validated", "naive CPU s",
         "naive / CPU-min", "ratio", "grade (gold resolves, empty does not)"], rows))  # fmt: skip
    for r in results:
        lines += ["", f"Yield per method, {r['target']} ({', '.join(r['methods_validated'])} validated):", ""]
        lines.append(markdown_table(
            ["method", "candidates", "validated", "yield", "dropped"],
            [[m, v["candidates"], v["written"], f"{v['yield']:.0%}", ", ".join(f"{k}: {c}" for k, c in v["dropped"].items())]
             for m, v in sorted(r["by_method"].items())]))  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--samples-dir", type=Path, help="Sample repositories (generated here when missing).")
    parser.add_argument("--real", type=Path, help="A real git repository with a pytest suite.")
    parser.add_argument("--repo-name", default="pytoolz/toolz", help="owner/name of --real.")
    parser.add_argument(
        "--work", type=Path, default=None, help="Where candidates, tasks and repositories go."
    )
    parser.add_argument("--per-function", type=int, default=10)
    parser.add_argument("--max-real", type=int, default=0, help="Most candidates from --real (0 = all).")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--baseline", type=int, default=30, help="Mutants validated the naive way.")
    parser.add_argument(
        "--grade", type=int, default=20, help="Validated tasks graded with --gold and --empty."
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="h-synth-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("REPOGYM_CACHE", str(work / "cache"))
    meter = CpuMeter()
    # A kill (timeout, Ctrl-C) must still leave the cgroup: SIGTERM goes through the finally below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    results = []
    try:
        if args.samples_dir:
            if not args.samples_dir.exists():
                subprocess.run(
                    [
                        str(Path(sys.executable).with_name("repogym")),
                        "samples",
                        "generate",
                        str(args.samples_dir),
                        "--repos",
                        "4",
                    ],
                    check=True,
                    capture_output=True,
                )
            repos = sorted(p for p in args.samples_dir.iterdir() if (p / ".git").exists())
            results.append(run_target("samples", repos, work, args, meter, 0))
            (work / "bench_synth.json").write_text(json.dumps(results, indent=2))  # kept if a later target dies
        if args.real:
            results.append(run_target("real", [args.real], work, args, meter, args.max_real))
        (work / "bench_synth.json").write_text(json.dumps(results, indent=2))
        print(report(results, meter, args))
        print(f"\n(results in {work / 'bench_synth.json'})")
    finally:
        meter.close()
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
