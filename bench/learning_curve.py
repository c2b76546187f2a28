"""Held-out repair along SFT: every checkpoint of a learning-bench seed, judged offline on both held-out splits.

`bench/bench_learning.py` grades the held-out splits in the sandbox after each stage; this script
draws the curve between those points. For each `train/sft/checkpoint-*` (and the final model) of
`WORK/seed-S`, the greedy answer to each held-out task's prompt (the env's own window prompt, built
by `repogym.train.gold.agentless_gold_rows` from the split file) is compared to the gold answer:
with `answer_format="lines"` the answer fixes the file exactly when its lines are the gold lines
(exact repair, a lower bound on "resolved": another fix may also pass the tests). No sandbox runs.

    .venv/bin/python bench/learning_curve.py /tmp/learn/seed-0 --out /tmp/learn/seed-0/heldout-curve.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from probe_tiny_repair import answers

from repogym.env.lines_answer import parse_lines
from repogym.search_replace import FormatError
from repogym.train.gold import agentless_gold_rows
from repogym.train.sft_data import SFTDataOptions

SPLITS = ("heldout-functions", "heldout-repo")
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def held_out_rows(seed_dir: Path, answer_format: str, prompt_style: str = "compact") -> dict[str, list[dict]]:
    """Per held-out split, the env's prompt and gold answer of each task whose gold fits the format."""
    options = SFTDataOptions(context="window", window_lines=1, localize="oracle", answer_format=answer_format,
                             prompt_style=prompt_style)  # type: ignore[arg-type]  # fmt: skip
    rows = {}
    for split in SPLITS:
        found = agentless_gold_rows(seed_dir / "split" / f"{split}.jsonl", options)
        rows[split] = [row for row, reason in found if reason is None]
    return rows


def train_rows(seed_dir: Path, count: int) -> list[dict]:
    """Every n-th of the seed's SFT rows, `count` in all: the same measure on rows it trained on."""
    rows = [json.loads(line) for line in (seed_dir / "train" / "sft.jsonl").read_text().splitlines()]
    return rows[:: max(1, len(rows) // count)][:count] if count else []


def verdict(answer: str, gold: str, prompt: str) -> str:
    """'repaired'; 'copied' (a wrong line whose every name is in the prompt); 'invented' (it names
    something the prompt does not: the model has not learned to copy yet); or 'format' (not one line
    per suspicious line)."""
    want = parse_lines(gold, gold.count("\n") - 1)
    try:
        got = parse_lines(answer, len(want))
    except FormatError:
        return "format"
    if got == want:
        return "repaired"
    names = {name for line in got for name in NAME.findall(line)}
    return "copied" if names <= set(NAME.findall(prompt)) else "invented"


def checkpoints(seed_dir: Path) -> list[tuple[int, Path]]:
    sft = seed_dir / "train" / "sft"
    found = [
        (int(p.name.split("-")[1]), p) for p in sft.glob("checkpoint-*") if (p / "config.json").is_file()
    ]
    state = sft / "trainer_state.json"
    if (sft / "config.json").is_file() and state.is_file():
        found.append((json.loads(state.read_text()).get("global_step", 0), sft))
    return sorted(set(found))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seed_dir", type=Path)
    parser.add_argument("--out", type=Path, default=None, help="JSONL, one row per checkpoint and split")
    parser.add_argument("--answer-format", default="lines", choices=["lines"])
    parser.add_argument(
        "--prompt-style",
        default="compact",
        choices=["compact", "full"],
        help="the env's prompt_style the seed was trained with (bench_learning's --prompt-style)",
    )
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--train-rows", type=int, default=60, help="also judge this many trained-on rows")
    args = parser.parse_args()
    rows = held_out_rows(args.seed_dir, args.answer_format, args.prompt_style)
    rows["train-sample"] = train_rows(args.seed_dir, args.train_rows)
    out = args.out or args.seed_dir / "heldout-curve.jsonl"
    done = (
        {(r["step"], r["split"]) for r in map(json.loads, out.read_text().splitlines())}
        if out.is_file()
        else set()
    )
    for step, model in checkpoints(args.seed_dir):
        for split, split_rows in rows.items():
            if (step, split) in done or not split_rows:
                continue
            texts = answers(model, split_rows, 1, max_new_tokens=args.max_new_tokens)
            verdicts = [
                verdict(t[0], r["messages"][1]["content"], r["messages"][0]["content"])
                for t, r in zip(texts, split_rows, strict=True)
            ]
            record = {"step": step, "split": split, "tasks": len(split_rows),
                      "repaired": verdicts.count("repaired"), "format_errors": verdicts.count("format"),
                      "copied": verdicts.count("copied"), "invented": verdicts.count("invented"),
                      "model": str(model), "example": texts[0][0][:200]}  # fmt: skip
            with out.open("a") as handle:
                handle.write(json.dumps(record) + "\n")
            print(f"step {step:5d} {split:18s} repaired {record['repaired']:3d}/{len(split_rows)}"
                  f"  copied {record['copied']:3d}  invented {record['invented']:3d}  format errors {record['format_errors']}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
