"""Learning benchmark (issue 14): a tiny model built from nothing -> pretraining -> SFT -> GRPO, judged on held-out functions.

Every stage is repogym's own stage function, as `repogym quickstart` chains them
(repogym.pipeline.quickstart), run through the same resumable `Runner`; this script makes the stages bigger:

1. data (once, shared by the seeds): `--repos` sample repositories, mined and with `--synth-per-repo`
   single-line synthetic bugs, validated in the sandbox -> WORK/data/tasks.jsonl (`--data DIR` reuses
   such a folder);
2. split (once): the last repository held out whole, the others' tasks split by function (no function
   on both sides); every statement cut to its first paragraph (the failing tests' names: the full test
   output would be hundreds of prompt tokens); the held-out splits keep only synthetic tasks of
   `--methods` (below) -> WORK/data/split/;
3. demonstrations (once): `repogym.train.mutation_demos`: the same libcst methods injected into the
   training repositories' other functions (held-out functions left out) and into `--demo-rows`
   functions of the standard library and site-packages (repogym's own package never), not validated;
   SFT rows = these + the train split's gold answers (`repogym data sft`) -> WORK/data/train/sft.jsonl;
4. per seed: `model init --tiny` + `model pretrain` (stdlib + site-packages, `--pretrain-minutes`,
   cached), baseline eval, SFT (`--sft-steps`), eval, GRPO against the sandbox (`--grpo-steps`,
   agentless, the seed's reward from real test runs), eval, each GRPO checkpoint's eval (the held-out curve
   over RL steps), both models sampled (`--sampled`) -> WORK/seed-S/ (metrics.jsonl per run);
5. WORK/report.html from every seed's folder (`repogym report`), WORK/results.json with the figures.

Prompts: agentless, a 3-line window at the gold patch's lines (oracle localization: perfect fault
localization). Methods: op_change, op_flip_comparison, op_flip_boolean, op_swap by default;
const_off_by_one (which way?) and op_break_chain (which operand was dropped?) cannot be decided from
the window, so they are not evaluated (they stay in training tasks, where GRPO may meet them).
The three seeds share the data and the split; each seeds its own model, pretraining, SFT and GRPO.

    .venv/bin/python bench/bench_learning.py --work /tmp/learn --seeds 0 1 2
    .venv/bin/python bench/bench_learning.py --work /tmp/learn --data /tmp/learn/data --seeds 0 --sft-steps 300
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import time
from pathlib import Path

from repogym.dataset import load_tasks, save_tasks
from repogym.evaluate.layout import sampled_stage
from repogym.files import write_json
from repogym.pipeline import quickstart_inputs as inputs
from repogym.pipeline.data import DataInput, data_stage
from repogym.pipeline.demos import demos_stage
from repogym.pipeline.grpo import grpo_stage
from repogym.pipeline.model import model_stage
from repogym.pipeline.plan import make_plan
from repogym.pipeline.quickstart import SWAP_POLICY, before_after_rows, evaluate_around_grpo, evaluate_splits
from repogym.pipeline.runner import Hooks, Runner
from repogym.pipeline.sft import sft_data_stage, sft_stage
from repogym.pipeline.split import split_stage
from repogym.train.mutation_demos import LEARNABLE_METHODS, shorten_statements


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=None, help="a data folder of an earlier run to reuse")
    parser.add_argument(
        "--seeds",
        type=int,
        nargs="*",
        default=[0, 1, 2],
        help="seeds to run in this process (none: only the shared stages); seeds may run in "
        "parallel processes on the same --work once the shared stages are done",
    )
    parser.add_argument(
        "--no-report",
        dest="report",
        action="store_false",
        help="skip WORK/report.html and WORK/results.json (a parallel seed process)",
    )
    parser.add_argument("--repos", type=int, default=4)
    parser.add_argument("--synth-per-repo", type=int, default=60, help="synthetic single-line bugs per repo")
    parser.add_argument("--methods", nargs="+", default=list(LEARNABLE_METHODS), help="methods evaluated")
    parser.add_argument("--demo-rows", type=int, default=16000, help="standard-library demonstrations")
    parser.add_argument(
        "--pretrain-minutes",
        type=float,
        default=30.0,
        help="pretraining budget (wall minutes, cached): 30 gave ~1,750 steps and 4x the held-out repairs of 3",
    )
    parser.add_argument(
        "--pretrain-seed",
        type=int,
        default=None,
        help="one pretraining shared by every seed (its seed; cached): the seeds then differ in SFT, GRPO and "
        "sampling only (default: each seed pretrains its own model)",
    )
    parser.add_argument("--sft-steps", type=int, default=1200)
    parser.add_argument("--sft-batch", type=int, default=16)
    parser.add_argument("--sft-lr", type=float, default=2e-3)
    parser.add_argument("--sft-scheduler", default="warmup_stable_decay")
    parser.add_argument(
        "--sft-decay", type=float, default=0.2, help="warmup_stable_decay: share of steps decaying"
    )
    parser.add_argument(
        "--grpo-seeds",
        type=int,
        nargs="*",
        default=[],
        help="more GRPO runs from the first --seeds seed's SFT model, one per seed given (WORK/seed-S-grpo-G/): the "
        "spread GRPO and sampling add on one SFT model (its after-GRPO evals, the sampled SFT eval included, drawn "
        "with seed G)",
    )
    parser.add_argument(
        "--grpo-tasks",
        type=Path,
        default=None,
        help="validated tasks added to GRPO's training tasks in the --grpo-seeds runs "
        "(WORK/seed-S-grpo-G-more/), e.g. synthetic bugs of real projects (`repogym synth` + `repogym "
        "validate`): more RL tasks, neither SFT's nor the held-out splits'; refused when one shares a "
        "repository with the split",
    )
    parser.add_argument("--grpo-steps", type=int, default=40)
    parser.add_argument("--grpo-generations", type=int, default=8)
    parser.add_argument(
        "--grpo-batch", type=int, default=16, help="completions per step (tasks x generations)"
    )
    parser.add_argument("--grpo-lr", type=float, default=5e-5)
    parser.add_argument("--grpo-beta", type=float, default=0.0)
    parser.add_argument(
        "--grpo-temperature",
        type=float,
        default=1.0,
        help="sampling temperature of GRPO's generations (0.6 doubled the successes per group of 1.0)",
    )
    parser.add_argument(
        "--grpo-format-errors",
        default="penalty",
        choices=["penalty", "mask"],
        help="GRPO's grpo.format_errors: penalty (SWE-RL's -1) or mask (no advantage, out of the loss)",
    )
    parser.add_argument(
        "--sampled",
        type=int,
        default=16,
        help="sampled attempts per held-out task for the SFT and GRPO models, at --grpo-temperature: "
        "pass@1..pass@N beside the greedy pass@1 (0: greedy only)",
    )
    parser.add_argument(
        "--answer-format",
        default="lines",
        choices=["lines", "search_replace"],
        help="lines: the suspicious line rewritten (~26 tokens); search_replace: SWE-RL's blocks (~120)",
    )
    parser.add_argument(
        "--prompt-style",
        default="compact",
        choices=["compact", "full"],
        help="compact: the window and the suspicious line, no issue text (~90 prompt tokens); full: ~210",
    )
    parser.add_argument(
        "--max-reply-tokens",
        type=int,
        default=None,
        help="longest answer in eval and GRPO (default: 96 for lines, 224 for search_replace)",
    )
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    work = args.work.absolute()
    started = time.monotonic()
    log = lambda message: print(f"[{time.monotonic() - started:7.0f}s] {message}", flush=True)  # noqa: E731
    log(f"load average at start: {os.getloadavg()}")

    base = dataclasses.replace(
        make_plan(repos=args.repos), synth_per_repo=args.synth_per_repo, pretrain_minutes=args.pretrain_minutes,
        pretrain_seed=args.pretrain_seed,
        sft_steps=args.sft_steps, sft_batch=args.sft_batch, learning_rate_sft=args.sft_lr, sft_warmup=0.03,
        sft_scheduler=args.sft_scheduler, sft_decay=args.sft_decay,
        grpo_steps=args.grpo_steps, grpo_generations=args.grpo_generations, grpo_batch=args.grpo_batch,
        learning_rate_grpo=args.grpo_lr, grpo_beta=args.grpo_beta, grpo_temperature=args.grpo_temperature,
        grpo_format_errors=args.grpo_format_errors,
        sampled_attempts=args.sampled,
        split_ratio=0.6,
        eval_methods=tuple(args.methods), short_statements=True, demo_rows=args.demo_rows,
        answer_format=args.answer_format, prompt_style=args.prompt_style,
        max_reply_tokens=args.max_reply_tokens or (96 if args.answer_format == "lines" else 224),
    )  # fmt: skip
    data = (args.data or work / "data").absolute()
    run = Runner(Hooks(notify=log))  # each stage's result in its folder under DATA: a rerun reads it back
    given = DataInput(data, seed=0, repos=base.repos, synth_per_repo=base.synth_per_repo, workers=args.workers)
    repos = run("data", data_stage, given).repos
    counts = run("split", split_stage, inputs.split_input(data, base, repos[-1]))
    demos = run("demos", demos_stage, inputs.demos_input(data, base, repos, args.workers))
    sft_rows = run("sft_data", sft_data_stage,
                   inputs.sft_data_input(data, base, "bwrap", extra=(data / "train" / "demos.jsonl",)))  # fmt: skip
    log(f"split {counts}; demos {demos.repo_rows} from the train repos + {demos.corpus_rows} from the "
        f"corpus; {sft_rows.rows} SFT rows")  # fmt: skip
    # The non-learned baseline (one operator swap in the suspicious line), once: it has no seed to vary.
    swap = evaluate_splits(run, data, base, "bwrap", "swap", SWAP_POLICY)
    results = {"args": {k: str(v) for k, v in vars(args).items()}, "split": counts.to_dict(),
               "demos": demos.to_dict(), "sft_rows": sft_rows.to_dict(), "seeds": {},
               "swap": {f"{split}/swap": score.to_dict() for (split, _), score in swap.items()}}  # fmt: skip
    for seed in args.seeds:
        seed_result = _seed_run(work, data, dataclasses.replace(base, seed=seed), log)
        write_json(work / f"seed-{seed}" / "result.json", seed_result)
    for grpo_seed in args.grpo_seeds:
        if not args.seeds:
            parser.error("--grpo-seeds: give the seed whose SFT model they start from with --seeds")
        sft_from = dataclasses.replace(base, seed=args.seeds[0])
        write_json(*_grpo_seed_run(work, data, sft_from, grpo_seed, log, args.grpo_tasks))
    if args.report:
        from repogym.evaluate.report import build_report

        folders = sorted(f for f in work.glob("seed-*") if f.is_dir())  # not the seeds' logs beside them
        for folder in folders:
            if (folder / "result.json").is_file():
                results["seeds"][folder.name] = json.loads((folder / "result.json").read_text())
        build_report([*folders, data], work / "report.html", max_attempts=40)
        for line in summary_table(results["seeds"], results["swap"]):
            print(line)
        results["wall_s"] = round(time.monotonic() - started, 1)
        write_json(work / "results.json", results)
        log(f"wrote {work / 'report.html'} and {work / 'results.json'}")


def summary_table(seeds: dict, swap: dict) -> list[str]:
    """Markdown rows: per seed and split, pass@1 [95% interval] of the non-learned baseline (one operator
    swap, the same for every seed) and of the model at each stage, and GRPO minus SFT."""

    def cell(score: dict | None) -> str:
        if not score:
            return "–"
        text = f"{100 * score['pass@1']:.1f}%"
        return text + (
            f" [{100 * score['low']:.1f}, {100 * score['high']:.1f}]" if score.get("low") is not None else ""
        )

    lines = [
        "| seed | split | tasks | one operator swap | model before | after SFT | after SFT+GRPO | GRPO - SFT "
        "| SFT sampled | GRPO sampled |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, result in sorted(seeds.items()):
        for split in ("heldout-functions", "heldout-repo"):
            stages = [result["scores"].get(f"{split}/{stage}") for stage in ("baseline", "sft", "grpo")]
            tasks = next((s["tasks"] for s in stages if s), 0)
            gain = (
                f"{100 * (stages[2]['pass@1'] - stages[1]['pass@1']):+.1f}"
                if stages[1] and stages[2]
                else "–"
            )
            cells = " | ".join(cell(s) for s in [swap.get(f"{split}/swap"), *stages])
            sampled = " | ".join(
                sampled_cell(result["scores"].get(f"{split}/{sampled_stage(stage)}")) for stage in ("sft", "grpo")
            )
            lines.append(f"| {name} | {split} | {tasks} | {cells} | {gain} | {sampled} |")
    return lines


def sampled_cell(score: dict | None) -> str:
    """Sampled pass@1 and pass@n (the largest k reported) of one eval's result, e.g. "12.5% · pass@16 40.0%"."""
    if not score:
        return "–"
    top = max(
        (key for key in score if key.startswith("pass@")), key=lambda key: int(key[5:]), default="pass@1"
    )
    return f"{100 * score['pass@1']:.1f}% · {top} {100 * score[top]:.1f}%"


