"""The tiny model of tests and smoke runs: `repogym model init` with a fixed slice of the standard library as tokenizer corpus.

Kept as a thin alias of `repogym.train.model` (tests, the hf backend and older scripts import
`build_tiny_model` and `load_tokenizer` from here):

    python -m repogym.train.tiny OUT_DIR [--arch llama|qwen2]    # = repogym model init OUT_DIR
"""

from __future__ import annotations

import argparse
from pathlib import Path

from repogym.train.model import ARCHS, init_model
from repogym.train.tokenizer import CHAT_TEMPLATE, SPECIAL_TOKENS, build_tokenizer, load_tokenizer

__all__ = ["CHAT_TEMPLATE", "SPECIAL_TOKENS", "build_tiny_model", "build_tokenizer", "load_tokenizer", "main"]


def build_tiny_model(
    out_dir: str | Path, arch: str = "llama", seed: int = 0, max_positions: int = 8192
) -> Path:
    """A 1.4M-parameter random model and a tokenizer trained on `stable_source()` (about a second)."""
    return init_model(out_dir, size="tiny", arch=arch, seed=seed, max_positions=max_positions)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Build a tiny local model + tokenizer (no download).")
    parser.add_argument("out_dir")
    parser.add_argument("--arch", default="llama", choices=ARCHS)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(build_tiny_model(args.out_dir, arch=args.arch, seed=args.seed))


if __name__ == "__main__":
    main()
