"""What one attempt costs, for the cost model (docs/cost-model.md): CPU-seconds, wall seconds, peak memory and
disk of an agentless grade, of each kind of agent tool step, of whole scripted agent attempts, and of the
environment builds an attempt waits for on a cache miss. Writes one JSON file that bench/sim_scheduler.py reads.

How each figure is taken:

- CPU: a cpuacct cgroup holding this process and everything it starts, the jails included
  (bench_rl_grading's `CoreSeconds`; rusage alone misses the jails). "own" is this process's rusage: the
  host-side Python of an attempt, which the local executor's threads run under one GIL.
- Memory and waits: one more repetition of each operation under a sampler thread that reads /proc every 20 ms
  (`Sampler`): the peak of the summed VmRSS of this process's descendants (the jails keep their host pids), the
  largest VmHWM among them, and the run-queue wait of the descendants and of this process's threads: on a shared
  machine part of the wall is waiting for a core, which an idle node would not pay. The sampler's CPU is taken
  off that repetition's figure; the timed repetitions run without it. The worker process's RSS is read at the end.
- Disk: `du` of the episode's own folder (overlay upper, /tmp, out) just before it closes, plus the test log the
  grade keeps; the bytes of one trajectory row in the rollout store.
- Environment builds: each sample repository's built cold here (a private cache, the package index
  reachable), and with --env-cache the builds an existing cache holds: the wall from the build's `.lock` file
  (created when the build takes it) to its `.ok` file (written when it ends), and `du` of the environment.

Targets: the toy task and a generated sample library's three planted fixes (bench_rollout's), in a private
cache; with --lite, SWE-bench Lite instances as `repogym tasks import --specs swebench` imports them, graded in
the cache REPOGYM_CACHE names (build their environments first: `repogym tasks check`). For the simulator's
validation: scripted gold rollouts of the sample tasks (bench_rollout's) at -j 1 and -j 2, wall and CPU.

The driver (`--parts driver`): what the one driver of a run pays per attempt, through the local and Ray executors'
own loops with attempts that return a trajectory row at once and a real store (see `driver_costs`).

    REPOGYM_CACHE=CACHE .venv/bin/python bench/bench_attempt_cost.py --json OUT.json [--reps 3] \\
        [--lite LITE --repos-dir REPOS --env-file bench/swebench_offline.toml --only pallets__flask-4992] \\
        [--env-cache CACHE] [--parts costs,driver]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _attempt_meters import Cost, Sampler, rss_mib, sampled, timed
from _common import disk_kib, load_average, machine_line, markdown_table, private_cache
from bench_grade_swebench import imported_tasks
from bench_rl_grading import CoreSeconds
from bench_rollout import sample_tasks

import repogym.env
from repogym.agent.policies import PolicyConfig
from repogym.agent.trajectory import AttemptOutcome, Trajectory
from repogym.dataset import save_tasks
from repogym.grading.grade import grade, grade_in_episode
from repogym.patches import changed_paths
from repogym.rollout.attempt import AttemptSettings, failed
from repogym.rollout.executors import LocalExecutor, RayExecutor
from repogym.rollout.run import RolloutConfig, run_rollout
from repogym.rollout.store import TrajectoryStore, load_trajectories
from repogym.sandbox.runtime import TaskRuntime
from repogym.task import Task
from repogym.testing import make_toy_task


@dataclass
class TargetCosts:
    """Everything measured on one task."""

    instance_id: str
    prepare: Cost
    """TaskRuntime.prepare(): a cold environment build in the private cache, a lookup in a warm one."""
    env_mib: float
    grades: dict[str, list[Cost]] = field(default_factory=dict)
    """'gold', 'empty': one Cost per repetition of `grade()`, episode made and closed."""
    shared_copy: Cost | None = None
    """A second grade of the same candidate with verdict sharing on: what a repeated candidate costs."""
    grade_sampled: dict[str, dict[str, float]] = field(default_factory=dict)
    """One more grade under a Sampler: memory, run-queue wait, core-seconds and wall."""
    grade_disk_kib: dict[str, float] = field(default_factory=dict)
    """The grading episode's folder just before it closes, plus the test log kept."""
    tests_s: dict[str, list[float]] = field(default_factory=dict)
    """The test run's own wall seconds inside each grade (GradeResult.timings)."""
    steps: dict[str, list[Cost]] = field(default_factory=dict)
    """Agent tool steps through RepoEnv.step, by kind."""
    step_sampled: dict[str, dict[str, float]] = field(default_factory=dict)
    episode_disk_kib: float = 0.0
    """An agent episode's folder after every tool step above (tests run in it included)."""


