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
   and `--empty` must not (the CLI, as a user runs it);
4. `repogym tasks split TASKS --by function` on the validated tasks, twice with the seed and once with
   seed + 1: no function on both sides, byte-identical output from the same seed, another split from another.

CPU time is the cgroup v1 cpuacct usage of this process and every descendant (the jails included: their
CPU never reaches this process's RUSAGE_CHILDREN); where no cgroup can be made it falls back to
os.times() and says so.

Every figure is journaled under --work as it is measured (bench/_synth_journal.py) and the summary is built
from the journal: a stopped run keeps what it measured, the same command again resumes it (finished
phases, naive mutants and grades are not redone), and `--report-only WORK` reports a run that never finished.

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
from pathlib import Path

from _common import machine_line
from _synth_checks import grade_sample, split_check
from _synth_journal import (
    Journal,
    Poller,
    grade_summary,
    load_during,
    naive_summary,
    processed_by_method,
    report,
)

from repogym.dataset import load_tasks, save_tasks
from repogym.files import read_jsonl_records
from repogym.grading.parsers import TestRun, get_parser
from repogym.sandbox.base import OUT_DIR, PLUGIN_DIR, Bind, Mounts, read_jail_file
from repogym.sandbox.bwrap import SANDBOX_UID, is_root
from repogym.sandbox.runtime import TaskRuntime, make_sandbox
from repogym.synth.config import SynthConfig
from repogym.synth.store import TaskRepo
from repogym.synth.synth import synthesize
from repogym.task import Task
from repogym.validate import ValidateConfig, classify, partial_path, validate_candidates


class CpuMeter:
    """CPU seconds of this process tree: a cpuacct cgroup of its own, else os.times() (jails not counted)."""

    def __init__(self) -> None:
        self.group = Path(f"/sys/fs/cgroup/cpuacct/repogym-bench-synth-{os.getpid()}")
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
            # A jail's last process may still be exiting (EBUSY until it has); 10 s was not always enough.
            for _ in range(300):
                try:
                    self.group.rmdir()
                    return
                except OSError:
                    time.sleep(0.2)
            print(f"could not remove {self.group}: remove it once its processes have exited", file=sys.stderr)


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
    with tempfile.TemporaryDirectory(prefix="repogym-bench-synth-naive-") as scratch:
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


def naive(tasks: list[Task], sources: dict[str, Path], runs: int, journal: Journal, meter: CpuMeter) -> None:
    """Each drawn mutant the journal has no verdict for, one journal line as each finishes."""
    done = {row["instance_id"] for row in journal.read("naive") if "instance_id" in row}
    runtimes: dict[str, TaskRuntime] = {}
    for task in tasks:
        if task.instance_id in done:
            continue
        if task.repo not in runtimes:
            runtime, wall, cpu = measure(meter, TaskRuntime(task, make_sandbox("bwrap")).prepare)
            runtime.limits = runtime.limits.model_copy(update={"wall_s": 120})
            runtimes[task.repo] = runtime
            journal.append("naive", {"prepare": task.repo, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2)})
        ok, wall, cpu = measure(meter, naive_one, task, sources[task.repo], runtimes[task.repo], runs)
        journal.append("naive", {"instance_id": task.instance_id, "validated": ok, "wall_s": round(wall, 2),
                                 "cpu_s": round(cpu, 2)})  # fmt: skip


def synth_phase(
    journal: Journal, poller: Poller, repos: list[Path], work: Path, config: SynthConfig
) -> tuple[list[Task], dict[str, Path]]:
    """Candidates and the source of each task repo: synthesized, or the saved ones once synth has ended."""
    candidates_file = work / f"{journal.target}-candidates.jsonl"
    ended = journal.ended("synth")
    if ended and candidates_file.exists():
        return list(load_tasks(candidates_file)), {k: Path(v) for k, v in ended["sources"].items()}

    def run() -> tuple[list[Task], dict[str, Path], list[dict]]:
        candidates, sources, funnels = [], {}, []
        for repo in repos:
            result = synthesize(repo, config, work / "synth-repos")
            candidates += result.tasks
            sources[result.tasks[0].repo] = repo.resolve()
            funnels.append(result.funnel.to_dict())
        save_tasks(candidates, candidates_file)
        return candidates, sources, funnels

    candidates, sources, _ = poller.run(
        journal, "synth", run,
        extra=lambda r: {"candidates": len(r[0]), "sources": {k: str(v) for k, v in r[1].items()}, "funnels": r[2]},
    )  # fmt: skip
    return candidates, sources


