"""Can a model copy? Its loss on a random token sequence seen a second time (an induction-head probe).

A model with induction heads predicts the second copy of a random sequence from the first: its
loss there falls far below the first copy's (which no model can predict: ln(vocab) nats). A model
without them scores both halves alike. The learning bench's tiny model must copy the suspicious line
into its answer; this measures whether pretraining gave it the mechanism before SFT asks for it.

    .venv/bin/python bench/probe_induction.py MODEL_DIR [MODEL_DIR ...] --length 48 --rows 64
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path


def source_spans(tokenizer, length: int, rows: int, seed: int) -> list[list[int]]:  # type: ignore[no-untyped-def]
    """`rows` spans of `length` tokens of the standard library's own source, drawn with `seed`."""
    import random
    import sysconfig

    files = sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py"))
    chooser = random.Random(seed)
    spans: list[list[int]] = []
    while len(spans) < rows:
        ids = tokenizer(chooser.choice(files).read_text(errors="replace"))["input_ids"]
        if len(ids) > length:
            start = chooser.randrange(len(ids) - length)
            spans.append(ids[start : start + length])
    return spans


def induction_losses(model_dir: Path, length: int, rows: int, seed: int = 0) -> dict[str, float]:
    """Mean next-token loss (nats) on the first and second copy of `rows` sequences of `length` tokens:
    random tokens, and spans of real source (which the first copy already predicts in part)."""
    import torch
    from transformers import AutoModelForCausalLM

    from repogym.agent.backends.tokenizer import load_tokenizer

    tokenizer = load_tokenizer(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    special = set(tokenizer.all_special_ids)
    ordinary = torch.tensor([i for i in range(len(tokenizer)) if i not in special])
    generator = torch.Generator().manual_seed(seed)
    random_half = ordinary[torch.randint(len(ordinary), (rows, length), generator=generator)]
    source_half = torch.tensor(source_spans(tokenizer, length, rows, seed))
    found = {"chance": round(math.log(len(ordinary)), 3)}
    for name, half in (("random", random_half), ("source", source_half)):
        first, second = _copy_losses(model, torch.cat([half, half], dim=1), length)
        found[f"{name}_first_copy"], found[f"{name}_second_copy"] = round(first, 3), round(second, 3)
    return found


def _copy_losses(model, ids, length: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    import torch

    rows = ids.shape[0]
    with torch.no_grad():
        logits = model(input_ids=ids).logits[:, :-1]
    losses = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1), reduction="none"
    ).reshape(rows, -1)
    first = losses[:, : length - 1].mean().item()  # predicting tokens 2..L of the first copy
    second = losses[:, length:].mean().item()  # predicting tokens 2..L of the second copy
    return first, second


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", type=Path, nargs="+")
    parser.add_argument("--length", type=int, default=48)
    parser.add_argument("--rows", type=int, default=64)
    args = parser.parse_args()
    for model_dir in args.models:
        print(json.dumps({"model": str(model_dir), **induction_losses(model_dir, args.length, args.rows)}))


if __name__ == "__main__":
    main()
