"""Split a commit's diff into the code patch (the gold fix) and the test patch, by path.

Each file of `git diff --binary -M` output lands in exactly one place:

- test paths (`repogym.testpaths.is_test_path` with support files, or MiningConfig.test_paths when
  set) go to the test patch, binary ones included
  (git's binary patch format applies with `git apply`; test fixtures are often binary);
- docs and changelog paths are dropped (a task never asks for documentation);
- mode-only changes are dropped from both patches: no test can observe them and a
  model's unified diff cannot express them; a mode change that comes with a content
  change keeps its content and loses its `old mode`/`new mode` lines;
- renames are kept as git writes them (`rename from`/`rename to`, plus hunks when
  the content changed too), which `git apply` applies at the base commit;
- everything else is code, including binary files (the `binary_change` filter
  drops such candidates: a model cannot write a binary patch).

Both patches apply at the base commit with `git apply`, in either order, because
they touch disjoint files.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NamedTuple

from repogym.mining.config import MiningConfig
from repogym.testpaths import is_test_path


class PathKind(enum.StrEnum):
    """What a changed path is, for splitting and filtering (first matching rule wins, in this order)."""

    VENDORED = "vendored"
    TEST = "test"
    DOCS = "docs"
    LOCK = "lock"
    CODE = "code"


def compile_patterns(patterns: Iterable[str]) -> Callable[[str], bool]:
    """A predicate over repository paths for gitignore-like patterns.

    "dir/" names a folder anywhere in the path, a pattern without "/" matches the
    file name, anything else matches the whole path; `*` stays inside one path
    component and `**` crosses them.

    >>> is_test = compile_patterns(["tests/", "test_*.py", "src/*/fixtures/**"])
    >>> [is_test(p) for p in ["tests/a.py", "pkg/tests/data.json", "pkg/test_x.py", "pkg/mytests/a.py"]]
    [True, True, True, False]
    >>> [is_test(p) for p in ["src/lib/fixtures/a/b.txt", "src/a/b/fixtures/x", "contest.py"]]
    [True, False, False]
    """
    alternatives = []
    for pattern in patterns:
        if pattern.endswith("/"):
            alternatives.append(f"(?:^|/){_glob_to_regex(pattern[:-1])}/")
        elif "/" not in pattern:
            alternatives.append(f"(?:^|/){_glob_to_regex(pattern)}$")
        else:
            alternatives.append(f"^{_glob_to_regex(pattern.lstrip('/'))}$")
    if not alternatives:
        return lambda path: False
    search = re.compile("|".join(alternatives)).search
    return lambda path: search(path) is not None


def _glob_to_regex(glob: str) -> str:
    parts = re.split(r"(\*\*|\*|\?)", glob)
    table = {"**": ".*", "*": "[^/]*", "?": "[^/]"}
    return "".join(table.get(part, re.escape(part)) for part in parts)


def _is_test(path: str) -> bool:
    return is_test_path(path, support_files=True)


class PathRules:
    """Classifies repository paths with a MiningConfig's patterns (results cached per path)."""

    def __init__(self, config: MiningConfig) -> None:
        self._rules = (
            (PathKind.VENDORED, compile_patterns(config.vendored_paths)),
            (PathKind.TEST, _is_test if config.test_paths is None else compile_patterns(config.test_paths)),
            (PathKind.DOCS, compile_patterns(config.docs_paths)),
            (PathKind.LOCK, compile_patterns(config.lock_paths)),
        )
        self._python = compile_patterns(config.python_paths)
        self._kinds: dict[str, PathKind] = {}
        self._pythons: dict[str, bool] = {}
        self._described: dict[str, tuple[PathKind, bool, bool]] = {}

    def kind(self, path: str) -> PathKind:
        kind = self._kinds.get(path)
        if kind is None:
            kind = next((kind for kind, matches in self._rules if matches(path)), PathKind.CODE)
            self._kinds[path] = kind
        return kind

    def describe(self, path: str) -> tuple[PathKind, bool, bool]:
        """(kind, goes to the code patch, is a Python file of the code patch), cached per path."""
        described = self._described.get(path)
        if described is None:
            kind = self.kind(path)
            in_code_patch = kind in (PathKind.CODE, PathKind.LOCK, PathKind.VENDORED)
            described = self._described[path] = (
                kind,
                in_code_patch,
                kind is PathKind.CODE and self.is_python(path),
            )
        return described

    def is_python(self, path: str) -> bool:
        python = self._pythons.get(path)
        if python is None:
            python = self._pythons[path] = bool(self._python(path))
        return python


