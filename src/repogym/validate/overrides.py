"""Env overrides for a batch of candidates: each repository's own `repogym.toml`, then `--env-file`.

Applied before anything else, so a candidate's fingerprint (and so resuming) sees the environment it
will be validated in, and the environment recipe fills only what the overrides leave empty.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from repogym.envfile import EnvFile, load_env_file, repo_env_file
from repogym.errors import RepoSourceError
from repogym.reposource import resolve_repo_source
from repogym.task import Task


@dataclass(frozen=True)
class AppliedEnvFile:
    """One env file and how many candidates a rule of it matched."""

    source: str
    tasks: int


def apply_overrides(
    tasks: Sequence[Task], env_file: str | Path | None = None, repos_dir: str | None = None
) -> tuple[list[Task], tuple[AppliedEnvFile, ...]]:
    """The tasks with their repositories' `repogym.toml` and then `env_file` applied, and what applied."""
    by_source: dict[str, EnvFile | None] = {}
    counts: dict[str, int] = {}
    out: list[Task] = []
    for task in tasks:
        try:
            source = resolve_repo_source(task, repos_dir)
        except RepoSourceError:
            source = ""  # validation itself reports the missing repository
        if source and source not in by_source:
            by_source[source] = repo_env_file(source) if Path(source).exists() else None
        found = by_source.get(source)
        if found is not None:
            task = _apply(found, task, counts)
        out.append(task)
    if env_file is not None:
        command_line = load_env_file(env_file)
        out = [_apply(command_line, task, counts) for task in out]
    return out, tuple(AppliedEnvFile(source, n) for source, n in counts.items())


def _apply(env_file: EnvFile, task: Task, counts: dict[str, int]) -> Task:
    (applied,) = env_file.apply([task])
    if applied is not task and applied.metadata.get("env_rules") != task.metadata.get("env_rules"):
        counts[env_file.source] = counts.get(env_file.source, 0) + 1
    return applied
