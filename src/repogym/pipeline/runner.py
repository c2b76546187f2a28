"""The one seam through which the quickstart and the flywheel run their stages: a stage runs unless its folder
holds its finished result, which is then read back instead (`repogym.pipeline.record`).

A stage is a plain function `(given: SomeInput, hooks: Hooks) -> SomeResult`: `given.folder` is where its
result is recorded, and its return annotation names the `StageResult` class that reads the record back.
Called directly, a stage just runs (every stage is runnable alone); through `Runner` it is skipped when
finished, and the caller hears about it (`Hooks`).

Guarantees: a stage's record is written only after the stage returned (a stage that raised leaves none and
runs again next time); `Hooks.finished` is called once per stage, with the result run now or read back.
Not guaranteed: that a stage's work is undone when it raises: each stage keeps its own partial work
(trajectory stores, checkpoints) for its next run to resume.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar, get_type_hints

from repogym.errors import RepogymError
from repogym.pipeline.record import StageResult

Notify = Callable[[str], None]
#: (what, done, total) of counted work: `what` names the counter before any ':' and may say more after it
#: ("synth calcium: injecting", "eval sft-heldout-repo: 3/8 resolved"); a total of 0 is not known yet.
Progress = Callable[[str, int, int], None]


class PipelineError(RepogymError):
    """A stage produced something a later stage cannot use (an empty split, no demonstration to train on)."""


def _silent(*_: object) -> None:
    return None


@dataclass(frozen=True)
class Hooks:
    """What the caller (the CLI) sees of a run; every default is silent, so a library caller needs none."""

    notify: Notify = _silent
    """One line per event: "sft: running", "split: done earlier, skipped", "validated 12 tasks -> ..."."""
    progress: Progress | None = None
    """Counts of long work (synth, validation, evaluation attempts), for live bars."""
    finished: Callable[[str, StageResult], None] = _silent
    """(label, result) of each stage once its result is on disk, run now or read back."""
    trainer_bars: bool = False
    """Let the trainers (pretraining, SFT, GRPO) draw their own rich bars on stderr."""


#: Hooks that say nothing: the default of a library caller.
SILENT = Hooks()


class StageInput(Protocol):
    """What every stage's input has: the folder its result is recorded in."""

    @property
    def folder(self) -> Path: ...


In = TypeVar("In", bound=StageInput)
Out = TypeVar("Out", bound=StageResult)


class Runner:
    """Runs each stage at most once per output folder (see the module docstring)."""

    def __init__(self, hooks: Hooks) -> None:
        self.hooks = hooks

    def __call__(self, label: str, stage: Callable[[In, Hooks], Out], given: In) -> Out:
        """`stage(given, hooks)`, or its result read back from `given.folder` when it finished earlier."""
        result = result_type(stage).find(given.folder)
        if result is not None:
            self.hooks.notify(f"{label}: done earlier, skipped")
        else:
            self.hooks.notify(f"{label}: running")
            result = stage(given, self.hooks)
            result.save(given.folder)
        self.hooks.finished(label, result)
        return result  # type: ignore[return-value]


@functools.cache
def result_type(stage: Callable[..., StageResult]) -> type[StageResult]:
    """The result class a stage's return annotation names (the class that reads its record back)."""
    kind = get_type_hints(stage).get("return")
    if not (isinstance(kind, type) and issubclass(kind, StageResult)):
        raise TypeError(
            f"{stage.__qualname__}: a stage must be annotated to return a StageResult, not {kind!r}"
        )
    return kind
