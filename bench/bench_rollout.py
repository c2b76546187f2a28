"""Rollout throughput and the agent loop's overhead, as markdown tables (for docs/benchmarks.md).

1. Throughput: the scripted gold policy replays each task's gold patch (edit_file calls, submit,
   grading in a fresh sandbox episode) on sample tasks (the toy task and a generated sample
   library's planted fixes), through the local executor with 1 and 2 workers and through Ray with
   2 CPUs. Attempts per minute, and the scaling efficiency of 2 workers over 1 (linear = 100%).
2. Overhead per step: the agent loop's own time (parsing, message building) and the trajectory
   store's append (one fsynced JSONL line per attempt, spread over its steps), against the env's
   step latency (sandbox tool call; the submit step includes grading).

Environments are built before anything is timed. Runs on the machine as it is: the load average
at the start is printed, since other work on the cores changes every number.

    .venv/bin/python bench/bench_rollout.py [--attempts 4] [--no-ray]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from repogym.agent.policies import PolicyConfig
from repogym.agent.trajectory import Trajectory
from repogym.dataset import save_tasks
from repogym.rollout.run import RolloutConfig, run_rollout
from repogym.rollout.store import TrajectoryStore, load_trajectories
from repogym.task import Source, Task
from repogym.testing import make_toy_task


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def sample_tasks(root: Path) -> list[Task]:
    """The toy task and the three planted fixes of a generated sample library."""
    from repogym.samples import generate_repo

    repo = generate_repo(root / "lib", seed=1, n_bug_fixes=3)
    tasks = [make_toy_task(root / "toy")]
    for fix in repo.fixes:
        tasks.append(
            Task(
                instance_id=f"{repo.name}__{fix.slug}", repo=repo.github, base_commit=fix.base_commit,
                patch=_git(repo.path, "diff", fix.base_commit, fix.fix_commit, "--", *fix.code_files),
                test_patch=_git(repo.path, "diff", fix.base_commit, fix.fix_commit, "--", *fix.test_files),
                problem_statement=fix.title, FAIL_TO_PASS=list(fix.FAIL_TO_PASS),
                PASS_TO_PASS=list(fix.PASS_TO_PASS), source=Source.SYNTHETIC, repo_source=str(repo.path),
            )
        )  # fmt: skip
    return tasks


def timed_run(
    tasks_file: Path, out: Path, n: int, jobs: int, executor: str
) -> tuple[float, list[Trajectory]]:
    config = RolloutConfig(
        tasks=str(tasks_file), policy=PolicyConfig(spec="scripted:gold"), out=str(out), n=n, jobs=jobs,
        executor=executor.split(" ")[0],
    )  # fmt: skip
    started = time.perf_counter()
    summary = run_rollout(config)
    elapsed = time.perf_counter() - started
    if summary.resolved != summary.attempts:
        print(
            f"warning: {executor} -j{jobs}: {summary.resolved}/{summary.attempts} resolved", file=sys.stderr
        )
    return elapsed, load_trajectories(out)


def store_append_ms(trajectories: list[Trajectory], root: Path) -> float:
    """Median time of one durable append of a real trajectory row."""
    times = []
    with TrajectoryStore(root) as store:
        for index, trajectory in enumerate(trajectories * 3):
            copy = Trajectory.from_dict({**trajectory.to_dict(), "attempt": 1000 + index})
            started = time.perf_counter()
            store.append(copy)
            times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--attempts", type=int, default=4, help="attempts per task (n) in each timed run")
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray run")
    args = parser.parse_args(argv)
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # a local Ray on loopback only
    root = Path(tempfile.mkdtemp(prefix="bench-rollout-"))
    os.environ.setdefault("REPOGYM_CACHE", str(root / "cache"))
    tasks = sample_tasks(root / "repos")
    tasks_file = root / "tasks.jsonl"
    save_tasks(tasks, tasks_file)
    print(
        f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; {len(tasks)} tasks",
        file=sys.stderr,
    )
    timed_run(tasks_file, root / "warm", 1, 2, "local")  # builds every environment once, untimed

    runs: list[tuple[str, int]] = [("local", 1), ("local", 2)]
    results: dict[tuple[str, int], tuple[float, list[Trajectory]]] = {}
    for executor, jobs in runs:
        out = root / f"{executor}-{jobs}"
        results[(executor, jobs)] = timed_run(tasks_file, out, args.attempts, jobs, executor)
    if not args.no_ray:
        import ray

        started = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        print(f"ray.init: {time.perf_counter() - started:.1f} s", file=sys.stderr)
        # Cold: the first run starts Ray's worker processes, which import repogym and prepare runtimes.
        for label, out in (("ray (cold)", root / "ray-cold"), ("ray (warm)", root / "ray-warm")):
            results[(label, 2)] = timed_run(tasks_file, out, args.attempts, 2, "ray")
            runs.append((label, 2))
        ray.shutdown()
    attempts = len(tasks) * args.attempts

    def per_min(key: tuple[str, int]) -> float:
        return attempts / results[key][0] * 60

    print("| executor | workers | attempts | wall s | attempts/min | resolved | scaling vs 1 worker |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for key in runs:
        elapsed, trajectories = results[key]
        resolved = sum(t.resolved for t in trajectories)
        scaling = per_min(key) / per_min(("local", 1)) / key[1]
        print(f"| {key[0]} | {key[1]} | {attempts} | {elapsed:.1f} | {per_min(key):.1f} | {resolved}/{attempts} "
              f"| {scaling:.0%} |")  # fmt: skip

    trajectories = results[("local", 1)][1]
    steps = sum(len(t.steps) for t in trajectories)
    loop_ms = sum(t.timings["loop_s"] for t in trajectories) / steps * 1000
    env_ms = sum(t.timings["env_s"] for t in trajectories) / steps * 1000
    tool_steps = [s.env_s for t in trajectories for s in t.steps[:-1]]  # all but the submit (grading) step
    tool_ms = statistics.median(tool_steps) * 1000 if tool_steps else 0.0
    append_ms = store_append_ms(trajectories, root / "store")
    append_per_step = append_ms * len(trajectories) / steps
    print()
    print("| per step (local, 1 worker) | ms | share of env time |")
    print("| --- | ---: | ---: |")
    print(f"| env step, mean (tool calls and the grading submit) | {env_ms:.1f} | 100% |")
    print(f"| env tool call, median (no grading) | {tool_ms:.1f} | |")
    print(f"| agent loop overhead (parse, messages) | {loop_ms:.3f} | {loop_ms / env_ms:.2%} |")
    print(f"| store append, per step ({append_ms:.2f} ms per attempt) | {append_per_step:.3f} | "
          f"{append_per_step / env_ms:.2%} |")  # fmt: skip
    print(f"load average at the end: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
