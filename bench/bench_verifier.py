"""Verifier benchmark (issue 30): a verifier trained on a policy's graded attempts, judged on held-out functions.

On a finished learning benchmark's seed (`bench/bench_learning.py --work WORK --seeds S ... --sampled N`),
with the after-GRPO policy (`--stage sft` for the SFT one), every step a repogym command:

1. training data: `repogym eval` of the policy on the train split, `--attempts` samples a task at
   temperature 1.0 in the learning benchmark's agentless setting -> WORK/seed-S/verifier/train-rollouts;
2. `repogym train verifier` on those graded attempts, from the SFT model (it knows the answer format),
   split by task -> WORK/seed-S/verifier/model;
3. `repogym verify` on the policy's sampled attempts at held-out functions (the learning benchmark's
   `<stage>-sampled-heldout-functions` eval: no task or function of it is in the verifier's data) and on
   the tasks the verifier held out of the train split (functions it has seen in other tasks);
4. best-of-k on held-out functions: the sampled eval's first k attempts a task, picked by each of
   `verifier:V`, `tests` (the PASS_TO_PASS tests the base commit has), `majority` and `hybrid:V`
   (`repogym eval -n k --select ...` over a copy of that folder: it resumes, so nothing is sampled again);
5. routing (`repogym eval --route small=heuristic:swap,large=<the policy>`, greedy): the non-learned swap
   baseline (no tokens) as the small policy, the model as the large one, by `difficulty` and by the
   verifier, on held-out functions; then the difficulty threshold that did best there (the least spend
   among the best resolve rates) applied unchanged to the held-out repository.

Prints tables and writes WORK/seed-S/verifier/results.json. The issue's targets: best@8 by the verifier
>= pass@1 + 5 points, hybrid >= each alone; routing >= 95% of the large policy's resolve rate at <= 60% of
its cost on a held-out split.

    .venv/bin/python bench/bench_verifier.py --work /tmp/learn --seed 0
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

from repogym.pipeline.plan import make_plan

SELECTIONS = ("verifier", "tests", "majority", "hybrid")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True, help="the learning benchmark's folder")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--stage", default="grpo", choices=["sft", "grpo"], help="the policy judged")
    parser.add_argument("--attempts", type=int, default=8, help="samples a train task (the verifier's data)")
    parser.add_argument("-k", type=int, default=8, help="best-of-k on held-out functions")
    parser.add_argument("--steps", type=int, default=300, help="the verifier's optimizer steps")
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    args = parser.parse_args()

    seed_dir = args.work / f"seed-{args.seed}"
    out = seed_dir / "verifier"
    policy = f"hf:{seed_dir / 'train' / args.stage}"
    sampled = seed_dir / "eval" / f"{args.stage}-sampled-heldout-functions"
    if not (sampled / "summary.json").is_file():
        sys.exit(f"{sampled}: no sampled eval; run bench/bench_learning.py with --sampled first")
    settings = eval_settings(args.seed)
    common = ["--policy", policy, "--temperature", "1.0", *settings]

    rollouts = out / "train-rollouts"
    repogym("eval", "run", str(seed_dir / "split" / "train.jsonl"), *common, "-n", str(args.attempts),
            "--stage", f"{args.stage}-sampled", "--split", "train", "--out", str(rollouts))  # fmt: skip
    model = out / "model"
    if not (model / "repogym_verifier.json").is_file():
        shutil.rmtree(model, ignore_errors=True)
        repogym("train", "verifier", str(rollouts), "--base-model", str(seed_dir / "train" / "sft"),
                "--out", str(model), "--learning-rate", str(args.learning_rate), "--max-steps", str(args.steps),
                "--batch-size", "8", "--max-length", "1024", "--device", "cpu")  # fmt: skip
    verified = {}
    for name, folder in (("heldout-functions", sampled), ("train-heldout-tasks", rollouts)):
        repogym("verify", str(folder), "--verifier", str(model), "--out", str(out / f"verify-{name}"))
        verified[name] = json.loads((out / f"verify-{name}" / "summary.json").read_text())

    best = {}
    for kind in SELECTIONS:
        folder = out / f"best{args.k}-{kind}"
        if not folder.exists():
            shutil.copytree(sampled, folder)
        spec = f"{kind}:{model}" if kind in ("verifier", "hybrid") else kind
        repogym("eval", "run", str(seed_dir / "split" / "heldout-functions.jsonl"), *common, "-n", str(args.k),
                "--stage", f"{args.stage}-sampled", "--split", "heldout-functions", "--select", spec,
                "--out", str(folder))  # fmt: skip
        best[kind] = json.loads((folder / "summary.json").read_text())

    routing = route(seed_dir, policy, model, settings)
    results = {
        "routing": routing,
        "policy": policy, "k": args.k, "verifier_steps": args.steps,
        "verify": {name: {key: summary[key] for key in ("auc", "ece", "intervals") if key in summary}
                   for name, summary in verified.items()},
        "best_of_k": {kind: {key: summary.get(key) for key in ("pass@1", f"pass@{args.k}", f"best@{args.k}")}
                      | {"best_interval": summary["intervals"].get(f"best@{args.k}")}
                      for kind, summary in best.items()},
    }  # fmt: skip
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    print_table(results, args.k)
    for name, curve in routing.items():
        print(f"routing {name}: " + "; ".join(
            f"{row['label']}: {row['resolve_rate']:.1%} at {row['token_share']:.0%} of the large policy's tokens"
            for row in curve))  # fmt: skip


def route(seed_dir: Path, policy: str, model: Path, settings: list[str]) -> dict[str, list[dict]]:
    """Step 5's routing runs, greedy (eval's default temperature); per run the small and large policies alone and
    the run's threshold."""
    pair = f"small=heuristic:swap,large={policy}"

    def routed(split: str, by: str, threshold: float) -> dict:
        folder = seed_dir / "verifier" / f"route-{by.split(':')[0]}-{split}"
        repogym("eval", "run", str(seed_dir / "split" / f"{split}.jsonl"), "--route", pair, "--by", by,
                "--threshold", str(threshold), *settings, "--split", split, "--out", str(folder))  # fmt: skip
        return json.loads((folder / "summary.json").read_text())["routing"]

    by_difficulty = routed("heldout-functions", "difficulty", 0.5)
    by_verifier = routed("heldout-functions", f"verifier:{model}", 0.5)
    best = best_threshold(by_difficulty)
    return {
        "difficulty, heldout-functions (best threshold)": routing_rows(by_difficulty, best),
        "verifier, heldout-functions (best threshold)": routing_rows(
            by_verifier, best_threshold(by_verifier)
        ),
        f"difficulty at {best} (chosen on heldout-functions), heldout-repo": routing_rows(
            routed("heldout-repo", "difficulty", best), best
        ),
    }