def _seed_run(work: Path, data: Path, plan, log) -> dict:  # type: ignore[no-untyped-def]
    """Model -> baseline -> SFT on gold + demos -> eval -> GRPO -> eval, each stage's result in WORK/seed-S."""
    out = work / f"seed-{plan.seed}"
    _link_shared(out, data)
    run = Runner(Hooks(notify=log))
    stamp: dict[str, float] = {}
    with _timed(stamp, "pretrain"):
        model = run("model", model_stage, inputs.model_input(out, plan))
    scores = evaluate_splits(run, out, plan, "bwrap", "baseline", f"hf:{model.model_dir}")
    with _timed(stamp, "sft"):
        sft = run("sft", sft_stage, inputs.sft_input(out, plan, model.model_dir))
    scores |= evaluate_splits(run, out, plan, "bwrap", "sft", f"hf:{sft.model_dir}")
    grpo, after = _grpo_with_evals(run, out, plan, sft.model_dir, stamp)
    scores |= after
    for row in before_after_rows(scores):
        log(f"seed {plan.seed}: {' | '.join(row)}")
    return {"model": model.to_dict(), "sft": sft.to_dict(), "grpo": grpo.to_dict(), "scores": _by_key(scores),
            "stage_wall_s": stamp}  # fmt: skip


