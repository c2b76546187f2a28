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


def make(instance_id: str, **kwargs: Any):
    """Build the gymnasium env of one task; see `repogym.env.make`."""
    from repogym.env import make as _make

    return _make(instance_id, **kwargs)


__all__ = ["RepogymError", "Task", "__version__", "grade", "load_tasks", "make", "save_tasks"]