# -- one task ---------------------------------------------------------------------------------------------


def measure_task(task: Task, meter: CoreSeconds, reps: int, repos_dir: str | None) -> TargetCosts:
    prepare, runtime = timed(meter, lambda: TaskRuntime.create(task, "bwrap", repos_dir).prepare())
    assert runtime.env is not None
    costs = TargetCosts(task.instance_id, prepare, disk_kib(runtime.env.venv) / 1024)
    for kind, patch in (("gold", task.patch), ("empty", "")):
        grade(task, patch, runtime=runtime)  # warm: page cache, first-use imports
        costs.grades[kind], costs.tests_s[kind] = [], []
        for _ in range(reps):
            cost, result = timed(meter, lambda patch=patch: grade(task, patch, runtime=runtime))
            costs.grades[kind].append(cost)
            costs.tests_s[kind].append(result.timings.get("tests_s", 0.0))
        costs.grade_sampled[kind] = sampled(meter, lambda patch=patch: grade(task, patch, runtime=runtime))
        with runtime.episode(readonly_git=True) as episode:
            result = grade_in_episode(task, patch, episode)
            log = Path(result.report.log_path) if result.report and result.report.log_path else None
            costs.grade_disk_kib[kind] = disk_kib(episode.layer.root) + (
                log.stat().st_size / 1024 if log else 0.0
            )
    grade(task, task.patch, runtime=runtime, share_verdicts=True)
    costs.shared_copy, _ = timed(meter, lambda: grade(task, task.patch, runtime=runtime, share_verdicts=True))
    measure_steps(task, runtime, meter, reps, costs)
    return costs


def tool_actions(task: Task, pristine: Path) -> dict[str, dict[str, Any]]:
    """One action per kind of tool step, as an agent would make them on this task (flat tool-call dicts)."""
    path = changed_paths(task.patch)[0]
    first_line = (pristine / path).read_text(encoding="utf-8").splitlines()[0]
    word = Path(path).stem
    return {
        "bash('true')": {"name": "bash", "arguments": {"command": "true"}},
        "view_file": {"name": "view_file", "arguments": {"path": path}},
        "search": {"name": "search", "arguments": {"pattern": word}},
        "edit_file (one line)": {
            "name": "edit_file",
            "arguments": {"path": path, "lines": "1:1", "text": first_line},
        },
        "run_tests": {"name": "run_tests", "arguments": {}},
    }


def measure_steps(
    task: Task, runtime: TaskRuntime, meter: CoreSeconds, reps: int, costs: TargetCosts
) -> None:
    assert runtime.pristine is not None
    env = repogym.env.make(task.instance_id, task, runtime=runtime, max_steps=10_000)
    try:
        env.reset()
        for kind, action in tool_actions(task, runtime.pristine).items():
            env.step(action)  # warm
            costs.steps[kind] = [timed(meter, lambda action=action: env.step(action))[0] for _ in range(reps)]
            costs.step_sampled[kind] = sampled(meter, lambda action=action: env.step(action))
        assert env.episode is not None
        costs.episode_disk_kib = disk_kib(env.episode.layer.root)
        costs.steps["reset"] = [timed(meter, env.reset)[0] for _ in range(reps)]
    finally:
        env.close()


# -- scripted gold rollouts (the simulator's validation) --------------------------------------------------


