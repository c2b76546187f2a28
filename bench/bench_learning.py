"""Learning benchmark (issue 14): a tiny model built from nothing -> pretraining -> SFT -> GRPO, judged on held-out functions.

Every stage is repogym's own library function, as `repogym quickstart` chains them
(repogym.quickstart_loop); this script only makes the stages bigger and adds cheap demonstrations:

1. data (once, shared by the seeds): `--repos` sample repositories, mined and with `--synth-per-repo`
   single-line synthetic bugs, validated in the sandbox; split by function (no function on both
   sides) with the last repository held out whole -> WORK/data/split/;
2. cheap demonstrations: `--demos-per-repo` more single-line libcst mutations (`repogym synth`) of
   the training repositories, NOT validated, kept only when every function they touch is a train
   function (none of the held-out split's) -> WORK/data/demos.jsonl; SFT sees their gold answers
   beside the validated train tasks' (`repogym data sft`);
3. per seed: `model init --tiny` + `model pretrain` (stdlib + site-packages, `--pretrain-minutes`,
   cached), baseline eval, SFT (`--sft-steps`), eval, GRPO against the sandbox (`--grpo-steps`,
   agentless, reward from real test runs), eval -> WORK/seed-S/ (metrics.jsonl per training run);
4. WORK/report.html from every seed's folder (`repogym report`), WORK/results.json with the figures.

Prompts: agentless, a 3-line window at the gold patch's lines (perfect fault localization).
Budget: the defaults (3 seeds; each 8 minutes of pretraining, 1,500 SFT steps at ~0.2-0.3 s, 40 GRPO
steps of 8 completions at ~8 s, three evaluations of ~40 tasks; plus ~10 minutes of data once) are
sized to at most 90 minutes on 2 quiet cores; on a GPU the training stages take minutes. On a busy
machine set OMP_NUM_THREADS=1 (two torch threads spinning against other processes cost ~4x).

    nice -n 10 .venv/bin/python bench/bench_learning.py --work /tmp/learn --seeds 0 1 2
    nice -n 10 .venv/bin/python bench/bench_learning.py --work /tmp/learn --seeds 0 --sft-steps 300 --grpo-steps 6
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

from repogym.dataset import load_tasks, save_tasks
from repogym.files import write_json
from repogym.quickstart import run_quickstart
from repogym.quickstart_loop import (
    LoopHooks,
    before_after_rows,
    evaluate_stage,
    grpo_stage,
    model_stage,
    sft_stage,
    split_stage,
)
from repogym.quickstart_plan import make_plan
from repogym.synth.locate import task_locations
from repogym.train.flywheel import FlywheelState


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--repos", type=int, default=4)
    parser.add_argument("--synth-per-repo", type=int, default=40, help="validated synthetic tasks drawn per repo")
    parser.add_argument("--demos-per-repo", type=int, default=400, help="unvalidated mutation demos per train repo")
    parser.add_argument("--pretrain-minutes", type=float, default=8.0)
    parser.add_argument("--sft-steps", type=int, default=1500)
    parser.add_argument("--grpo-steps", type=int, default=40)
    parser.add_argument("--grpo-generations", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    work = args.work.absolute()
    started = time.monotonic()
    log = lambda message: print(f"[{time.monotonic() - started:7.0f}s] {message}", flush=True)  # noqa: E731

    base = dataclasses.replace(
        make_plan(repos=args.repos), synth_per_repo=args.synth_per_repo, pretrain_minutes=args.pretrain_minutes,
        sft_steps=args.sft_steps, grpo_steps=args.grpo_steps, grpo_generations=args.grpo_generations,
        grpo_batch=args.grpo_generations, split_ratio=0.7,
    )  # fmt: skip
    data = work / "data"
    state = FlywheelState(data / "bench.json")
    repos = state.run("data", lambda: _data(data, base, args.workers, log), log)["repos"]
    counts = state.run("split", lambda: split_stage(data, base, repos[-1]), log)
    demos = state.run("demos", lambda: _demos(data, base, repos, args.demos_per_repo), log)
    log(f"split {counts}; {demos['kept']} cheap demos kept of {demos['drawn']} drawn")
    results = {"args": {k: str(v) for k, v in vars(args).items()}, "split": counts, "demos": demos, "seeds": {}}
    for seed in args.seeds:
        results["seeds"][seed] = _seed_run(work, data, dataclasses.replace(base, seed=seed), log)
        write_json(work / "results.json", results)
    from repogym.evaluate.report import build_report

    build_report([work / f"seed-{seed}" for seed in args.seeds] + [data], work / "report.html", max_attempts=40)
    results["wall_s"] = round(time.monotonic() - started, 1)
    write_json(work / "results.json", results)
    log(f"wrote {work / 'report.html'} and {work / 'results.json'}")


def _data(data: Path, plan, workers: int, log) -> dict:  # type: ignore[no-untyped-def]
    result = run_quickstart(data, seed=0, n_repos=plan.repos, synth_per_repo=plan.synth_per_repo, workers=workers,
                            notify=log)  # fmt: skip
    return result.to_dict()


def _demos(data: Path, plan, repos: list[str], per_repo: int) -> dict:  # type: ignore[no-untyped-def]
    """Single-line mutations of the train repositories whose functions are all train functions."""
    from repogym.config import validate_config
    from repogym.synth.config import SynthConfig
    from repogym.synth.split import diff_key
    from repogym.synth.synth import synthesize

    held_out = [*load_tasks(data / "split" / "heldout-functions.jsonl")]
    banned = {loc for task in held_out for loc in task_locations(task)}
    known = {diff_key(task) for task in load_tasks(data / "tasks.jsonl")}
    kept, drawn = [], 0
    for repo in repos[:-1]:  # the last repository is held out whole
        folder = data / "repos" / repo.split("/", 1)[1]
        config = validate_config({"methods": ["single_line"], "max_candidates": per_repo, "seed": 1,
                                  "per_function": 30, "repo_name": repo}, SynthConfig)  # fmt: skip
        tasks = synthesize(folder, config, data / "demo-repos").tasks
        drawn += len(tasks)
        for task in tasks:
            locations = set(task_locations(task))
            if locations and not locations & banned and diff_key(task) not in known:
                kept.append(task)
    save_tasks(kept, data / "demos.jsonl")
    return {"drawn": drawn, "kept": len(kept)}


def _seed_run(work: Path, data: Path, plan, log) -> dict:  # type: ignore[no-untyped-def]
    """Model -> baseline -> SFT on gold + cheap demos -> eval -> GRPO -> eval, resumable per stage."""
    from repogym.quickstart_loop import LoopResult, sft_data_stage

    out = work / f"seed-{plan.seed}"
    out.mkdir(parents=True, exist_ok=True)
    for name in ("split", "tasks.jsonl"):  # the shared data, seen from the seed's folder
        link = out / name
        if not link.exists():
            link.symlink_to(data / name)
    state = FlywheelState(out / "bench.json")
    hooks = LoopHooks(notify=log, bars=False)
    result = LoopResult(split_counts={})
    stamp = {}
    timed = lambda name, work_fn: _timed(stamp, name, work_fn)  # noqa: E731
    model = state.run("model", lambda: timed("pretrain", lambda: model_stage(out, plan, False)), log)
    evaluate_stage(out, plan, "bwrap", state, hooks, "baseline", model["model_dir"], result)
    state.run("sft_data", lambda: sft_data_stage(out, plan, "bwrap", extra=[data / "demos.jsonl"]), log)
    sft = state.run("sft", lambda: timed("sft", lambda: sft_stage(out, plan, model["model_dir"], False)), log)
    evaluate_stage(out, plan, "bwrap", state, hooks, "sft", sft["model_dir"], result)
    grpo = state.run("grpo", lambda: timed("grpo", lambda: grpo_stage(out, plan, sft["model_dir"], "bwrap", hooks)), log)
    evaluate_stage(out, plan, "bwrap", state, hooks, "grpo", grpo["model_dir"], result)
    for row in before_after_rows(result.scores):
        log(f"seed {plan.seed}: {' | '.join(row)}")
    return {"model": model, "sft": sft, "grpo": grpo, "scores": {f"{k[0]}/{k[1]}": v for k, v in result.scores.items()},
            "stage_wall_s": stamp}  # fmt: skip


def _timed(stamp: dict, name: str, work_fn):  # type: ignore[no-untyped-def]
    started = time.monotonic()
    value = work_fn()
    stamp[name] = round(time.monotonic() - started, 1)
    return {**value, "wall_s": stamp[name]}


if __name__ == "__main__":
    main()