def _grpo_with_evals(run: Runner, out: Path, plan, sft_dir: str, stamp: dict):  # type: ignore[no-untyped-def]
    """GRPO from `sft_dir` into OUT, then its greedy evals and the evals around it (checkpoints, sampled)."""
    with _timed(stamp, "grpo"):
        grpo = run("grpo", grpo_stage, inputs.grpo_input(out, plan, sft_dir, "bwrap"))
    scores = evaluate_splits(run, out, plan, "bwrap", "grpo", f"hf:{grpo.model_dir}")
    scores |= evaluate_around_grpo(run, out, plan, "bwrap", sft_dir, grpo.model_dir)
    return grpo, scores


def _by_key(scores: dict) -> dict:
    """Scores as results.json keys them: 'SPLIT/STAGE'."""
    return {f"{split}/{stage}": score.to_dict() for (split, stage), score in scores.items()}


def _grpo_seed_run(  # type: ignore[no-untyped-def]
    work: Path, data: Path, sft_from, grpo_seed: int, log, extra: Path | None = None
):
    """GRPO seeded `grpo_seed` from seed `sft_from.seed`'s SFT model, with the evals after GRPO, in
    WORK/seed-S-grpo-G (WORK/seed-S-grpo-G-more with `extra` tasks added to GRPO's); returns (result.json's
    path, its content)."""
    sft_dir = work / f"seed-{sft_from.seed}" / "train" / "sft"
    if not (sft_dir / "config.json").is_file():
        raise SystemExit(f"--grpo-seeds: no finished SFT model in {sft_dir}; run --seeds {sft_from.seed} first")
    out = work / f"seed-{sft_from.seed}-grpo-{grpo_seed}{'-more' if extra else ''}"
    _link_shared(out, data, with_split=extra is None)
    added = _split_with_more_tasks(out / "split", data / "split", extra) if extra else 0
    plan = dataclasses.replace(sft_from, seed=grpo_seed)
    stamp: dict[str, float] = {}
    grpo, scores = _grpo_with_evals(Runner(Hooks(notify=log)), out, plan, str(sft_dir), stamp)
    for row in before_after_rows(scores):
        more = " (more tasks)" if extra else ""
        log(f"seed {sft_from.seed}, grpo seed {grpo_seed}{more}: {' | '.join(row)}")
    result = {"sft_from": str(sft_dir), "grpo": grpo.to_dict(), "scores": _by_key(scores),
              "stage_wall_s": stamp}  # fmt: skip
    if extra:
        result["grpo_tasks"] = {"file": str(extra), "added": added}
    return out / "result.json", result


