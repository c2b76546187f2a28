"""`repogym train ...`: SFT, GRPO and the SFT -> RL flywheel, each a command of this sub-app.

Each command lives in its own module (train_sft_cmd, train_rl_cmd) and adds itself here, so the
training stages stay apart in the code as they are in the pipeline.
"""

from __future__ import annotations

import typer

from repogym.cli import train_rl_cmd, train_sft_cmd

app = typer.Typer(
    help="Train a model: SFT on demonstrations, GRPO against the sandbox, or both in rounds.\n\n"
    "Example: repogym train sft examples/sft.yaml base_model=/tmp/tiny max_steps=20",
    no_args_is_help=True,
)

train_sft_cmd.register(app)
train_rl_cmd.register(app)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="train")