def run_target(
    name: str, repos: list[Path], work: Path, args: argparse.Namespace, meter: CpuMeter, max_candidates: int
) -> dict:
    """Synth, validate, the naive baseline, grades: each phase journaled, resumed where a rerun finds it done."""
    config = SynthConfig(
        seed=args.seed,
        per_function=args.per_function,
        max_candidates=max_candidates,
        repo_name=args.repo_name if name == "real" else "",
    )
    journal, poller = Journal(work, name), Poller.shared(work, meter)
    journal.append("phases", {"event": "args", "seed": args.seed, "baseline": args.baseline, "grade": args.grade,
                              "workers": args.workers, "runs": args.runs, "max_candidates": max_candidates})  # fmt: skip
    candidates, sources = synth_phase(journal, poller, repos, work, config)
    out = work / f"{name}-tasks.jsonl"
    run = poller.run(
        journal, "validate", validate_candidates, candidates, out,
        ValidateConfig(workers=args.workers, runs=args.runs),
        extra=lambda r: {"validated": len(r.tasks), "funnel": r.funnel.to_dict(), "validated_now": r.validated_now},
    )  # fmt: skip
    sample = random.Random(args.seed).sample(candidates, min(args.baseline, len(candidates)))
    poller.run(journal, "naive", naive, sample, sources, args.runs, journal, meter)
    poller.run(journal, "grade", grade_sample, out, list(run.tasks), args.grade, args.seed, journal)
    return summarize(work, name)


def summarize(work: Path, name: str) -> dict:
    """A target's result, from its journal and validate's files alone (what --report-only rebuilds); the
    seed and sample sizes are those of the target's last run."""
    journal = Journal(work, name)
    params = [r for r in journal.read("phases") if r.get("event") == "args"][-1]
    seed, baseline, grade = params["seed"], params["baseline"], params["grade"]
    candidates = list(load_tasks(work / f"{name}-candidates.jsonl"))
    out = work / f"{name}-tasks.jsonl"
    partial = partial_path(out)
    validate_end = journal.ended("validate")
    tasks = list(load_tasks(out)) if validate_end and out.exists() else []
    by_method = processed_by_method(candidates, partial)
    for method, row in (validate_end or {}).get("funnel", {}).get("by_method", {}).items():
        by_method.setdefault(method, {}).update(written=row["written"])
    sample_ids = [
        t.instance_id for t in random.Random(seed).sample(candidates, min(baseline, len(candidates)))
    ]
    validated_ids = {r["instance_id"] for r in read_jsonl_records(partial) if r.get("verdict") == "validated"}
    picked = [t.instance_id for t in random.Random(seed).sample(tasks, min(grade, len(tasks)))]
    synth_end = journal.ended("synth") or {}
    return {
        "target": name,
        "repos": list(synth_end.get("sources", {}).values()),
        "candidates": len(candidates),
        "validate_finished": validate_end is not None,
        "processed": sum(row["processed"] for row in by_method.values()),
        "validated": len(tasks) if validate_end else len(validated_ids & {t.instance_id for t in candidates}),
        "params": params,
        "methods_validated": sorted(m for m, row in by_method.items() if row.get("validated")),
        "synth": journal.phase_cost("synth"),
        "validate": journal.phase_cost("validate"),
        "by_method": by_method,
        "synth_funnels": synth_end.get("funnels", []),
        "naive": {
            **naive_summary(journal, sample_ids),
            "ours_on_same_mutants": len(validated_ids & set(sample_ids)),
        },
        "grade": grade_summary(journal, picked),
        "split": split_check(out, seed) if tasks else None,
        "load": load_during(work, name),
        "machine": machine_line(),
    }


