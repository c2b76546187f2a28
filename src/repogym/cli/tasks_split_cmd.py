"""`repogym tasks split`: train and test sets that share no function (or file, or repo)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from repogym.cli.common import add_command, console, print_json, subgroup
from repogym.cli.options import Json, Renamed, ReposDir, Seed, Tasks
from repogym.dataset import load_tasks
from repogym.errors import ConfigError
from repogym.split import SplitBy, split_tasks, write_split


def register(app: typer.Typer) -> None:
    add_command(subgroup(app, "tasks"), "split", split, Renamed("--out-dir", "--out"))


def split(
    tasks_file: Tasks,
    by: Annotated[
        str,
        typer.Option(
            "--by", help="What no two sides share: repo, file, function, or time (oldest to train)."
        ),
    ],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Folder for train.jsonl, test.jsonl and manifest.json.")
    ],
    ratio: Annotated[
        float, typer.Option("--ratio", help="Share of the tasks in train (0 < ratio < 1).")
    ] = 0.8,
    seed: Seed = 0,
    repos_dir: ReposDir = None,
    json_out: Json = False,
) -> None:
    """Split tasks into train and test with no function (by file: no file; by repo: no repo) on both sides.

    Identical diffs are deduplicated first; the manifest records what went where and why (--json prints it).

    Example: repogym tasks split tasks.jsonl --by function --ratio 0.8 --out splits/ --seed 0
    """
    try:
        mode = SplitBy(by)
    except ValueError:
        raise ConfigError(f"--by {by!r}: choose one of {', '.join(m.value for m in SplitBy)}") from None
    result = split_tasks(
        list(load_tasks(tasks_file)), mode, ratio, seed, str(repos_dir) if repos_dir else None
    )
    manifest = write_split(result, out)
    if json_out:
        print_json({"manifest_path": str(manifest), **result.manifest})
        return
    counts = result.manifest["counts"]
    console.print(
        Text(
            f"train {counts['train']}, test {counts['test']} (by {mode.value}, ratio {ratio}, seed {seed}); "
            f"{counts['duplicates']} duplicate diff(s) dropped, {counts['held_out']} held out; manifest {manifest}"
        ),
        soft_wrap=True,
    )
