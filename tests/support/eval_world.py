"""What the eval and report tests' run folders are made of (tests/evaluate/conftest.py builds them)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Hostile text a model could write: it must show up as text in the report and never run.
HOSTILE = (
    "</pre></details></section><script>document.body.setAttribute('data-pwned', 'message')</script>"
    "<img src=x onerror=\"document.body.setAttribute('data-pwned', 'img')\">"
)


@dataclass(frozen=True)
class EvalWorld:
    """A task file of two toy tasks and three `repogym eval` folders over it."""

    root: Path
    tasks: Path
    baseline: Path
    sft: Path
    sft_again: Path


def write_metrics(folder: Path, rows: list[dict[str, Any]]) -> None:
    """A trainer's metrics.jsonl (train/metrics.py's row format) in a new `folder`."""
    folder.mkdir(parents=True)
    (folder / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
