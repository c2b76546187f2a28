"""GRPO on the tiny model: seconds per step and its split, the parallel-grading speed-up, peak RSS.

1. Steps: `repogym.train.grpo.train_rl` on the validated tasks of one sample repository (what
   `repogym quickstart --repos 1` makes), the tiny model from random weights, the seed's reward
   components, in both modes:
   - agentless, a group of 8 (batch 8: one task per step). A random model never writes a
     well-formed answer, so nothing reaches the sandbox: the split is the trainer's own cost;
   - agent, a group of --agent-group (batch the same): every rollout's diff is graded in the
     sandbox (the random model makes no edit, so the task's tests run on the base commit), so the
     grade share is the sandbox's real one.
   From metrics.jsonl: mean seconds per step and per phase (generate / grade / update; the first
   step is dropped as warm-up), the process's CPU seconds per step (steadier than wall time when
   other work shares the cores), and its peak RSS.
2. Parallel grading: the run's own reward functions grading a group of 8 completions of one task
   (its gold answer, so each runs the tests) on a pool of 1 worker (one by one) and on a pool of
   one worker per core, alternated --repeats times in the same process; speed-up = the medians'
   ratio.

Runs on the machine as it is; the load average is printed (other work on the cores changes every
number). Uses its own REPOGYM_CACHE.

    .venv/bin/python bench/bench_train_rl.py [--steps 4] [--agent-group 4] [--repeats 3] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_average, machine_line, markdown_table, private_cache

from repogym.config import validate_config
from repogym.pipeline.data import DataInput, data_stage
from repogym.pipeline.runner import SILENT
from repogym.search_replace import answer_from_patch
from repogym.train.grpo import train_rl
from repogym.train.rl_reward import SandboxReward, agentless_scorer
from repogym.train.rl_tasks import TaskEnvs, machine_workers
from repogym.train.tiny import build_tiny_model

PHASES = ("time/step_s", "time/step_cpu_s", "time/generate_s", "time/grade_s", "time/update_s")


def run_steps(scratch: Path, tasks: Path, model: Path, mode: str, group: int, steps: int) -> dict:
    config = validate_config({
        "base_model": str(model), "env": {"task_set": str(tasks), "mode": mode},
        "rollout": {"num_candidates": group}, "batch_size": group, "total_steps": steps,
        "output_dir": str(scratch / f"run-{mode}"),
        "grpo": {"max_completion_length": 32, "gradient_checkpointing": False, "report_to": [], "save_steps": 1000},
    })  # fmt: skip
    started = time.perf_counter()
    result = train_rl(config)
    wall = time.perf_counter() - started
    rows = [row for row in result.metrics if "reward" in row][1:] or [
        r for r in result.metrics if "reward" in r
    ]
    means = {key: statistics.mean(row[key] for row in rows) for key in PHASES}
    return {
        "mode": mode, "group": group, "steps": steps, "wall_s": wall, **means,
        "prompt_tokens_per_completion": rows[-1]["num_tokens"] / (rows[-1]["step"] * group) - 32,
        "peak_rss_mb": max(row["memory/peak_rss_mb"] for row in rows),
    }  # fmt: skip


def grading_speedup(tasks: Path, repeats: int) -> dict:
    config = validate_config({"env": {"task_set": str(tasks), "mode": "agentless"}})
    envs = TaskEnvs.open(config)
    task = envs.tasks[0]
    with envs.borrowed(task.instance_id) as env:
        gold = answer_from_patch(task.patch, env.code_context)
    completions = [[{"role": "assistant", "content": gold}] for _ in range(8)]
    timings: dict[int, list[float]] = {1: [], max(2, machine_workers()): []}
    try:
        for _ in range(repeats):
            for workers in timings:
                with ThreadPoolExecutor(workers) as pool:
                    reward = SandboxReward(envs.reward, agentless_scorer(envs, pool))
                    started = time.perf_counter()
                    scores = reward.scores(completions, {"instance_id": [task.instance_id] * 8})
                    timings[workers].append(time.perf_counter() - started)
                assert all(score.resolved for score in scores), "every gold answer must resolve"
    finally:
        envs.close()
    serial, parallel = (statistics.median(timings[w]) for w in timings)
    return {"task": task.instance_id, "workers": list(timings), "serial_s": serial, "parallel_s": parallel,
            "speedup": serial / parallel, "runs": {str(w): t for w, t in timings.items()}}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--agent-group", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    print(f"load average at the start: {load_average()}", file=sys.stderr)
    with private_cache() as scratch:
        data_stage(DataInput(scratch / "qs", repos=1, workers=2), SILENT)
        tasks = scratch / "qs" / "tasks.jsonl"
        model = build_tiny_model(scratch / "tiny")
        speedup = grading_speedup(tasks, args.repeats)
        runs = [
            run_steps(scratch, tasks, model, "agentless", 8, args.steps),
            run_steps(scratch, tasks, model, "agent", args.agent_group, args.steps),
        ]
    print(f"\n{machine_line()}\n")
    print(markdown_table(
        ["mode", "group", "prompt tokens", "s / step", "CPU s / step", "generate s", "grade s", "update s",
         "peak RSS MiB"],
        [[r["mode"], r["group"], f"{r['prompt_tokens_per_completion']:.0f}", f"{r['time/step_s']:.2f}",
          f"{r['time/step_cpu_s']:.2f}",
          f"{r['time/generate_s']:.2f}", f"{r['time/grade_s']:.2f}", f"{r['time/update_s']:.2f}",
          f"{r['peak_rss_mb']:.0f}"] for r in runs],
    ))  # fmt: skip
    print()
    print(markdown_table(
        ["grading a group of 8 (gold answers)", "workers", "median s", "speed-up"],
        [["one by one", 1, f"{speedup['serial_s']:.2f}", "1.00x"],
         ["in parallel", speedup["workers"][1], f"{speedup['parallel_s']:.2f}", f"{speedup['speedup']:.2f}x"]],
    ))  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps({"steps": runs, "grading": speedup}, indent=2))


if __name__ == "__main__":
    main()
