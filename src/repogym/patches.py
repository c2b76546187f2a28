"""Unified-diff helpers shared by grading, mining and rewards (built on unidiff)."""

from __future__ import annotations

import difflib
import functools
from collections.abc import Mapping
from dataclasses import dataclass

from unidiff import PatchedFile, PatchSet
from unidiff.errors import UnidiffParseError

from repogym.errors import RepogymError


class PatchError(RepogymError):
    """A unified diff cannot be applied to the given contents, or cannot be written as SEARCH/REPLACE."""


@dataclass(frozen=True)
class DiffStats:
    files: int
    added: int
    removed: int

    @property
    def lines(self) -> int:
        return self.added + self.removed


def parse_patch(patch: str) -> PatchSet | None:
    """The parsed patch, or None when it is not a unified diff (blank text is the empty patch).

    unidiff reads text with no file header as a patch of no files; that is not a diff either.

    >>> len(parse_patch("")), parse_patch("just some words\\n") is None
    (0, True)
    """
    if not patch.strip():
        return PatchSet("")
    try:
        parsed = PatchSet(patch)
    except UnidiffParseError:
        return None
    return parsed if len(parsed) else None


def diff_stats(patch: str) -> DiffStats:
    """Files touched and lines added/removed; an unparsable patch counts as zero.

    >>> diff_stats("--- a/x.py\\n+++ b/x.py\\n@@ -1 +1,2 @@\\n-a = 1\\n+a = 2\\n+b = 3\\n")
    DiffStats(files=1, added=2, removed=1)
    """
    parsed = parse_patch(patch)
    if parsed is None:
        return DiffStats(0, 0, 0)
    return DiffStats(len(parsed), parsed.added, parsed.removed)


def changed_paths(patch: str) -> list[str]:
    """Repository-relative paths a patch touches (both sides of a rename)."""
    return list(_changed_paths(patch))


# A grade asks this of the same candidate and test patch several times (the filter, the one-pass check, the
# compile step, the canary), each a full unidiff parse: the answer is kept for the last few patches (few: a
# patch can be megabytes).
@functools.lru_cache(maxsize=16)
def _changed_paths(patch: str) -> tuple[str, ...]:
    parsed = parse_patch(patch)
    if parsed is None:
        return ()
    paths: list[str] = []
    for patched in parsed:
        for name in (patched.source_file, patched.target_file):
            if name and name != "/dev/null":
                stripped = name[2:] if name[:2] in ("a/", "b/") else name
                if stripped not in paths:
                    paths.append(stripped)
    return tuple(paths)


# -- in-memory diffs and applies ------------------------------------------------------------------------------------


def split_lines(text: str) -> list[str]:
    """Lines of `text` split on "\\n" only (as git does), each keeping its newline.

    >>> split_lines("a\\r\\nb\\x0cc\\nd")
    ['a\\r\\n', 'b\\x0cc\\n', 'd']
    """
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def unified_diff(original: Mapping[str, str], new_contents: Mapping[str, str], context: int = 3) -> str:
    """Git-style unified diff from `original` to `new_contents` (files in path order; unchanged skipped).

    A path missing from `original` is a new file (`--- /dev/null`).

    >>> print(unified_diff({"a.py": "x = 1\\n"}, {"a.py": "x = 2\\n"}), end="")
    diff --git a/a.py b/a.py
    --- a/a.py
    +++ b/a.py
    @@ -1 +1 @@
    -x = 1
    +x = 2
    """
    chunks: list[str] = []
    for path in sorted(new_contents):
        old, new = original.get(path), new_contents[path]
        if old == new:
            continue
        header = [f"diff --git a/{path} b/{path}\n"]
        if old is None:
            header.append("new file mode 100644\n")
            if not new:
                chunks.extend(header)  # an empty new file: git writes no hunk either
                continue
        body = difflib.unified_diff(
            split_lines(old or ""),
            split_lines(new),
            fromfile="/dev/null" if old is None else f"a/{path}",
            tofile=f"b/{path}",
            n=context,
        )
        chunks.extend(header)
        for line in body:
            chunks.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(chunks)


