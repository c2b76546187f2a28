"""transformers' `TrainerCallback` as a base added on first use, so callback modules import without the train extra.

repogym's trainer callbacks are plain classes that hold their logic (`on_log`, `on_step_end`, ...);
`callback_class(logic, name)` is the class a trainer takes: `logic` first, then `TrainerCallback`,
whose no-op events fill in the rest. Importing transformers costs seconds and needs the train extra,
which the modules defining callbacks must not (`repogym report` reads metrics.jsonl through
`repogym.train.metrics`, and the pipeline imports the trainers' modules to plan its stages).

Guarantees: one class per (logic, name), so `isinstance` and `trainer.remove_callback(cls)` work.
"""

from __future__ import annotations

import functools


@functools.cache
def callback_class(logic: type, name: str) -> type:
    """`logic` with `transformers.TrainerCallback` as its last base, named `name` in `logic`'s module."""
    from transformers import TrainerCallback

    namespace = {"__module__": logic.__module__, "__qualname__": name, "__doc__": logic.__doc__}
    return type(name, (logic, TrainerCallback), namespace)
