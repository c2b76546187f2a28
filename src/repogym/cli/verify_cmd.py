"""`repogym verify ROLLOUT_DIR --verifier V --out DIR`: a verifier's AUC and ECE on held-out attempts."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from repogym.cli.common import add_command, console, print_json
from repogym.cli.options import BootstrapSeed, Json, Resamples
from repogym.cli.progress import LiveBars
from repogym.evaluate.bootstrap import BootstrapSettings
from repogym.verifier.metrics import DEFAULT_BINS
from repogym.verifier.verify import SUMMARY_FILE, VerifyConfig, run_verify


def register(app: typer.Typer) -> None:
    add_command(app, "verify", verify_command)


def verify_command(
    rollout_dirs: Annotated[list[Path], typer.Argument(metavar="ROLLOUT_DIR", help="Folders of `repogym rollout` or `repogym eval` whose graded attempts are scored.", show_default=False)],
    verifier: Annotated[Path, typer.Option("--verifier", help="The verifier folder (`repogym train verifier --out`).", show_default=False)],
    out: Annotated[Path, typer.Option("--out", "-o", help="Where summary.json and scores.jsonl go.", show_default=False)],
    bins: Annotated[int, typer.Option("--bins", help="Equal-width bins of the ECE and the reliability table.")] = DEFAULT_BINS,
    bootstrap: Resamples = 1000,
    bootstrap_seed: BootstrapSeed = 0,
    json_out: Json = False,
) -> None:  # fmt: skip
    """Score stored attempts with a verifier: p(YES) per attempt, AUC and ECE with bootstrap 95% intervals.

    Only tasks the verifier held out of training are scored (its manifest lists them); the summary names the
    tasks scored and those left out.

    Example: repogym verify runs/eval-sft --verifier runs/verifier --out runs/verify-sft
    """
    config = VerifyConfig(
        rollout_dirs=tuple(str(folder) for folder in rollout_dirs), verifier=str(verifier), out=str(out),
        bins=bins, bootstrap=BootstrapSettings(resamples=bootstrap, seed=bootstrap_seed),
    )  # fmt: skip
    if json_out:
        print_json(run_verify(config))
        return
    with LiveBars() as bars:
        summary = run_verify(
            config, progress=lambda done, total: bars("verify: attempts scored", done, total)
        )

    def with_interval(name: str) -> str:
        value, bounds = summary[name], summary["intervals"][name]
        if value is None:
            return f"undefined ({summary.get('auc_undefined', '')})"
        return f"{value:.3f}" + (f" [{bounds[0]:.3f}, {bounds[1]:.3f}]" if bounds else "")

    table = Table(title="verify", show_header=False)
    tasks = summary["tasks"]
    for key, value in (
        ("AUC (95% interval)", with_interval("auc")),
        ("ECE (95% interval)", with_interval("ece")),
        ("mean p(YES): resolved / unresolved", " / ".join(
            "-" if value is None else f"{value:.3f}" for value in summary["mean_score"].values())),
        ("attempts scored", f"{summary['attempts']} ({summary['resolved']} resolved)"),
        ("tasks scored", str(len(tasks["scored"]))),
        ("tasks left out (trained on)", str(len(tasks["left_out_as_trained_on"]))),
        ("summary", str(out / SUMMARY_FILE)),
    ):  # fmt: skip
        table.add_row(key, value)
    console.print(table)