def rollouts(tasks: list[Task], root: Path, meter: CoreSeconds, attempts: int) -> dict[str, Any]:
    """Scripted gold rollouts at -j 1 and -j 2 (bench_rollout's), after an untimed one that builds everything."""
    tasks_file = root / "tasks.jsonl"
    save_tasks(tasks, tasks_file)
    waits: dict[int, float] = {}

    def run(jobs: int, out: Path, n: int) -> Cost:
        config = RolloutConfig(
            tasks=str(tasks_file), policy=PolicyConfig(spec="scripted:gold"), out=str(out), n=n, jobs=jobs
        )
        with Sampler() as sampler:
            cost, summary = timed(meter, lambda: run_rollout(config))
        waits[jobs] = sampler.figures()["runqueue_wait_s"]
        cost = Cost(cost.cpu_s - sampler.sampler_cpu_s, cost.own_s - sampler.sampler_cpu_s, cost.wall_s)
        if summary.resolved != summary.attempts:
            raise SystemExit(
                f"-j {jobs}: {summary.resolved}/{summary.attempts} resolved; the figures would lie"
            )
        return cost

    run(2, root / "warm", 1)
    result: dict[str, Any] = {"attempts": len(tasks) * attempts, "runs": {}}
    for jobs in (1, 2):
        out = root / f"rollout-j{jobs}"
        cost = run(jobs, out, attempts)
        trajectories = load_trajectories(out)
        shard_bytes = sum(path.stat().st_size for path in out.glob("trajectories-*.jsonl"))
        result["runs"][str(jobs)] = {
            **asdict(cost),
            "load": load_average(),
            "runqueue_wait_s": waits[jobs],
            "attempt_wall_s": [t.timings["total_s"] for t in trajectories],
            "step_env_s": [[step.env_s for step in t.steps] for t in trajectories],
            "row_bytes": shard_bytes / len(trajectories),
        }
    return result


# -- the driver's cost per attempt --------------------------------------------------------------------------


def driver_costs(root: Path, meter: CoreSeconds, row_bytes: int, count: int) -> list[dict[str, Any]]:
    """What the one driver pays per attempt, apart from the attempts: each executor's own loop, with attempts that
    return a trajectory row of `row_bytes` at once, its results taken in by a real store (two fsynced appends).

    Local: the thread pool's bookkeeping and the store. Ray: `remote()` with the task pickled, `ray.wait` over the
    pending refs (a list as long as the in-flight bound), `ray.get`, `Trajectory.from_dict`, the store; a local
    Ray of 2 CPUs started here. "own" is the driver process's CPU (Ray's threads in it included), "cpu" the
    cgroup's (Ray's raylet, GCS and workers too)."""
    import ray

    import repogym.rollout.executors as executors_module
    from repogym.rollout.ray_session import connect

    task = make_toy_task(root / "toy")
    row = failed(task, 0, "scripted:gold", AttemptOutcome.SUBMITTED, "", time.perf_counter()).to_dict()
    row["messages"] = [{"role": "user", "content": "x" * max(0, row_bytes - len(json.dumps(row)))}]
    jobs = [(task, attempt) for attempt in range(count)]
    settings = AttemptSettings(PolicyConfig(spec="scripted:gold"))
    results = []

    def measure(executor: Any, label: str, in_flight: int) -> None:
        with TrajectoryStore(root / f"{label}-{in_flight}") as store:
            cost, _ = timed(meter, lambda: executor.run(jobs, store.append))
        results.append({"executor": label, "in_flight": in_flight, "attempts": count, **asdict(cost)})

    for threads in (2, 64):
        local = LocalExecutor(settings, threads)
        local.worker.run = lambda task, attempt: Trajectory.from_dict({**row, "attempt": attempt})  # type: ignore[method-assign]
        measure(local, "local", 2 * threads)
        local.close()
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    connect(None, 2)  # a local Ray of 2 CPUs on loopback, as `repogym rollout --executor ray` starts one
    real_attempt = executors_module.run_on_ray_worker
    executors_module.run_on_ray_worker = lambda settings, task, attempt: {**row, "attempt": attempt}
    try:
        RayExecutor(settings, 2, max_in_flight=4).run(
            jobs[:50], lambda trajectory: None
        )  # starts the workers
        for in_flight in (4, 64, 512):
            measure(RayExecutor(settings, 2, max_in_flight=in_flight), "ray", in_flight)
    finally:
        executors_module.run_on_ray_worker = real_attempt
        ray.shutdown()
    return results


