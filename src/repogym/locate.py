"""Where a task's fix is: the (file, function) pairs its gold patch touches.

A synthetic task says so in its metadata (`file`, `function`, and `locations` for combined bugs). For any
other task the gold patch's touched lines (removed lines, and the line before an insertion) are looked up
in the file at the base commit with `ast`: the innermost enclosing function or class gives the name
(`Class.method`), `<module>` when the line is at module level. When the repository cannot be read the
hunk header's context (git writes the enclosing `def` there) is used, else `<module>`.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from repogym import pysyntax
from repogym.errors import RepogymError
from repogym.hostgit import git
from repogym.patches import parse_patch
from repogym.reposource import resolve_repo_source
from repogym.task import Task

MODULE = "<module>"
_HEADER_DEF = re.compile(r"\b(?:async\s+def|def|class)\s+(\w+)")

Location = tuple[str, str]


def task_locations(task: Task, repos_dir: str | None = None) -> list[Location]:
    """The (file, function) pairs of the task's fix, in patch order, without repeats."""
    metadata = task.metadata
    if isinstance(metadata.get("file"), str) and isinstance(metadata.get("function"), str):
        found = [(metadata["file"], metadata["function"])]
        for extra in metadata.get("locations") or []:
            if isinstance(extra, dict) and isinstance(extra.get("file"), str):
                found.append((extra["file"], str(extra.get("function", MODULE))))
        return list(dict.fromkeys(found))
    found = []
    for patched in parse_patch(task.patch) or []:
        path = patched.path
        lines: list[int] = []
        headers: list[str] = []
        for hunk in patched:
            headers.append(hunk.section_header or "")
            previous = max(hunk.source_start - 1, 1)
            for line in hunk:
                if line.is_removed:
                    lines.append(line.source_line_no)
                elif line.is_added:
                    lines.append(previous)
                if line.source_line_no is not None:
                    previous = line.source_line_no
        names = _names_from_source(task, path, lines, repos_dir) if not patched.is_added_file else [MODULE]
        if names is None:
            names = [m.group(1) for h in headers if (m := _HEADER_DEF.search(h))] or [MODULE]
        found += [(path, name) for name in names]
    return list(dict.fromkeys(found))


def _names_from_source(task: Task, path: str, lines: list[int], repos_dir: str | None) -> list[str] | None:
    try:
        source = resolve_repo_source(task, repos_dir)
    except RepogymError:
        return None
    if not Path(source).exists():
        return None  # a URL: splitting never clones
    try:
        tree = pysyntax.parse(git(source, "show", f"{task.base_commit}:{path}"))
    except (RepogymError, SyntaxError, ValueError):
        return None
    spans = _function_spans(tree)
    names = []
    for line in lines:
        inside = [(start, end, name) for start, end, name in spans if start <= line <= end]
        # The innermost: the latest start among those that contain the line.
        names.append(max(inside)[2] if inside else MODULE)
    return list(dict.fromkeys(names)) or [MODULE]


def _function_spans(tree: ast.Module) -> list[tuple[int, int, str]]:
    spans: list[tuple[int, int, str]] = []

    def walk(node: ast.AST, scope: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = [*scope, child.name]
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                spans.append((first, child.end_lineno or child.lineno, ".".join(name)))
                walk(child, name)
            else:
                walk(child, scope)

    walk(tree, [])
    return spans