# -- parsing git's patch output ---------------------------------------------------------------


class FileDiff(NamedTuple):
    """One file's block of a git patch, with the facts the split and the filters need.

    A NamedTuple rather than a frozen dataclass: one is built per changed file
    of every candidate, and a tuple is much cheaper to build.
    """

    old_path: str | None
    """Path before the change; None for an added file."""
    new_path: str | None
    """Path after the change; None for a deleted file."""
    text: str
    """The block as git wrote it (from `diff --git` to the next one), ending in a newline."""
    binary: bool = False
    rename: bool = False
    mode_change: bool = False
    added: int = 0
    removed: int = 0
    hunks_at: int = -1
    """Offset in `text` where the hunks (or the binary patch) begin; -1 when there are none."""

    @property
    def path(self) -> str:
        """The path that decides where the block goes: the new one, or the old one for a deletion."""
        return self.new_path or self.old_path or ""

    @property
    def mode_only(self) -> bool:
        return self.mode_change and not self.binary and not self.rename and self.added == self.removed == 0

    def without_mode_lines(self) -> FileDiff:
        """The block with `old mode`/`new mode` header lines removed (content hunks kept)."""
        if not self.mode_change:
            return self
        header, sep, body = _split_header(self.text)
        kept = "\n".join(
            line for line in header.split("\n") if not line.startswith(("old mode ", "new mode "))
        )
        shift = len(header) - len(kept)
        return FileDiff(
            self.old_path, self.new_path, kept + sep + body, self.binary, self.rename, False,
            self.added, self.removed, self.hunks_at - shift if self.hunks_at >= 0 else -1,
        )  # fmt: skip


_HEADER_END = re.compile(r"\n(?=--- |@@ |GIT binary patch|Binary files )")
_FILE_START = re.compile(r"^diff --git ", re.MULTILINE)


def _split_header(block: str) -> tuple[str, str, str]:
    """(header, separator, rest): the header ends before the first `---`, `@@` or binary line."""
    match = _HEADER_END.search(block)
    if match is None:
        return block.rstrip("\n"), "\n", ""
    return block[: match.start()], "\n", block[match.end() :]


def parse_file_diffs(patch: str) -> list[FileDiff]:
    """Cut git's patch text into per-file blocks.

    >>> text = ("diff --git a/a.py b/b.py\\nsimilarity index 90%\\nrename from a.py\\nrename to b.py\\n"
    ...         "--- a/a.py\\n+++ b/b.py\\n@@ -1 +1 @@\\n-x\\n+y\\n"
    ...         "diff --git a/run.sh b/run.sh\\nold mode 100644\\nnew mode 100755\\n")
    >>> [(d.old_path, d.new_path, d.rename, d.mode_only, d.added) for d in parse_file_diffs(text)]
    [('a.py', 'b.py', True, False, 1), ('run.sh', 'run.sh', False, True, 0)]
    """
    starts = [match.start() for match in _FILE_START.finditer(patch)]
    blocks = [patch[start:end] for start, end in zip(starts, [*starts[1:], len(patch)], strict=True)]
    return [_parse_block(block if block.endswith("\n") else block + "\n") for block in blocks]


def _parse_block(block: str) -> FileDiff:
    header, _, body = _split_header(block)
    lines = header.split("\n")
    old_path, new_path = _header_paths(lines[0][len("diff --git ") :])
    rename = mode_change = False
    for line in lines[1:]:
        if line[:1] in ("i", "s"):  # "index ..." and "similarity index ...": nothing to read
            continue
        if line.startswith("rename from "):
            old_path, rename = _unquote(line[12:]), True
        elif line.startswith("rename to "):
            new_path, rename = _unquote(line[10:]), True
        elif line.startswith("new file mode "):
            old_path = None
        elif line.startswith("deleted file mode "):
            new_path = None
        elif line.startswith(("old mode ", "new mode ")):
            mode_change = True
    added = removed = 0
    hunks_at = -1
    if body.startswith("--- "):  # the hunks start after the ---/+++ lines
        hunks_at = len(header) + 1 + body.find("\n", body.find("\n") + 1) + 1
        hunks = "\n" + block[hunks_at:]
        added, removed = hunks.count("\n+"), hunks.count("\n-")
    binary = body.startswith(("GIT binary patch", "Binary files "))
    if binary:
        hunks_at = len(header) + 1
    return FileDiff(old_path, new_path, block, binary, rename, mode_change, added, removed, hunks_at)


def _strip_prefix(path: str | None, prefix: str) -> str | None:
    if path is None or path == "/dev/null":
        return None
    return path[len(prefix) :] if path.startswith(prefix) else path


