"""repogym: your repositories as a training ground for code agents.

The public entry points are re-exported here; each stage also works alone
from its own module (see DESIGN.md's pipeline).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

from repogym.errors import RepogymError
from repogym.task import Task

if TYPE_CHECKING:
    from repogym.dataset import load_tasks, save_tasks
    from repogym.env import check_env, make, make_group
    from repogym.grading.grade import grade


# Loaded on first use, so that `repogym grade` and `repogym tasks` do not pay for gymnasium and pandas at
# start-up, and so that importing any repogym module (which runs this file first) does not import the
# grader. This file is the public facade, above every layer: nothing in repogym imports it.
# repogym.env registers `repogym/RepoFix-v0` with gymnasium when it is imported (by these names, or
# by gymnasium.make("repogym.env:repogym/RepoFix-v0", ...)).
_LAZY = {
    "grade": "repogym.grading.grade",
    "load_tasks": "repogym.dataset",
    "save_tasks": "repogym.dataset",
    "check_env": "repogym.env",
    "make": "repogym.env",
    "make_group": "repogym.env",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value

__all__ = [
    "RepogymError",
    "Task",
    "__version__",
    "check_env",
    "grade",
    "load_tasks",
    "make",
    "make_group",
    "save_tasks",
]