def naive_only(args: argparse.Namespace) -> dict:
    """The naive baseline alone, on the mutants a full run of the same candidates and seed would draw;
    journaled as `<candidates stem>-naive.jsonl` in --work (else beside the file), so a rerun resumes."""
    candidates = list(load_tasks(args.naive_only))
    sample = random.Random(args.seed).sample(candidates, min(args.baseline, len(candidates)))
    folders = (
        [args.real] if args.real else sorted(p for p in args.samples_dir.iterdir() if (p / ".git").exists())
    )
    by_name = {folder.resolve().name: folder.resolve() for folder in folders}
    sources = {t.repo: by_name.get(t.repo.split("/")[-1], folders[0].resolve()) for t in sample}
    journal = Journal(args.work or args.naive_only.parent, args.naive_only.stem)
    meter = CpuMeter()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        naive(sample, sources, args.runs, journal, meter)
    finally:
        meter.close()
    ids = [t.instance_id for t in sample]
    return {**naive_summary(journal, ids), "cpu_source": meter.source, "instance_ids": sorted(ids),
            "journal": str(journal.path("naive")), "machine": machine_line()}  # fmt: skip


def report_saved(paths: list[Path], seed: int) -> str:
    """The report of earlier runs: a --work folder or its bench_synth.json. A target with a journal is
    rebuilt from it (a stopped run too); an older run's saved result is shown as saved, with a split check."""
    results = []
    for path in paths:
        work = path if path.is_dir() else path.parent
        saved = json.loads(path.read_text()) if path.is_file() else []
        targets = [r["target"] for r in saved] or [
            t for t in ("samples", "real") if (work / f"{t}-phases.jsonl").exists()
        ]
        for target in targets:
            if (work / f"{target}-phases.jsonl").exists() and (work / f"{target}-candidates.jsonl").exists():
                results.append(summarize(work, target))
                continue
            result = next(r for r in saved if r["target"] == target)
            if "split" not in result:
                result["split"] = split_check(work / f"{target}-tasks.jsonl", seed)
            results.append(result)
    meter = CpuMeter.__new__(CpuMeter)
    meter.source = "as saved by each run (cgroup cpuacct where it could make one)"
    return report(results, meter, argparse.Namespace())


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
    parser.add_argument(
        "--naive-only", type=Path, default=None,
        help="Only the naive baseline, on --baseline candidates of this file drawn as a full run draws them "
        "(the repositories: --samples-dir's or --real); to measure it beside a run already under way.",
    )  # fmt: skip
    parser.add_argument(
        "--report-only", type=Path, nargs="+", default=None,
        help="Print the report of earlier runs: --work folders (a stopped run too) or their bench_synth.json.",
    )  # fmt: skip
    args = parser.parse_args()
    if args.report_only:
        print(report_saved(args.report_only, args.seed))
        return
    if args.naive_only:
        print(json.dumps(naive_only(args)))
        return
    work = args.work or Path(tempfile.mkdtemp(prefix="repogym-bench-synth-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("REPOGYM_CACHE", str(work / "cache"))
    meter = CpuMeter()
    # A kill (timeout, Ctrl-C) must still leave the cgroup: SIGTERM goes through the finally below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    results = []
    try:
        if args.samples_dir:
            if not args.samples_dir.exists():
                repogym = str(Path(sys.executable).with_name("repogym"))
                subprocess.run([repogym, "samples", "generate", str(args.samples_dir), "--repos", "4"],
                               check=True, capture_output=True)  # fmt: skip
            repos = sorted(p for p in args.samples_dir.iterdir() if (p / ".git").exists())
            results.append(run_target("samples", repos, work, args, meter, 0))
            (work / "bench_synth.json").write_text(
                json.dumps(results, indent=2)
            )  # kept if a later target dies
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
