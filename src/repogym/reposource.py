"""Where a task's git repository is: its `repo_source`, or a clone under a folder of repositories.

Below the sandbox (which mirrors what this names) and beside the task's I/O, so whatever reads a task's
repository (its mirror, the splitter's look at the fix's functions) finds it the same way.
"""

from __future__ import annotations

import os
from pathlib import Path

from repogym.errors import RepoSourceError
from repogym.task import Task


def resolve_repo_source(task: Task, repos_dir: str | os.PathLike[str] | None = None) -> str:
    """Path or URL of the task's git repository.

    Order: `task.repo_source`; then, under `repos_dir`, `owner__name`, `owner/name`, or `name`.
    """
    if task.repo_source:
        return task.repo_source
    tried: list[str] = []
    if repos_dir is not None:
        owner, _, name = task.repo.partition("/")
        root = Path(repos_dir)
        for candidate in (
            root / f"{owner}__{name}",
            root / owner / name,
            root / (name or owner),
            root / task.repo,
        ):
            tried.append(str(candidate))
            if (candidate / ".git").exists() or (candidate / "HEAD").exists():
                return str(candidate.resolve())
    where = (
        f"; looked in {', '.join(tried)}" if tried else "; pass --repos-dir DIR holding owner__name clones"
    )
    raise RepoSourceError(
        f"task {task.instance_id}: no repository for {task.repo!r} (repo_source is empty){where}"
    )
