"""Which lines of a unified diff may be rewritten without stopping the patch from applying.

`git apply` checks a hunk's context (' ') and removed ('-') lines against the
file; its added ('+') lines are only written. So a scrubber may rewrite the
content of added lines (keeping the line count) and nothing else. This module
classifies each line of a patch so the secret and PII scrubbers can tell.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass


class LineKind(enum.StrEnum):
    """What a line of a scanned field is, and so whether it may be rewritten."""

    TEXT = "text"
    """A line of free text (problem statement, hints, metadata): rewritable."""
    ADDED = "added"
    """A '+' line of a patch: rewritable, the patch still applies."""
    CONTEXT = "context"
    """A ' ' line of a patch: git checks it against the file, so it must stay as it is."""
    REMOVED = "removed"
    """A '-' line of a patch: checked against the file, must stay."""
    HEADER = "header"
    """A file header or other non-hunk line of a patch: must stay."""
    FIXED = "fixed"
    """A value whose exact text matters (an environment's install command): never rewritten."""

    @property
    def rewritable(self) -> bool:
        return self in (LineKind.TEXT, LineKind.ADDED)


@dataclass(frozen=True)
class PatchLine:
    """One line of a patch: its kind, the file it belongs to, and where its content starts."""

    kind: LineKind
    path: str
    """Path of the file the line belongs to (the '+++' side); '' before the first file header."""
    offset: int
    """Characters of diff marker before the content: 1 in hunks, 0 for headers."""


_HUNK_HEADER = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")


def classify_patch_lines(lines: list[str]) -> list[PatchLine]:
    """Classify each line of a unified diff (split on '\\n') by counting hunk lengths.

    Counting the lengths from each '@@' header (rather than trusting the first
    character) keeps a removed line that reads '--- x' inside a hunk from
    being taken for a file header.

    >>> patch = ["diff --git a/m.py b/m.py", "--- a/m.py", "+++ b/m.py", "@@ -1,2 +1,2 @@", " a = 1", "--- x", "+b = 2", ""]
    >>> [(line.kind.value, line.path) for line in classify_patch_lines(patch)][3:]
    [('header', 'm.py'), ('context', 'm.py'), ('removed', 'm.py'), ('added', 'm.py'), ('header', 'm.py')]
    """
    result: list[PatchLine] = []
    path = old_path = ""
    old_left = new_left = 0
    shared: dict[tuple[LineKind, str, int], PatchLine] = {}  # one frozen PatchLine per kind and path, reused

    def line_of(kind: LineKind, offset: int) -> PatchLine:
        key = (kind, path, offset)
        found = shared.get(key)
        if found is None:
            found = shared[key] = PatchLine(kind, path, offset)
        return found

    for line in lines:
        if old_left > 0 or new_left > 0:
            first = line[:1]
            if first == "+":
                new_left -= 1
                result.append(line_of(LineKind.ADDED, 1))
                continue
            if first == "-":
                old_left -= 1
                result.append(line_of(LineKind.REMOVED, 1))
                continue
            if first == " " or not line:  # some tools strip the single space of an empty context line
                old_left -= 1
                new_left -= 1
                result.append(line_of(LineKind.CONTEXT, 1))
                continue
            if first == "\\":  # "\ No newline at end of file" belongs to the hunk but counts nothing
                result.append(line_of(LineKind.HEADER, 0))
                continue
            old_left = new_left = 0  # a malformed hunk ended early: fall through to header handling
        if line.startswith("\\"):
            result.append(line_of(LineKind.HEADER, 0))
            continue
        header = _HUNK_HEADER.match(line)
        if header:
            old_left = int(header.group(1)) if header.group(1) is not None else 1
            new_left = int(header.group(2)) if header.group(2) is not None else 1
        elif line.startswith("--- "):
            old_path = _header_path(line[4:])
        elif line.startswith("+++ "):
            path = _header_path(line[4:]) or old_path  # a deleted file's lines belong to its old path
        elif line.startswith("diff --git "):
            path = old_path = ""
        result.append(line_of(LineKind.HEADER, 0))
    return result


def _header_path(name: str) -> str:
    """The repository path named in a '+++ ' header, without 'b/' or a trailing timestamp.

    >>> _header_path("b/src/m.py\\t2024-01-01 00:00:00")
    'src/m.py'
    >>> _header_path("/dev/null")
    ''
    """
    name = name.split("\t", 1)[0].strip()
    if name.startswith('"') and name.endswith('"'):
        name = name[1:-1]
    if name == "/dev/null":
        return ""
    return name[2:] if name[:2] in ("a/", "b/") else name
