"""Agentless gold demonstrations: the env's observation and SWE-RL's answer reproducing the gold patch.

The prompt is built by the agentless env's own `build_observation` (so it is the one the env
shows); the file contents come straight from the task's git repository at its base commit (no
Python environment is built) unless the localizer needs to run tests, which takes the prepared
sandbox runtime.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repogym.dataset import load_tasks
from repogym.env.agentless import build_observation, gold_answer
from repogym.env.base import read_originals
from repogym.env.context import localizers, oracle_localizer
from repogym.env.options import EnvOptions
from repogym.errors import RepogymError
from repogym.hostgit import git_bytes
from repogym.patches import changed_paths
from repogym.reposource import resolve_repo_source
from repogym.sandbox.pool import RuntimePool
from repogym.sandbox.repos import mirror
from repogym.train.chat_rows import make_row

if TYPE_CHECKING:
    from repogym.task import Task
    from repogym.train.sft_data import SFTDataOptions


def agentless_gold_rows(
    tasks_path: Path, options: SFTDataOptions
) -> Iterator[tuple[dict[str, Any], str | None]]:
    """One (row, drop reason or None) per task of the file."""
    env_options = EnvOptions(
        mode="agentless",
        context=options.context,
        window_lines=options.window_lines,
        localize=options.localize,
        answer_format=options.answer_format,
        prompt_style=options.prompt_style,
    )
    localizer = localizers.get(options.localize) if options.context == "window" else None
    runtimes = RuntimePool(options.sandbox, options.repos_dir)
    for task in load_tasks(tasks_path):
        paths = changed_paths(task.patch)
        runtime = None
        try:
            if localizer is None or localizer is oracle_localizer:
                contents = originals_at(task, paths, options.repos_dir)
            else:
                runtime = runtimes.runtime(task)
                contents = read_originals(runtime.pristine, paths)
        except RepogymError:
            yield _empty(task), "repository or environment unavailable"
            continue
        localization = None
        if localizer is not None:
            localization = localizer(task, contents, runtime)
            missing = [path for path in localization.spots if path not in contents]
            if missing:
                contents.update(
                    read_originals(runtime.pristine, missing)
                    if runtime
                    else originals_at(task, missing, options.repos_dir)
                )
        prompt, windows = build_observation(task.problem_statement, contents, env_options, localization)
        answer = gold_answer(
            task.patch, contents, windows if localization else None, localization, options.answer_format
        )
        if answer is None:
            reason = (
                "gold change is not a rewrite of the localized lines"
                if localization and options.answer_format == "lines"
                else "gold change outside the window"
                if localization
                else "gold patch not expressible as SEARCH/REPLACE"
            )
            yield _empty(task), reason
            continue
        metadata = {"context": options.context, "localize": options.localize if localization else None,
                    "answer_format": options.answer_format, "prompt_style": options.prompt_style}  # fmt: skip
        if localization is not None:
            metadata["uses_gold_localization"] = localization.uses_gold
        yield make_row(
            [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}],
            source="gold-agentless", instance_id=task.instance_id, metadata=metadata,
        ), None  # fmt: skip


def originals_at(task: Task, paths: list[str], repos_dir: str | None) -> dict[str, str]:
    """Text of each path at the task's base commit, read from its git repository (missing or binary: left out)."""
    source = mirror(resolve_repo_source(task, repos_dir), (task.base_commit,))
    contents: dict[str, str] = {}
    for path in dict.fromkeys(paths):
        try:
            blob = git_bytes(source, "show", f"{task.base_commit}:{path}")
            contents[path] = blob.decode("utf-8")
        except (RepogymError, UnicodeDecodeError):  # not in that commit, or not text
            continue
    return contents


def _empty(task: Task) -> dict[str, Any]:
    return {"messages": [], "tools": [], "instance_id": task.instance_id}
