"""Learnability probe: how fast does the tiny model learn window repairs of synth's single-line bugs?

Stages (each through repogym's library, on 2 CPU cores):

1. `model init --tiny` (tokenizer trained on local Python source), then `model pretrain` on the
   standard library and site-packages for --pretrain-minutes (cached by its inputs).
2. Train rows: `repogym.train.mutation_demos` (synth's libcst methods injected into the standard
   library and site-packages, repogym left out), in the window format `data sft --context window`
   writes (oracle localization: perfect fault localization). Held out: the same methods injected
   into every function of the sample repositories (`repogym samples generate`), never trained on.
3. SFT for --sft-steps from the pretrained model (and, with --from-random, from random weights).
4. Exact repair on the held-out rows, per method: the greedy answer, applied SWE-RL's way, gives
   the original file; and pass@k with k samples at temperature 1 on --sample-rows of them (what
   GRPO needs: a share of sampled answers that resolve where greedy does not).

    .venv/bin/python bench/probe_tiny_repair.py --samples /tmp/samples --demos demos.jsonl --sft-steps 600
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from collections import Counter
from pathlib import Path


def sample_rows(samples: Path, options) -> list[dict]:  # type: ignore[no-untyped-def]
    """Held-out rows: the same methods injected into every function of the sample repositories' sources."""
    from repogym.train.mutation_demos import DemoReport, file_mutations

    rows, report = [], DemoReport()
    for repo in sorted(p for p in samples.iterdir() if p.is_dir()):
        for file in sorted((repo / "src").rglob("*.py")):
            text = file.read_text()
            for row, buggy in file_mutations(str(file.relative_to(repo)), text, options, report):
                rows.append({**row, "path": row["metadata"]["file"], "original": text, "buggy": buggy})
    return rows


def sft(model_dir: Path, rows_file: Path, out: Path, steps: int, batch: int, lr: float) -> dict:
    from repogym.train.sft import build_trainer, preflight, quiet_library_bars, save_final_model
    from repogym.train.sft_config import load_sft_config

    quiet_library_bars()
    config = load_sft_config(None, [f"base_model={model_dir}", f"data={rows_file}", f"output_dir={out}",
                                    f"max_steps={steps}", f"batch_size={batch}", f"learning_rate={lr}",
                                    "warmup_steps=20", "lr_scheduler_type=cosine", "max_length=384",
                                    "logging_steps=20", "save_steps=100000"])  # fmt: skip
    trainer = build_trainer(config, preflight(config), progress=False)
    started = time.monotonic()
    trainer.train()
    save_final_model(trainer, config, out)
    losses = [r["loss"] for r in trainer.state.log_history if "loss" in r]
    return {"steps": trainer.state.global_step, "train_s": round(time.monotonic() - started),
            "s_per_step": round((time.monotonic() - started) / max(1, trainer.state.global_step), 3),
            "loss_first": losses[0], "loss_last": losses[-1]}  # fmt: skip


def answers(model_dir: Path, rows: list[dict], samples: int, batch: int = 16,
            max_new_tokens: int = 224) -> list[list[str]]:  # fmt: skip
    """`samples` answers per row: greedy when 1, else sampled at temperature 1."""
    import torch
    from transformers import AutoModelForCausalLM

    from repogym.agent.backends.tokenizer import load_tokenizer

    tokenizer = load_tokenizer(model_dir)
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    torch.manual_seed(0)
    found = []
    for start in range(0, len(rows), batch):
        chunk = rows[start : start + batch]
        prompts = [tokenizer.apply_chat_template([r["messages"][0]], add_generation_prompt=True, tokenize=False)
                   for r in chunk]  # fmt: skip
        encoded = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.inference_mode():
            output = model.generate(**encoded, max_new_tokens=max_new_tokens, do_sample=samples > 1, temperature=1.0,
                                    num_return_sequences=samples, top_k=0,
                                    eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
                                    pad_token_id=tokenizer.pad_token_id)  # fmt: skip
        texts = tokenizer.batch_decode(output[:, encoded["input_ids"].shape[1] :], skip_special_tokens=True)
        found += [texts[i * samples : (i + 1) * samples] for i in range(len(chunk))]
    return found


