"""Trainer checkpoints that survive SIGKILL: which checkpoint-N folders are complete, and where to resume.

transformers writes a checkpoint in place (weights, optimizer, scheduler, RNG, then
trainer_state.json last), so a kill during a save leaves a folder without trainer_state.json.
`resume_point` resumes from the newest complete one and removes incomplete ones (they are
written again when training reaches their step), so a kill loses at most the steps since the
last complete checkpoint.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from repogym.errors import ConfigError


def checkpoints(output_dir: str | os.PathLike[str]) -> list[Path]:
    """checkpoint-N folders of a run, oldest first."""
    root = Path(output_dir)
    found = [p for p in root.glob("checkpoint-*") if p.is_dir() and p.name.split("-", 1)[1].isdigit()]
    return sorted(found, key=lambda p: int(p.name.split("-", 1)[1]))


def is_complete(checkpoint: Path) -> bool:
    """Transformers writes trainer_state.json last: a checkpoint without a readable one was cut short."""
    try:
        json.loads((checkpoint / "trainer_state.json").read_text())
    except (OSError, json.JSONDecodeError):
        return False
    return True


def resume_point(output_dir: str | os.PathLike[str], resume: bool) -> Path | None:
    """The checkpoint to continue from (incomplete ones are removed: they are re-made when their step comes)."""
    found = checkpoints(output_dir)
    if found and not resume:
        raise ConfigError(
            f"output_dir: {output_dir} already holds checkpoints (newest {found[-1].name}); "
            "pass --resume to continue that run, or choose another output_dir"
        )
    complete = [c for c in found if is_complete(c)]
    if int(os.environ.get("RANK", "0")) == 0:  # under accelerate, one process tidies
        for checkpoint in found:
            if checkpoint not in complete:
                shutil.rmtree(
                    checkpoint, ignore_errors=True
                )  # cut by a kill; re-made when its step comes again
    return complete[-1] if complete else None
