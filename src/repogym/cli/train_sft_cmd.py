"""`repogym train sft CONFIG [key=value ...]`: supervised fine-tuning with TRL's SFTTrainer."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from repogym.cli.common import add_command, console, print_json, subgroup
from repogym.cli.options import Json
from repogym.train.sft import run_sft
from repogym.train.sft_config import load_sft_config


def register(app: typer.Typer) -> None:
    add_command(subgroup(app, "train"), "sft", sft_command)


def sft_command(
    config: Annotated[Path, typer.Argument(help="YAML config (see examples/sft.yaml).")],
    overrides: Annotated[list[str] | None, typer.Argument(help="key=value overrides, e.g. max_steps=20 lora.r=8.", show_default=False)] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue from the newest complete checkpoint in output_dir (same step, optimizer, scheduler).")] = False,
    json_out: Json = False,
) -> None:  # fmt: skip
    """Fine-tune a local causal LM on chat rows (assistant-only loss, optional LoRA and packing).

    The result in output_dir loads with `--policy hf:OUTPUT_DIR`, `repogym serve OUTPUT_DIR` and
    `train rl base_model=OUTPUT_DIR`; metrics.jsonl, TensorBoard logs (runs/) and checkpoint-N/
    folders are beside it. Runs under `accelerate launch -m repogym train sft ...` unchanged
    (configs for DDP, DeepSpeed ZeRO-2/3, FSDP2 and two CPU processes in examples/accelerate/).

    Example: repogym train sft examples/sft.yaml base_model=/tmp/tiny data=sft.jsonl output_dir=/tmp/sft max_steps=20
    """
    run_config = load_sft_config(config, overrides or [])
    summary = run_sft(run_config, resume=resume)
    if int(os.environ.get("RANK", "0")) != 0:
        return  # under accelerate launch, the main process reports
    if json_out:
        print_json(summary.to_dict())
        return
    table = Table(title="train sft", show_header=False)
    rows = [
        ("output (loads with hf:PATH)", summary.output_dir),
        (
            "steps",
            str(summary.global_step)
            + (f" (resumed from {summary.resumed_from})" if summary.resumed_from else ""),
        ),
        ("rows trained on", str(summary.rows)),
        *((f"rows dropped: {reason}", str(count)) for reason, count in summary.dropped.items()),
        ("rows truncated to max_length", str(summary.truncated_rows)),
        ("last logged loss", "-" if summary.final_loss is None else f"{summary.final_loss:.4f}"),
        ("train time", f"{summary.train_runtime_s:.1f} s"),
    ]
    for key, value in rows:
        table.add_row(key, value)
    console.print(table)
