"""repogym: your repositories as a training ground for code agents.

The public entry points are re-exported here; each stage also works alone
from its own module (see DESIGN.md's pipeline).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

from repogym.dataset import load_tasks, save_tasks
from repogym.errors import RepogymError
from repogym.task import Task

if TYPE_CHECKING:
    from repogym.grading.report import GradeResult


def grade(task: Task, patch: str, **kwargs: Any) -> GradeResult:
    """Grade `patch` against `task` in the sandbox; see `repogym.grading.grade.grade`."""
    from repogym.grading.grade import grade as _grade

    return _grade(task, patch, **kwargs)


# Importing repogym.env registers `repogym/RepoFix-v0` with gymnasium; it loads no sandbox code yet.
from repogym.env import check_env, make, make_group  # noqa: E402

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
