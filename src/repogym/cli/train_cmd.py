"""`repogym train ...`: the group of the training commands (`train sft`, `train rl`, `train flywheel`).

Each command lives in its own module and adds itself to this group, so the training stages stay apart in
the code as they are in the pipeline, and `repogym train sft` imports nothing of GRPO's.
"""

from __future__ import annotations

import typer

from repogym.cli.common import add_group

HELP = (
    "Train a model: SFT on demonstrations, GRPO against the sandbox, or both in rounds.\n\n"
    "Example: repogym train sft examples/sft.yaml base_model=/tmp/tiny max_steps=20"
)


def register(app: typer.Typer) -> None:
    add_group(app, "train", HELP)
