"""Unified-diff helpers shared by grading, mining and rewards (built on unidiff)."""

from __future__ import annotations

from dataclasses import dataclass

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError


@dataclass(frozen=True)
class DiffStats:
    files: int
    added: int
    removed: int

    @property
    def lines(self) -> int:
        return self.added + self.removed


def parse_patch(patch: str) -> PatchSet | None:
    """The parsed patch, or None when it is not a unified diff."""
    if not patch.strip():
        return PatchSet("")
    try:
        return PatchSet(patch)
    except UnidiffParseError:
        return None


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
    parsed = parse_patch(patch)
    if parsed is None:
        return []
    paths: list[str] = []
    for patched in parsed:
        for name in (patched.source_file, patched.target_file):
            if name and name != "/dev/null":
                stripped = name[2:] if name[:2] in ("a/", "b/") else name
                if stripped not in paths:
                    paths.append(stripped)
    return paths