def best_threshold(routing: dict) -> float:
    """The curve's threshold with the best resolve rate, the least spend among equals (chosen after the fact)."""
    return min(routing["curve"], key=lambda row: (-row["resolve_rate"], row["tokens"]))["threshold"]


def routing_rows(routing: dict, threshold: float) -> list[dict]:
    """Small alone, large alone and the curve's row at `threshold`: resolve rate and share of the large one's tokens."""
    large_tokens = routing["large"]["tokens"] or 1
    at = next(row for row in routing["curve"] if row["threshold"] == threshold)
    rows = [
        ("small alone", routing["small"]),
        ("large alone", routing["large"]),
        (f"routed at {threshold}", at),
    ]
    return [
        {"label": label, "resolve_rate": row["resolve_rate"], "token_share": row["tokens"] / large_tokens,
         "share_to_large": row.get("share_to_large")}
        for label, row in rows
    ]  # fmt: skip


def eval_settings(seed: int) -> list[str]:
    """The learning benchmark's eval settings (its plan's agentless options) as CLI options, without the policy
    and temperature."""
    plan = make_plan()
    options = [
        "--reply-tokens",
        str(plan.max_reply_tokens),
        "--seed",
        str(seed),
        "--mode",
        "agentless",
        "-j",
        "2",
    ]
    for key, value in plan.env_options.items():
        options += ["--env-option", f"{key}={value}"]
    return options


def repogym(*argv: str) -> None:
    command = [sys.executable, "-m", "repogym", *argv]
    print("$ repogym " + " ".join(argv), file=sys.stderr, flush=True)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def print_table(results: dict, k: int) -> None:
    for name, figures in results["verify"].items():
        auc = figures["intervals"]["auc"]
        print(
            f"verifier on {name}: AUC {figures['auc']:.3f} [{auc[0]:.3f}, {auc[1]:.3f}], ECE {figures['ece']:.3f}"
        )
    print(f"| selection | pass@1 | best@{k} [95%] | pass@{k} |")
    print("| --- | ---: | ---: | ---: |")
    for kind, row in results["best_of_k"].items():
        low, high = row["best_interval"]
        print(
            f"| {kind} | {row['pass@1']:.1%} | {row[f'best@{k}']:.1%} [{low:.1%}, {high:.1%}] | {row[f'pass@{k}']:.1%} |"
        )


if __name__ == "__main__":
    main()