def apply_patch(patch: str, contents: Mapping[str, str], *, partial: bool = False) -> dict[str, str | None]:
    """New text of every file a unified diff touches (None: deleted), applied to `contents` in memory.

    Hunks must match exactly (a hunk may sit at another line, as with `git apply`, but no fuzz).
    Raises PatchError for a patch that does not parse, a binary change, a missing original or a
    hunk that does not match; with `partial=True` such files are left out of the result instead.

    >>> apply_patch("--- a/a.py\\n+++ b/a.py\\n@@ -1 +1 @@\\n-x = 1\\n+x = 2\\n", {"a.py": "x = 1\\n"})
    {'a.py': 'x = 2\\n'}
    """
    try:
        parsed = PatchSet(patch)
    except UnidiffParseError as exc:
        raise PatchError(f"not a unified diff: {exc}") from None
    except Exception as exc:  # unidiff raises others on some malformed input (UnboundLocalError...)
        raise PatchError(f"not a unified diff: {type(exc).__name__}: {exc}") from None
    result: dict[str, str | None] = {}
    for patched in parsed:
        try:
            _apply_file(patched, contents, result)
        except PatchError:
            if not partial:
                raise
    return result


def _apply_file(patched: PatchedFile, contents: Mapping[str, str], result: dict[str, str | None]) -> None:
    if patched.is_binary_file:
        raise PatchError(f"{patched.path}: binary changes cannot be applied as text")
    source = _strip_prefix(patched.source_file, "a/")
    target = _strip_prefix(patched.target_file, "b/")
    if patched.is_added_file:
        old = ""
    elif result.get(source) is not None:
        old = result[source] or ""  # the same file patched twice in one diff
    elif source in contents:
        old = contents[source]
    else:
        raise PatchError(f"{source}: the patch changes it but its original content was not given")
    new = _apply_hunks(source, old, patched)
    if patched.is_removed_file:
        result[source] = None
        return
    if source != target and not patched.is_added_file:
        result[source] = None  # a rename: the old path goes away
    result[target] = new


def _strip_prefix(name: str, prefix: str) -> str:
    return name[len(prefix) :] if name.startswith(prefix) else name


def _apply_hunks(path: str, old: str, patched: PatchedFile) -> str:
    lines = split_lines(old)
    out: list[str] = []
    pos = offset = 0
    for hunk in patched:
        source, target = _hunk_sides(hunk)
        expected = (hunk.source_start if not source else hunk.source_start - 1) + offset
        start = _locate(lines, source, max(expected, pos), pos)
        if start is None:
            raise PatchError(f"{path}: hunk at line {hunk.source_start} does not match the original")
        out += lines[pos:start] + target
        pos = start + len(source)
        offset = start - (hunk.source_start - (0 if not source else 1))
    return "".join(out + lines[pos:])


def _hunk_sides(hunk: object) -> tuple[list[str], list[str]]:
    """Source and target lines of a hunk, honouring "\\ No newline at end of file"."""
    source: list[str] = []
    target: list[str] = []
    last: tuple[list[str], ...] = ()
    for line in hunk:  # type: ignore[attr-defined]
        if line.line_type == "\\":
            for side in last:
                side[-1] = side[-1].removesuffix("\n")
            continue
        last = {" ": (source, target), "-": (source,), "+": (target,)}.get(line.line_type, ())
        for side in last:
            side.append(line.value)
    return source, target


def _locate(lines: list[str], block: list[str], expected: int, floor: int) -> int | None:
    """Index nearest `expected` (and not before `floor`) where `block` occurs in `lines`."""
    size, limit = len(block), len(lines) - len(block)
    for distance in range(max(limit, 0) + abs(expected) + 1):
        for start in (expected - distance, expected + distance):
            if floor <= start <= limit and lines[start : start + size] == block:
                return start
    return None
