"""Observation text: truncation with a marker, the short view of a repository, the first observation."""

from __future__ import annotations

import os
from pathlib import Path

from repogym.task import Task

TRUNCATION_MARKER = (
    "\n[... repogym: {omitted:,} characters omitted; the observation limit is {limit:,} ...]\n"
)
_HIDDEN = frozenset({".git"})


def truncate(text: str, limit: int) -> str:
    """`text` if it fits in `limit` characters, else its head and tail around a marker (the result fits).

    >>> truncate("abc", 10)
    'abc'
    >>> short = truncate("x" * 300 + "y" * 300, 200)
    >>> len(short) <= 200, short.startswith("x"), short.endswith("y"), "characters omitted" in short
    (True, True, True, True)
    """
    if len(text) <= limit:
        return text
    marker = TRUNCATION_MARKER.format(omitted=len(text), limit=limit)
    room = max(limit - len(marker), 0)
    head, tail = room - room // 2, room // 2
    marker = TRUNCATION_MARKER.format(omitted=len(text) - head - tail, limit=limit)
    return text[:head] + marker + (text[len(text) - tail :] if tail else "")


def repo_view(root: Path, max_entries: int = 60, depth: int = 2) -> str:
    """An indented listing of the repository's top `depth` levels (folders first), capped at `max_entries`."""
    lines: list[str] = []
    total = 0
    for _, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _HIDDEN]
        total += len(files)
    _walk(root, 0, depth, lines)
    shown = lines[:max_entries]
    if len(lines) > max_entries:
        shown.append(f"  ... ({len(lines) - max_entries} more entries)")
    return f"{total} files; top {depth} levels:\n" + "\n".join(shown)


def _walk(folder: Path, level: int, depth: int, lines: list[str]) -> None:
    entries = sorted(os.scandir(folder), key=lambda e: (not e.is_dir(follow_symlinks=False), e.name))
    for entry in entries:
        if entry.name in _HIDDEN:
            continue
        is_dir = entry.is_dir(follow_symlinks=False)
        lines.append("  " * (level + 1) + entry.name + ("/" if is_dir else ""))
        if is_dir and level + 1 < depth:
            _walk(Path(entry.path), level + 1, depth, lines)


def agent_intro(task: Task, view: str, tool_names: list[str]) -> str:
    """The first observation of an agent-mode episode: the issue, the repository, the tools."""
    return (
        f"<issue>\n{task.problem_statement.strip()}\n</issue>\n\n"
        f"The repository {task.repo} is checked out at /testbed (commit {task.base_commit[:12]}); "
        f"{view}\n\n"
        f"Tools: {', '.join(tool_names)}. Fix the issue by editing the code (not the tests), then call submit().\n"
    )