# -- environments an existing cache holds -----------------------------------------------------------------


def cached_builds(cache: Path) -> list[dict[str, Any]]:
    """Each finished environment build in `cache`: wall seconds (.lock to .ok mtime), MiB on disk, what it
    installed last (the build log's last 'Successfully installed' or 'Built' line names the project)."""
    builds = []
    envs = cache / "envs"
    for done in sorted(envs.glob("*.ok")):
        folder, lock, log = done.with_suffix(""), done.with_suffix(".lock"), done.with_suffix(".log")
        if not folder.is_dir() or not lock.exists():
            continue
        installed = [
            line.strip()
            for line in log.read_text(errors="replace").splitlines()
            if line.startswith(("Successfully installed", "Built "))
        ] if log.exists() else []  # fmt: skip
        builds.append({
            "key": folder.name,
            "wall_s": done.stat().st_mtime - lock.stat().st_mtime,
            "mib": disk_kib(folder) / 1024,
            "what": installed[-1][:80] if installed else "",
        })  # fmt: skip
    return builds


# -- report -------------------------------------------------------------------------------------------------


def median_cost(costs: list[Cost]) -> list[str]:
    return [f"{statistics.median(c.cpu_s for c in costs):.3f}", f"{statistics.median(c.own_s for c in costs):.3f}",
            f"{statistics.median(c.wall_s for c in costs):.3f}"]  # fmt: skip


def report(results: dict[str, Any]) -> str:
    lines = []
    if "targets" in results:
        lines += [results["machine"], f"core-seconds: {results['cpu_how']}", "", cost_table(results)]
        for jobs, run in results["rollouts"]["runs"].items():
            per_min = results["rollouts"]["attempts"] / run["wall_s"] * 60
            lines.append(f"\nscripted gold rollout -j {jobs}: {per_min:.1f} attempts/min, {run['cpu_s']:.1f} core-s "
                         f"({run['own_s']:.1f} own) for {results['rollouts']['attempts']} attempts, "
                         f"{run['runqueue_wait_s']:.1f} s waiting for a core, {run['row_bytes']:.0f} bytes a "
                         f"trajectory row, load {run['load']}")  # fmt: skip
        lines.append(f"worker process RSS: {results['worker_rss_mib']:.0f} MiB")
    if "driver" in results:
        rows = [[run["executor"], str(run["in_flight"]), f"{run['own_s'] / run['attempts'] * 1000:.2f}",
                 f"{run['cpu_s'] / run['attempts'] * 1000:.2f}", f"{run['attempts'] / run['wall_s']:.0f}"]
                for run in results["driver"]["runs"]]  # fmt: skip
        header = ["executor", "in flight", "driver ms/attempt", "core-ms/attempt (all)", "attempts/s"]
        lines += ["", f"the driver's cost per attempt (load at the start {results['driver']['load_start']}):", "",
                  markdown_table(header, rows)]  # fmt: skip
    return "\n".join(lines)


