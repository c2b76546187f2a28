"""Learnability probe: can the tiny model learn compact-window agentless repair, with and without pretraining?

Stages (each through repogym's library, on 2 CPU cores with a wall-clock budget per stage):

1. `model init --tiny` (tokenizer trained on the standard library), then `model pretrain` on the
   standard library and site-packages for --pretrain-minutes (cached by its inputs).
2. Tasks: operator/comparison flips (+ -, * /, == !=, < >=, > <=, and or) of single lines, made
   from the Python files of the sample repositories (`repogym samples generate`) and of a sample of
   the standard library; each becomes a window-context agentless row exactly as `data sft
   --context window --window-lines W` writes it (oracle localization: perfect fault localization).
   Held out: every flip in two sample repositories never trained on.
3. SFT for --sft-minutes from the pretrained model, and the same from the random model.
4. Exact repair on the held-out tasks: greedy answer, applied SWE-RL's way, gives the original file.

    .venv/bin/python bench/probe_tiny_repair.py --samples /tmp/samples [--pretrain-minutes 4 --sft-minutes 4]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sysconfig
import time
from pathlib import Path

FLIPS = [(" + ", " - "), (" - ", " + "), (" * ", " / "), (" == ", " != "), (" != ", " == "), (" < ", " >= "),
         (" > ", " <= "), (" <= ", " > "), (" >= ", " < "), (" and ", " or "), (" or ", " and ")]  # fmt: skip


def flips_of(path: str, text: str, window_lines: int) -> list[dict]:
    """One row per flippable line: the buggy file in the prompt, the original line as the fix."""
    from repogym.env.context import make_windows, window_answer, window_prompt
    from repogym.patches import unified_diff

    rows, lines = [], text.splitlines(keepends=True)
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if (
            not stripped
            or stripped.startswith(("#", "def ", "class ", "import", "from", '"', "'"))
            or len(line) > 90
        ):
            continue
        for old, new in FLIPS:
            if line.count(old) == 1:
                buggy = "".join([*lines[: number - 1], line.replace(old, new), *lines[number:]])
                spots = {path: (number,)}
                windows = make_windows(spots, {path: buggy}, window_lines)
                answer = window_answer(unified_diff({path: buggy}, {path: text}), {path: buggy}, windows)
                function = next(
                    (
                        m.group(1)
                        for m in map(re.compile(r"\s*def (\w+)").match, reversed(lines[:number]))
                        if m
                    ),
                    "",
                )
                issue = (
                    f"`{function}` gives wrong results." if function else "A computation gives wrong results."
                )
                if answer is not None:
                    prompt = window_prompt(issue, windows, spots, {path: buggy})
                    rows.append({"messages": [{"role": "user", "content": prompt},
                                              {"role": "assistant", "content": answer}],
                                 "path": path, "buggy": buggy, "original": text})  # fmt: skip
                break
    return rows


def sample_rows(samples: Path, held_out: list[str], window_lines: int, stdlib_files: int, seed: int):
    train, test = [], []
    for repo in sorted(p for p in samples.iterdir() if p.is_dir()):
        for file in sorted(repo.rglob("*.py")):
            if ".git" in file.parts:
                continue
            rows = flips_of(str(file.relative_to(repo)), file.read_text(), window_lines)
            (test if repo.name in held_out else train).extend(rows)
    stdlib = sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py"))
    random.Random(seed).shuffle(stdlib)
    for file in stdlib[:stdlib_files]:
        try:
            train.extend(flips_of(file.name, file.read_text(encoding="utf-8"), window_lines))
        except UnicodeDecodeError:
            continue
    return train, test


def sft(model_dir: Path, rows_file: Path, out: Path, minutes: float, steps: int) -> dict:
    from repogym.train.budget import TimeBudgetCallback
    from repogym.train.sft import build_trainer, preflight, quiet_library_bars, save_final_model
    from repogym.train.sft_config import load_sft_config

    quiet_library_bars()
    config = load_sft_config(None, [f"base_model={model_dir}", f"data={rows_file}", f"output_dir={out}",
                                    f"max_steps={steps}", "batch_size=16", "learning_rate=2e-3",
                                    "warmup_steps=20", "lr_scheduler_type=constant_with_warmup", "max_length=384", "logging_steps=20", "save_steps=100000"])  # fmt: skip
    trainer = build_trainer(config, preflight(config), progress=True)
    trainer.add_callback(TimeBudgetCallback(minutes * 60, tokens_per_step=16 * 250))
    started = time.monotonic()
    trainer.train()
    save_final_model(trainer, config, out)
    losses = [r["loss"] for r in trainer.state.log_history if "loss" in r]
    return {"steps": trainer.state.global_step, "train_s": round(time.monotonic() - started), "loss_first": losses[0],
            "loss_last": losses[-1]}  # fmt: skip


def exact_repair(model_dir: Path, rows: list[dict], batch: int = 16) -> float:
    import torch
    from transformers import AutoModelForCausalLM

    from repogym.search_replace import FormatError, apply_answer
    from repogym.train.tokenizer import load_tokenizer

    tokenizer = load_tokenizer(model_dir)
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    repaired = 0
    for start in range(0, len(rows), batch):
        chunk = rows[start : start + batch]
        prompts = [tokenizer.apply_chat_template([r["messages"][0]], add_generation_prompt=True, tokenize=False)
                   for r in chunk]  # fmt: skip
        encoded = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.inference_mode():
            output = model.generate(**encoded, max_new_tokens=110, do_sample=False,
                                    eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
                                    pad_token_id=tokenizer.pad_token_id)  # fmt: skip
        for row, ids in zip(chunk, output[:, encoded["input_ids"].shape[1] :], strict=True):
            text = tokenizer.decode(ids, skip_special_tokens=True)
            try:
                new = apply_answer(text, {row["path"]: row["buggy"]}).new_contents.get(row["path"])
            except FormatError:
                continue
            repaired += new == row["original"]
    return repaired / max(len(rows), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=Path, required=True, help="folder of `repogym samples generate`")
    parser.add_argument("--work", type=Path, default=Path("/tmp/probe-tiny-repair"))
    parser.add_argument("--held-out", default="textkit,tallyho")
    parser.add_argument("--pretrain-minutes", type=float, default=4)
    parser.add_argument("--sft-minutes", type=float, default=4)
    parser.add_argument("--window-lines", type=int, default=1)
    parser.add_argument("--stdlib-files", type=int, default=120)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)  # on shared cores one thread beat two by 8x (see docs/benchmarks.md)
    from repogym.train.corpus import load_corpus
    from repogym.train.model import init_model
    from repogym.train.pretrain import PretrainConfig, pretrain

    args.work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("REPOGYM_CACHE", str(args.work / "cache"))
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    train, test = sample_rows(
        args.samples, args.held_out.split(","), args.window_lines, args.stdlib_files, args.seed
    )
    rows_file = args.work / "train.jsonl"
    rows_file.write_text("".join(json.dumps({"messages": r["messages"]}) + "\n" for r in train))
    print(f"rows: {len(train)} train, {len(test)} held out ({args.held_out})")
    random_model = args.work / "tiny-random"
    if not (random_model / "config.json").exists():
        corpus = load_corpus(None, 2_000_000)
        init_model(random_model, "tiny", tokenizer_texts=corpus.texts, tokenizer_corpus=corpus.describe())
    pretrained = args.work / "tiny-pretrained"
    done = pretrain(PretrainConfig(str(random_model), args.pretrain_minutes, out_dir=str(pretrained),
                                   max_chars=8_000_000), progress=True)  # fmt: skip
    print(
        f"pretrain: {done.steps} steps, {done.tokens:,} tokens, {done.train_s:.0f} s, loss {done.final_loss:.3f}"
    )
    results = {"pretrain": done.to_dict(), "train_rows": len(train), "held_out_rows": len(test)}
    for name, start in (("pretrained -> sft", pretrained), ("random -> sft", random_model)):
        out = args.work / name.replace(" ", "").replace(">", "")
        fit = sft(start, rows_file, out, args.sft_minutes, steps=int(args.sft_minutes * 60 / 0.5))
        rate = exact_repair(out, test)
        results[name] = {**fit, "exact_repair_held_out": rate}
        print(f"{name}: {fit} -> exact repair {rate:.1%} of {len(test)}", flush=True)
    (args.work / "results.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
