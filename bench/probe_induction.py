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


def induction_losses(model_dir: Path, length: int, rows: int, seed: int = 0) -> dict[str, float]:
    """Mean next-token loss (nats) on the first and second copy of `rows` random sequences of `length`."""
    import torch
    from transformers import AutoModelForCausalLM

    from repogym.train.tokenizer import load_tokenizer

    tokenizer = load_tokenizer(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    special = set(tokenizer.all_special_ids)
    ordinary = torch.tensor([i for i in range(len(tokenizer)) if i not in special])
    generator = torch.Generator().manual_seed(seed)
    half = ordinary[torch.randint(len(ordinary), (rows, length), generator=generator)]
    ids = torch.cat([half, half], dim=1)
    with torch.no_grad():
        logits = model(input_ids=ids).logits[:, :-1]
    losses = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1), reduction="none"
    ).reshape(rows, -1)
    first = losses[:, : length - 1].mean().item()  # predicting tokens 2..L of the first copy
    second = losses[:, length:].mean().item()  # predicting tokens 2..L of the second copy
    return {
        "first_copy": round(first, 3),
        "second_copy": round(second, 3),
        "chance": round(math.log(len(ordinary)), 3),
    }


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
