"""A simulation of repogym's rollout scheduler fed with measured per-attempt costs: throughput and queueing against
the number of workers and nodes, which resource saturates first, and the simulator checked against a measured
rollout (docs/cost-model.md). The model and its engine: bench/_rollout_model.py.

Inputs, all from bench_attempt_cost.py's JSON: each grade's and tool step's own (host) CPU, jailed CPU and idle
seconds on the SWE-bench instances among its targets; the environment builds of the cache it read; the driver's
seconds per attempt; the scripted rollouts at -j 1 and -j 2 for the validation. Assumed, and options: the agent's
turns, its tool mix (STEP_MIX) and the policy's latency per call.

    .venv/bin/python bench/sim_scheduler.py --costs docs/cost-model/attempt_cost.json \\
        --plot docs/cost-model/scheduler.png > table.md
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _rollout_model import Outcome, Profile, Setting, Work, simulate

# -- profiles from the measurements -------------------------------------------------------------------------

#: An agent's turns by tool, as assumed in docs/cost-model.md (the measured kinds of bench_attempt_cost.py).
STEP_MIX = {"view_file": 7, "search": 4, "edit_file (one line)": 4, "bash('true')": 3, "run_tests": 2}


def idle_s(sampled: dict[str, float]) -> float:
    """Wall that was neither CPU nor waiting for a core, in the sampled repetition (at least 0)."""
    return max(0.0, sampled["wall_s"] - sampled["cpu_s"] - sampled["runqueue_wait_s"])


def works(costs: Sequence[dict[str, float]], sampled: dict[str, float]) -> list[Work]:
    idle = idle_s(sampled)
    return [Work(c["own_s"], max(0.0, c["cpu_s"] - c["own_s"]), idle) for c in costs]


def profile_of(targets: Sequence[dict[str, Any]], builds_s: list[float], build_cpu_share: float) -> Profile:
    """Every grade (gold and empty alike), reset and tool step measured on `targets`, steps in STEP_MIX."""
    grades, steps, resets = [], [], []
    for target in targets:
        for kind, costs in target["grades"].items():
            grades += works(costs, target["grade_sampled"][kind])
        resets += [Work(c["own_s"], max(0.0, c["cpu_s"] - c["own_s"]), 0.0) for c in target["steps"]["reset"]]
        for kind, weight in STEP_MIX.items():
            steps += works(target["steps"][kind], target["step_sampled"][kind]) * weight
    return Profile(resets, steps, grades, builds_s=builds_s, build_cpu_share=build_cpu_share)


def mean_work(items: Sequence[Work]) -> Work:
    return Work(
        *(statistics.fmean(getattr(w, name) for w in items) for name in ("own_s", "jail_s", "idle_s"))
    )


# -- validation: the scripted gold rollout at -j 1 and -j 2 ------------------------------------------------


def validate(rollouts: dict[str, Any]) -> list[list[str]]:
    """Fit the attempt and the machine's other load to the -j 1 run, then simulate the -j 1 and -j 2 runs.

    The -j 1 run gives an attempt's demand (own, jailed CPU, and idle: wall less CPU less run-queue wait, per
    attempt; the store's appends are in it) and the share of its runnable time that it ran, CPU / (CPU + run-queue
    wait). On 2 cores shared round-robin with B processes that always want one, a lone runnable process runs
    2 / (B + 1) of the time, so B = 2 / share - 1. Each run is simulated as it was measured: its attempts, start
    and tail included."""
    attempts = rollouts["attempts"]
    one = rollouts["runs"]["1"]
    per_attempt = Work(
        one["own_s"] / attempts,
        (one["cpu_s"] - one["own_s"]) / attempts,
        max(0.0, one["wall_s"] - one["cpu_s"] - one["runqueue_wait_s"]) / attempts,
    )
    share = one["cpu_s"] / (one["cpu_s"] + one["runqueue_wait_s"])
    others = 2 / share - 1
    profile = Profile([Work(0.0, 0.0, 0.0)], [], [per_attempt])
    rows = []
    for jobs in (1, 2):
        run = rollouts["runs"][str(jobs)]
        measured = attempts / run["wall_s"] * 60
        setting = Setting("local", 1, 2, jobs, tasks=attempts, attempts_per_task=1, states=0, quantum_s=0.01,
                          other_load=others, dispatch_s=0.0, collect_s=0.0)  # fmt: skip
        predicted = simulate(setting, profile).makespan_per_s * 60
        rows.append([f"-j {jobs}", f"{measured:.1f}", f"{predicted:.1f}", f"{predicted / measured - 1:+.1%}",
                     run["load"]])  # fmt: skip
    fitted = (f"B = {others:.2f}; an attempt: own {per_attempt.own_s * 1000:.0f} ms, jailed "
              f"{per_attempt.jail_s * 1000:.0f} ms, idle {per_attempt.idle_s * 1000:.0f} ms")  # fmt: skip
    rows.append(["fitted to -j 1", fitted, "", "", ""])
    return rows


def driver_seconds(costs: dict[str, Any], executor: str) -> float:
    """The driver's wall seconds per attempt at its largest measured in-flight bound (bench_attempt_cost.py's
    driver part): attempts with no work of their own, so the driver (and the store's fsyncs) set the pace."""
    runs = [run for run in costs["driver"]["runs"] if run["executor"] == executor]
    widest = max(runs, key=lambda run: run["in_flight"])
    return float(widest["wall_s"] / widest["attempts"])


# -- sweeps ---------------------------------------------------------------------------------------------------


def sweep(profile: Profile, executor: str, workers: Sequence[int], **fields: Any) -> list[Outcome]:
    outcomes = []
    for count in workers:
        base = Setting(executor, 1, 64, count, tasks=0, attempts_per_task=8, states=0)
        setting = replace(base, **fields, workers=count)
        if not setting.tasks:  # enough attempts for several rounds of every worker
            setting = replace(setting, tasks=max(4 * count, 800) // setting.attempts_per_task)
        outcomes.append(simulate(setting, profile))
    return outcomes


def table(outcomes: Sequence[Outcome], label: str) -> list[list[str]]:
    return [[
        label, o.setting.executor, str(o.setting.nodes), str(o.setting.cores), str(o.setting.workers),
        f"{o.per_s:.2f}", f"{o.core_use:.0%}", f"{o.gil_use:.0%}" if o.setting.executor == "local" else "-",
        f"{o.driver_use:.0%}", f"{o.attempt_s:.1f}", f"{max(0.0, o.core_wait_s):.1f}", f"{o.build_wait_s:.1f}",
    ] for o in outcomes]  # fmt: skip


HEADER = ["scenario", "executor", "nodes", "cores/node", "workers (-j)", "attempts/s", "core use", "GIL use",
          "driver use", "attempt s", "core/GIL wait s", "env wait s"]  # fmt: skip


def markdown(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


Ceilings = list[tuple[str, float]]


def plot(panels: dict[str, tuple[list[tuple[str, list[Outcome]]], Ceilings]], cluster: list[Outcome],
         cluster_ceilings: Ceilings, path: Path) -> None:  # fmt: skip
    """One panel per sweep of workers on one node, and the cluster's panel; dashed lines are ceilings."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(panels) + 1, figsize=(5.5 * (len(panels) + 1), 4.2))
    for ax, (title, (lines, ceilings)) in zip(axes, panels.items(), strict=False):
        for label, outcomes in lines:
            ax.plot(
                [o.setting.workers for o in outcomes], [o.per_s for o in outcomes], marker="o", label=label
            )
        _ceilings(ax, ceilings)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("workers (-j) on one 64-core node")
        ax.set_ylabel("attempts / s")
        ax.set_title(title, fontsize=10)
    ax = axes[-1]
    ax.plot(
        [o.setting.nodes for o in cluster], [o.per_s for o in cluster], marker="o", label="Ray, one driver"
    )
    _ceilings(ax, cluster_ceilings)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("64-core nodes")
    ax.set_ylabel("graded attempts / s")
    ax.set_title("agentless grading on a cluster", fontsize=10)
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def _ceilings(ax: Any, ceilings: Ceilings) -> None:
    for (label, value), style in zip(ceilings, ("--", ":", "-."), strict=False):
        ax.axhline(value, color="grey", linestyle=style, linewidth=1, label=label)


def grading_profile(costs: dict[str, Any], swe_ids: set[str]) -> Profile:
    """The SWE-bench targets' grades and steps, with the cache's environment builds; a build holds a core for the
    share of its wall that the cold builds of the sample tasks spent on one."""
    builds = [build["wall_s"] for build in costs.get("cached_builds", [])]
    cold = [
        t["prepare"]
        for t in costs["targets"]
        if t["instance_id"] not in swe_ids and t["prepare"]["wall_s"] > 2
    ]
    share = sum(c["cpu_s"] for c in cold) / sum(c["wall_s"] for c in cold)
    print(
        f"environment builds: {len(builds)} from the cache, CPU share of a cold build {share:.2f}",
        file=sys.stderr,
    )
    return profile_of([t for t in costs["targets"] if t["instance_id"] in swe_ids], builds, share)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--costs", type=Path, required=True, help="bench_attempt_cost.py's JSON")
    parser.add_argument("--swe", default="pallets__flask-4992,pytest-dev__pytest-7168,pydata__xarray-4248",
                        help="the SWE-bench instances among its targets (the others are sample tasks)")  # fmt: skip
    parser.add_argument("--turns", type=int, default=20, help="agent turns per attempt")
    parser.add_argument("--policy-s", type=float, default=3.0, help="seconds per policy call (assumed)")
    parser.add_argument("--plot", type=Path, help="where the PNG goes")
    args = parser.parse_args()
    costs = json.loads(args.costs.read_text())
    swe = grading_profile(costs, set(args.swe.split(",")))
    agent = replace(swe, turns=args.turns, policy_s=args.policy_s)
    local = {"dispatch_s": 0.0, "collect_s": driver_seconds(costs, "local")}
    ray = {"dispatch_s": 0.0, "collect_s": driver_seconds(costs, "ray")}
    print(f"inputs: {args.costs} (commit {costs['commit']}); driver per attempt: local "
          f"{local['collect_s'] * 1000:.1f} ms, Ray {ray['collect_s'] * 1000:.1f} ms", file=sys.stderr)  # fmt: skip
    for name, items in (("SWE-bench grade", swe.grades), ("tool step (mix)", swe.steps)):
        mean = mean_work(items)
        print(f"{name}: own {mean.own_s:.3f} s, jailed {mean.jail_s:.3f} s, idle {mean.idle_s:.3f} s",
              file=sys.stderr)  # fmt: skip
    print("### Validation: scripted gold rollout on 2 shared cores\n")
    print(markdown(["run", "measured attempts/min", "simulated attempts/min", "error", "load"],
                   validate(costs["rollouts"])))  # fmt: skip

    wide = [16, 32, 64, 128, 256, 512, 1024, 2048]
    narrow = [16, 32, 48, 64, 96, 128, 256, 512]
    agent_label = f"agent, {args.turns} turns, {args.policy_s:g} s policy"
    runs = {
        (agent_label, "local threads"): sweep(agent, "local", wide, **local),
        ("agent", "Ray (num_cpus=1 a task, as coded)"): sweep(agent, "ray", wide, **ray),
        ("agent, Ray tasks of num_cpus=1/16", "Ray if tasks asked num_cpus=1/16"): sweep(
            agent, "ray", wide, ray_cpus_per_task=1 / 16, **ray),
        ("agentless grade", "local threads"): sweep(swe, "local", narrow, **local),
        ("agentless, 20% distinct", "local, 20% distinct patches"): sweep(
            replace(swe, distinct=0.2), "local", narrow, **local),
        ("agentless grade", "Ray"): sweep(swe, "ray", narrow, **ray),
        ("agentless, 300 cold environments", ""): sweep(swe, "local", [64, 256], tasks=300, states=300, **local),
        ("agentless grade, cluster", ""): [
            simulate(Setting("ray", nodes, 64, nodes * 64, tasks=max(4 * nodes * 64, 800) // 8,
                             attempts_per_task=8, states=0, quantum_s=100.0, **ray), swe)
            for nodes in (1, 2, 4, 8, 16, 32, 64)],
    }  # fmt: skip
    rows = [row for (label, _), outcomes in runs.items() for row in table(outcomes, label)]
    print(f"\n### Sweeps\n\n{markdown(HEADER, rows)}")
    if args.plot:
        attempt_cpu = agent.turns * mean_work(agent.steps).cpu_s + mean_work(swe.grades).cpu_s
        grade_cpu = mean_work(swe.grades).cpu_s
        curves = [(line, outcomes) for (_, line), outcomes in runs.items()]
        panels = {
            f"agent episodes: {args.turns} turns, {args.policy_s:g} s a policy call": (
                curves[:3], [(f"64 cores / {attempt_cpu:.1f} core-s an attempt", 64 / attempt_cpu)]),
            "agentless grading (SWE-bench tasks)": (
                curves[3:6],
                [(f"64 cores / {grade_cpu:.2f} core-s a grade", 64 / grade_cpu),
                 (f"64 cores / {0.2 * grade_cpu:.2f} (20% distinct)", 64 / (0.2 * grade_cpu)),
                 (f"local driver and store: {1 / local['collect_s']:.0f}/s", 1 / local["collect_s"])]),
        }  # fmt: skip
        ceilings = [(f"Ray driver and store: {1 / ray['collect_s']:.0f}/s", 1 / ray["collect_s"])]
        plot(panels, curves[-1][1], ceilings, args.plot)


if __name__ == "__main__":
    main()