def repaired(row: dict, text: str) -> str:
    """'repaired', 'wrong' or 'format' (the answer does not apply)."""
    from repogym.search_replace import FormatError, apply_answer

    try:
        new = apply_answer(text, {row["path"]: row["buggy"]}).new_contents.get(row["path"])
    except FormatError:
        return "format"
    return "repaired" if new == row["original"] else "wrong"


def score(model_dir: Path, rows: list[dict], sample_rows: int, k: int) -> dict:
    greedy = [repaired(row, texts[0]) for row, texts in zip(rows, answers(model_dir, rows, 1), strict=True)]
    per_method: dict[str, Counter] = {}
    for row, verdict in zip(rows, greedy, strict=True):
        per_method.setdefault(row["metadata"]["method"], Counter())[verdict] += 1
    subset = rows[:sample_rows]
    sampled = [[repaired(row, t) == "repaired" for t in texts]
               for row, texts in zip(subset, answers(model_dir, subset, k), strict=True)]  # fmt: skip
    return {
        "greedy_repaired": sum(v == "repaired" for v in greedy) / len(rows),
        "greedy_format_error": sum(v == "format" for v in greedy) / len(rows),
        "per_method": {m: round(c["repaired"] / sum(c.values()), 3) for m, c in sorted(per_method.items())},
        "subset_greedy": sum(v == "repaired" for v in greedy[:sample_rows]) / max(1, len(subset)),
        f"subset_pass@{k}": sum(any(s) for s in sampled) / max(1, len(subset)),
        "subset_sample_mean": sum(sum(s) / len(s) for s in sampled) / max(1, len(subset)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=Path, required=True, help="folder of `repogym samples generate`")
    parser.add_argument("--demos", type=Path, required=True, help="`mutation_demos.build_demos` rows (JSONL)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/probe-tiny-repair"))
    parser.add_argument("--rows", type=int, default=0, help="train rows used (0: all)")
    parser.add_argument("--pretrain-minutes", type=float, default=2)
    parser.add_argument("--sft-steps", type=int, default=600)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--held-out-rows", type=int, default=300)
    parser.add_argument("--sample-rows", type=int, default=60)
    parser.add_argument("-k", type=int, default=8)
    parser.add_argument("--from-random", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    from repogym.train.corpus import load_corpus
    from repogym.train.model import init_model
    from repogym.train.mutation_demos import DemoOptions
    from repogym.train.pretrain import PretrainConfig, pretrain

    args.work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("REPOGYM_CACHE", str(args.work / "cache"))
    print(f"load average at start: {os.getloadavg()[0]:.1f}", flush=True)
    test = sample_rows(args.samples, DemoOptions(per_function=2))
    random.Random(args.seed).shuffle(test)
    test = test[: args.held_out_rows]
    rows = [json.loads(line) for line in args.demos.read_text().splitlines()]
    rows = rows[: args.rows] if args.rows else rows
    rows_file = args.work / "train.jsonl"
    rows_file.write_text("".join(json.dumps({"messages": r["messages"]}) + "\n" for r in rows))
    print(f"rows: {len(rows)} train, {len(test)} held out", flush=True)
    random_model = args.work / "tiny-random"
    if not (random_model / "config.json").exists():
        corpus = load_corpus(None, 2_000_000, args.seed)
        init_model(random_model, "tiny", seed=args.seed, tokenizer_texts=corpus.texts,
                   tokenizer_corpus=corpus.describe(), max_positions=2048)  # fmt: skip
    pretrained = args.work / "tiny-pretrained"
    done = pretrain(PretrainConfig(str(random_model), args.pretrain_minutes, out_dir=str(pretrained),
                                   seed=args.seed, max_chars=6_000_000), progress=False)  # fmt: skip
    print(f"pretrain: {done.steps} steps, {done.train_s:.0f} s, loss {done.final_loss}", flush=True)
    results = {"args": {k: str(v) for k, v in vars(args).items()}, "pretrain": done.to_dict()}
    starts = [("pretrained", pretrained)] + ([("random", random_model)] if args.from_random else [])
    for name, start in starts:
        out = args.work / f"sft-{name}"
        fit = sft(start, rows_file, out, args.sft_steps, args.batch, args.lr)
        print(f"{name} -> sft: {fit}", flush=True)
        results[name] = {**fit, **score(out, test, args.sample_rows, args.k)}
        print(f"{name}: {results[name]}", flush=True)
        (args.work / "results.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
