"""Where a task's fix is: the (file, function) pairs its gold patch touches.

A synthetic task says so in its metadata (`file`, `function`, and `locations` for combined bugs). For any
other task the gold patch's lines are looked up with `ast`: a removed line in the file at the base commit,
an added line in the file after the patch (the base file with the patch applied by `repogym.patches`). The
innermost enclosing function or class gives the name (`Class.method`), `<module>` when the line is at module
level.

Guarantees: a commit that adds `g()` below `f()` is located in `g`, not in `f` (the insertion point), so the
synthetic bugs later injected into `g` share its key and `repogym.split` keeps them on its side; an added file
is located in the functions it defines. Added blank and comment-only lines are not looked up (a blank line
between two functions is module level and would tie the task to every module-level edit of the file) unless
they are all the file's change.
Not guaranteed: when the patch does not apply to the base file, or the result does not parse, added lines fall
back to the function around their insertion point in the base file; when the base file cannot be read (a URL,
a missing repository, not Python) the hunk header's context (git writes the enclosing `def` there) is used,
else `<module>`.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from unidiff import PatchedFile

from repogym import pysyntax
from repogym.errors import RepogymError
from repogym.hostgit import git
from repogym.patches import PatchError, apply_patch, parse_patch
from repogym.reposource import resolve_repo_source
from repogym.task import Task

MODULE = "<module>"
_HEADER_DEF = re.compile(r"\b(?:async\s+def|def|class)\s+(\w+)")

Location = tuple[str, str]
Span = tuple[int, int, str]


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
        found += [(patched.path, name) for name in _file_names(task, patched, repos_dir)]
    return list(dict.fromkeys(found))


def fixed_functions(task: Task, repos_dir: str | None = None) -> dict[Location, str]:
    """The text of each function or class the fix touches (`task_locations`), as it reads after the gold patch.

    What a held-out task's answer restores, so that a training row holding it can be told apart
    (`repogym.train.leakage`). Module-level locations are left out, and so is every location of a file that
    cannot be read at the base commit, patched or parsed: compare the keys with `task_locations` to see which.
    """
    wanted = set(task_locations(task, repos_dir))
    found: dict[Location, str] = {}
    for patched in parse_patch(task.patch) or []:
        before = "" if patched.is_added_file else _base_text(task, _strip(patched.source_file), repos_dir)
        after = None if before is None else _patched_text(patched, before)
        spans = _spans(after)
        if after is None or spans is None:
            continue
        lines = after.splitlines(keepends=True)
        for first, last, name in spans:
            if (patched.path, name) in wanted:
                found[(patched.path, name)] = "".join(lines[first - 1 : last])
    return found


def _file_names(task: Task, patched: PatchedFile, repos_dir: str | None) -> list[str]:
    before = "" if patched.is_added_file else _base_text(task, _strip(patched.source_file), repos_dir)
    old_spans = _spans(before)
    if old_spans is None:
        headers = [hunk.section_header or "" for hunk in patched]
        return [m.group(1) for h in headers if (m := _HEADER_DEF.search(h))] or [MODULE]
    new_spans = _spans(_patched_text(patched, before))
    names = []
    for removed, added, insertion in _touched_lines(patched):
        if removed is not None:
            names.append(_enclosing(old_spans, removed))
        elif new_spans is not None and added is not None:
            names.append(_enclosing(new_spans, added))
        else:  # the patched text is unknown: the function around the insertion point, as git's header does
            names.append(_enclosing(old_spans, insertion))
    return list(dict.fromkeys(names)) or [MODULE]


def _touched_lines(patched: PatchedFile) -> list[tuple[int | None, int | None, int]]:
    """(removed line in the base file, added line in the patched file, insertion point in the base file) per
    changed line, in patch order; added blank and comment-only lines left out unless nothing else changed."""
    touched: list[tuple[int | None, int | None, int]] = []
    code: list[tuple[int | None, int | None, int]] = []
    for hunk in patched:
        previous = max(hunk.source_start - 1, 1)
        for line in hunk:
            if line.is_removed or line.is_added:
                entry = (line.source_line_no, line.target_line_no, previous)
                touched.append(entry)
                if line.is_removed or line.value.strip()[:1] not in ("", "#"):
                    code.append(entry)
            if line.source_line_no is not None:
                previous = line.source_line_no
    return code or touched


def _base_text(task: Task, path: str, repos_dir: str | None) -> str | None:
    try:
        source = resolve_repo_source(task, repos_dir)
    except RepogymError:
        return None
    if not Path(source).exists():
        return None  # a URL: splitting never clones
    try:
        return git(source, "show", f"{task.base_commit}:{path}")
    except RepogymError:
        return None


def _patched_text(patched: PatchedFile, before: str) -> str | None:
    """The file after this file's part of the patch, or None when it does not apply (or deletes the file)."""
    try:
        after = apply_patch(str(patched), {_strip(patched.source_file): before})
    except PatchError:
        return None
    return after.get(_strip(patched.target_file))


def _strip(name: str) -> str:
    return name[2:] if name[:2] in ("a/", "b/") else name


def _spans(text: str | None) -> list[Span] | None:
    if text is None:
        return None
    try:
        tree = pysyntax.parse(text)
    except (SyntaxError, ValueError):
        return None
    return _function_spans(tree)


def _enclosing(spans: list[Span], line: int) -> str:
    inside = [span for span in spans if span[0] <= line <= span[1]]
    # The innermost: the latest start among those that contain the line.
    return max(inside)[2] if inside else MODULE


def _function_spans(tree: ast.Module) -> list[Span]:
    spans: list[Span] = []

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