def cost_table(results: dict[str, Any]) -> str:
    rows = []
    for target in results["targets"]:
        for kind, costs in target["grades"].items():
            extra = target["grade_sampled"][kind]
            rows.append([target["instance_id"], f"grade {kind}", *median_cost([Cost(**c) for c in costs]),
                         f"{extra['runqueue_wait_s']:.3f}", f"{extra['peak_rss_mib']:.0f}",
                         f"{target['grade_disk_kib'][kind]:.0f}"])  # fmt: skip
        copy = Cost(**target["shared_copy"])
        rows.append([target["instance_id"], "grade, shared copy", *median_cost([copy]), "", "", ""])
        for kind, costs in target["steps"].items():
            extra = target["step_sampled"].get(kind)
            sampled_cells = (
                [f"{extra['runqueue_wait_s']:.3f}", f"{extra['peak_rss_mib']:.0f}"] if extra else ["", ""]
            )
            rows.append([target["instance_id"], kind, *median_cost([Cost(**c) for c in costs]), *sampled_cells,
                         ""])  # fmt: skip
        prepare = Cost(**target["prepare"])
        rows.append([target["instance_id"], "prepare (env build or lookup)", *median_cost([prepare]),
                     "", "", f"{target['env_mib'] * 1024:.0f}"])  # fmt: skip
    header = [
        "task",
        "operation",
        "core-s",
        "own s",
        "wall s",
        "run-queue wait s",
        "peak jail RSS MiB",
        "disk KiB",
    ]
    return markdown_table(header, rows)


def measure_costs(args: argparse.Namespace, meter: CoreSeconds, results: dict[str, Any]) -> None:
    """The targets (SWE-bench's first: the user's cache, before private_cache() points REPOGYM_CACHE elsewhere),
    the environment builds a cache holds, the sample tasks and their scripted rollouts."""
    if args.lite:
        only = set(args.only.split(","))
        repos = {instance.rsplit("-", 1)[0].replace("__", "/") for instance in only}
        for task in imported_tasks(args.lite, repos, only, args.env_file):
            results["targets"].append(asdict(measure_task(task, meter, args.reps, args.repos_dir)))
    if args.env_cache:
        results["cached_builds"] = cached_builds(args.env_cache)
    with private_cache() as scratch:
        tasks = sample_tasks(scratch / "repos")
        for task in tasks:
            results["targets"].append(asdict(measure_task(task, meter, args.reps, None)))
        results["rollouts"] = rollouts(tasks, Path(tempfile.mkdtemp(dir=scratch)), meter, args.attempts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, required=True, help="where the measurements go")
    parser.add_argument("--reps", type=int, default=3, help="repetitions of each timed operation")
    parser.add_argument("--attempts", type=int, default=3, help="attempts per task in each scripted rollout")
    parser.add_argument("--lite", type=Path, help="SWE-bench Lite as JSON (adds its --only instances)")
    parser.add_argument("--repos-dir", default=None)
    parser.add_argument("--env-file", default=None)
    parser.add_argument("--only", default="pallets__flask-4992")
    parser.add_argument("--env-cache", type=Path, help="a cache whose environment builds to read")
    parser.add_argument("--parts", default="costs,driver",
                        help="costs: tasks, rollouts, builds; driver: the driver's cost per attempt (local, Ray); "
                        "what a part not run measured is kept from an existing --json file")  # fmt: skip
    parser.add_argument("--driver-attempts", type=int, default=1000)
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    meter = CoreSeconds()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    results: dict[str, Any] = json.loads(args.json.read_text()) if args.json.exists() else {}
    try:
        if "costs" in parts:
            results.update(commit=commit, cpu_how=meter.how, load_start=load_average(), targets=[])
            measure_costs(args, meter, results)
            results["worker_rss_mib"] = rss_mib()
            results["machine"] = machine_line()
        if "driver" in parts:
            row_bytes = int(results.get("rollouts", {}).get("runs", {}).get("1", {}).get("row_bytes", 12_000))
            with private_cache() as scratch:
                results["driver"] = {
                    "commit": commit, "load_start": load_average(), "machine": machine_line(),
                    "runs": driver_costs(scratch, meter, row_bytes, args.driver_attempts),
                }  # fmt: skip
    finally:
        meter.close()
    args.json.write_text(json.dumps(results, indent=1) + "\n")
    print(report(results))


if __name__ == "__main__":
    main()