def _header_paths(rest: str) -> tuple[str | None, str | None]:
    """Both paths of a `diff --git a/X b/Y` header (X == Y unless renamed; renames also say it elsewhere)."""
    half = (len(rest) - 1) // 2
    if rest[half : half + 3] == " b/" and rest[2:half] == rest[half + 3 :] and '"' not in rest:
        return rest[2:half], rest[2:half]  # the common "a/P b/P" form
    if rest.startswith('"'):
        first, _, second = _split_quoted(rest)
    else:
        first, _, second = rest.partition(' "') if ' "' in rest else rest.partition(" b/")
        second = second if second.startswith(("b/", '"')) else "b/" + second
    return _strip_prefix(_unquote(first), "a/"), _strip_prefix(_unquote(second), "b/")


def _split_quoted(text: str) -> tuple[str, str, str]:
    index = 1
    while index < len(text) and text[index] != '"':
        index += 2 if text[index] == "\\" else 1
    return text[: index + 1], " ", text[index + 2 :]


_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _unquote(text: str) -> str:
    r"""A path as git prints it, C-quoted when it holds unusual bytes, back to the path.

    >>> _unquote('"a/caf\\303\\251 \\"x\\".py"')
    'a/café "x".py'
    >>> _unquote("b/plain.py\t")
    'b/plain.py'
    """
    text = text.rstrip("\t")  # git appends a tab to ---/+++ names that contain spaces
    if not text.startswith('"'):
        return text
    out = bytearray()
    index, body = 0, text[1:-1]
    while index < len(body):
        char = body[index]
        if char != "\\":
            out += char.encode("utf-8", "surrogateescape")
            index += 1
        elif body[index + 1] in "01234567":
            out.append(int(body[index + 1 : index + 4], 8))
            index += 4
        else:
            out.append(_ESCAPES.get(body[index + 1], ord(body[index + 1])))
            index += 2
    return out.decode("utf-8", "surrogateescape")


# -- the split -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SplitPatch:
    """A change cut into the gold code patch and the test patch, plus what was left out and why."""

    code: tuple[FileDiff, ...]
    tests: tuple[FileDiff, ...]
    dropped: tuple[tuple[str, str], ...] = ()
    """(path, reason) for every file left out of both patches: "docs" or "mode_only"."""
    docs: tuple[FileDiff, ...] = ()
    """The docs and changelog diffs that were dropped: not part of the task, read by the change classifier."""

    @property
    def code_patch(self) -> str:
        return "".join(diff.text for diff in self.code)

    @property
    def test_patch(self) -> str:
        return "".join(diff.text for diff in self.tests)

    @property
    def code_lines(self) -> int:
        return sum(diff.added + diff.removed for diff in self.code)

    @property
    def test_lines(self) -> int:
        return sum(diff.added + diff.removed for diff in self.tests)

    @functools.cached_property
    def fingerprint(self) -> str:
        """Hash of the normalised change (paths and changed lines, not line numbers, context or blob ids)."""
        digest = hashlib.sha256()
        for diff in sorted((*self.code, *self.tests), key=lambda d: d.path):
            digest.update(f"\0{diff.old_path}\0{diff.new_path}\0".encode("utf-8", "surrogateescape"))
            body = diff.text[diff.hunks_at :] if diff.hunks_at >= 0 else ""
            if not diff.binary:  # only the lines a hunk adds or removes, without trailing blanks
                body = "\n".join(_CHANGED_LINE.findall(body))
            digest.update(body.encode("utf-8", "surrogateescape"))
        return digest.hexdigest()


_CHANGED_LINE = re.compile(r"^([-+].*?)[ \t\r]*$", re.MULTILINE)


def split_patch(patch: str, rules: PathRules) -> SplitPatch:
    """Cut git's patch of one change into code and test patches (see the module docstring for the rules)."""
    code: list[FileDiff] = []
    tests: list[FileDiff] = []
    dropped: list[tuple[str, str]] = []
    docs: list[FileDiff] = []
    for diff in parse_file_diffs(patch):
        if diff.mode_only:
            dropped.append((diff.path, "mode_only"))
            continue
        kind = rules.kind(diff.path)
        if kind is PathKind.TEST:
            tests.append(diff.without_mode_lines())
        elif kind is PathKind.DOCS:
            dropped.append((diff.path, "docs"))
            docs.append(diff)
        else:
            code.append(diff.without_mode_lines())
    return SplitPatch(tuple(code), tuple(tests), tuple(dropped), tuple(docs))