def _split_with_more_tasks(folder: Path, shared: Path, extra: Path) -> int:
    """FOLDER: the shared split's held-out files (links) and its train tasks plus `extra`'s, statements cut as
    the split stage cuts them; refused when an extra task's repository is one of the split's (a function of it
    could then sit on both sides). Returns how many tasks were added."""
    train = list(load_tasks(shared / "train.jsonl"))
    split_repos = {task.repo for name in ("train", "heldout-functions", "heldout-repo")
                   for task in load_tasks(shared / f"{name}.jsonl")}  # fmt: skip
    more = shorten_statements(load_tasks(extra))
    shared_repos = sorted({task.repo for task in more} & split_repos)
    if shared_repos:
        named = ", ".join(shared_repos)
        raise SystemExit(f"--grpo-tasks {extra}: tasks of {named}, a repository of the split")
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("heldout-functions.jsonl", "heldout-repo.jsonl", "manifest.json"):
        if not (folder / name).exists():
            (folder / name).symlink_to(shared / name)
    save_tasks([*train, *more], folder / "train.jsonl")
    return len(more)


def _link_shared(out: Path, data: Path, with_split: bool = True) -> None:
    """The shared data, seen from a seed's folder (the split too unless `with_split` is False)."""
    (out / "train").mkdir(parents=True, exist_ok=True)
    for name in ("split", "tasks.jsonl", "train/sft.jsonl")[0 if with_split else 1 :]:
        link = out / name
        if not link.exists():
            link.symlink_to(data / name)


@contextlib.contextmanager
def _timed(stamp: dict, name: str):  # type: ignore[no-untyped-def]
    """Wall seconds of a stage run now (a stage read back from its folder takes none)."""
    started = time.monotonic()
    yield
    stamp[name] = round(time.monotonic() - started, 1)


if __name__ == "__main__":
    main()
