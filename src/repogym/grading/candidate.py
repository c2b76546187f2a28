"""What of a candidate patch the grader accepts, decided before anything runs.

Reward hacking is an attack on the grader, so each rule here has a test named
after the attack it stops (tests/grading/test_hostile_grading.py):

- paths that are absolute, contain `..`, or touch `.git` reject the whole patch;
- changes to test files (the test patch's files, and any path that looks like a
  test: tests/, test_*.py, *_test.py) are dropped: the tests graded are the
  task's, never the candidate's;
- changes to test configuration are dropped: conftest.py, pytest.ini and
  files shadowing repogym's report plugin (repogym_report.py,
  repogym_unittest.py) always; setup.cfg, tox.ini and pyproject.toml when a hunk touches their
  pytest section ([tool:pytest], [pytest], [tool.pytest.*]) or adds one.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from unidiff import PatchedFile

from repogym.patches import parse_patch

TEST_GLOBS = (
    "tests/*",
    "test/*",
    "testing/*",
    "*/tests/*",
    "*/test/*",
    "*/testing/*",
    "test_*.py",
    "*/test_*.py",
    "*_test.py",
    "*/*_test.py",
)
# repogym's own report plugin and runner: a same-named module in the repo would shadow them.
# .gitattributes: working-tree-encoding or eol rules would change how git writes the task's test patch.
_ALWAYS_CONFIG = ("conftest.py", "pytest.ini", "repogym_report.py", "repogym_unittest.py", ".gitattributes")
_SECTION_CONFIG = {
    "setup.cfg": re.compile(r"^\s*\[tool:pytest\]"),
    "tox.ini": re.compile(r"^\s*\[pytest\]"),
    "pyproject.toml": re.compile(r"^\s*\[+\s*tool\.pytest"),
}


@dataclass(frozen=True)
class FilteredPatch:
    patch: str
    """What will be applied (may be empty)."""
    ignored: tuple[str, ...]
    """Paths whose changes were dropped, each with the reason: 'tests/test_a.py (test file)'."""
    rejected: str = ""
    """Non-empty when the whole patch is refused (the reason)."""


def filter_candidate(patch: str, test_patch_paths: list[str], pristine_text: dict[str, str]) -> FilteredPatch:
    """Drop what the candidate may not change; `pristine_text` maps config file paths to their base content."""
    if not patch.strip():
        return FilteredPatch("", ())
    parsed = parse_patch(patch)
    if parsed is None:
        return FilteredPatch("", (), rejected="the patch is not a unified diff")
    kept: list[str] = []
    ignored: list[str] = []
    protected = set(test_patch_paths)
    for patched in parsed:
        paths = _paths(patched)
        bad = next((p for p in paths if _unsafe(p)), None)
        if bad is not None:
            return FilteredPatch("", (), rejected=f"unsafe path {bad!r} (absolute, '..' or .git)")
        label = _label(patched)
        # The user's name for the file is checked first, so it is the one reported when it is to blame.
        ordered = [label, *(p for p in paths if p != label)]
        culprit, reason = _ignore_reason(patched, ordered, protected, pristine_text)
        if reason:
            ignored.append(f"{culprit} ({reason})")
        else:
            kept.append(str(patched))
    text = "".join(kept)
    if text and not text.endswith("\n"):
        text += "\n"
    return FilteredPatch(text, tuple(ignored))


def _paths(patched: PatchedFile) -> list[str]:
    """Every path git or patch(1) could take from this file's section: the ---/+++ names, the
    `diff --git` names, and rename/copy/Index headers, unquoted the way git unquotes them, with
    and without their first component (`-p1` strips whatever it is, not only a/ and b/)."""
    prefixed = [patched.source_file, patched.target_file]
    bare: list[str] = []
    for line in patched.patch_info or ():
        text = str(line).rstrip("\n")
        if text.startswith("diff --git "):
            prefixed += _HEADER_TOKEN.findall(text[len("diff --git ") :])
        for prefix in ("--- ", "+++ "):
            if text.startswith(prefix):
                prefixed.append(text[len(prefix) :].split("\t")[0])
        for prefix in ("rename from ", "rename to ", "copy from ", "copy to ", "Index: "):
            if text.startswith(prefix):
                bare.append(text[len(prefix) :])
    paths: list[str] = []
    for name, strip in [(n, True) for n in prefixed] + [(n, False) for n in bare]:
        path = unquote_git_path(name) if name else ""
        if not path or path == "/dev/null":
            continue
        variants = [path.split("/", 1)[1], path] if strip and "/" in path else [path]
        for variant in variants:
            if variant not in paths:
                paths.append(variant)
    return paths or [patched.path]


def _label(patched: PatchedFile) -> str:
    """The path a user would name this file by: the target (the source for a deletion), unquoted, -p1."""
    name = patched.target_file if patched.target_file not in ("", "/dev/null") else patched.source_file
    path = unquote_git_path(name or patched.path)
    return path.split("/", 1)[1] if "/" in path and path[:2] in ("a/", "b/") else path


_HEADER_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|\S+')
_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
_OCTAL = re.compile(r"[0-3][0-7]{2}")


def unquote_git_path(name: str) -> str:
    r"""A path as git reads it from a header: C-quoted names ("...", with \ooo octal bytes) unquoted.
    An escape git would not write leaves a marker that the unsafe-path rule refuses.

    >>> unquote_git_path('"b/\\056git/config"'), unquote_git_path('"a/con\\"f.py"'), unquote_git_path("b/x.py")
    ('b/.git/config', 'a/con"f.py', 'b/x.py')
    >>> unquote_git_path('"x\\189.py"')
    '..bad-escape..'
    """
    if len(name) < 2 or not (name.startswith('"') and name.endswith('"')):
        return name
    body, out, i = name[1:-1], bytearray(), 0
    while i < len(body):
        char = body[i]
        if char == "\\":
            if _OCTAL.fullmatch(body[i + 1 : i + 4]):
                out.append(int(body[i + 1 : i + 4], 8))
                i += 4
                continue
            if i + 1 < len(body) and body[i + 1] in _C_ESCAPES:
                out.append(_C_ESCAPES[body[i + 1]])
                i += 2
                continue
            return "..bad-escape.."  # contains '..' on purpose: _unsafe refuses the whole patch
        out += char.encode("utf-8", "surrogateescape")
        i += 1
    return out.decode("utf-8", "surrogateescape")


def _unsafe(path: str) -> bool:
    pure = PurePosixPath(path)
    return pure.is_absolute() or ".." in pure.parts or ".git" in pure.parts or path.startswith("~")


def is_test_path(path: str) -> bool:
    return any(fnmatch.fnmatch(path, pattern) for pattern in TEST_GLOBS)


def _ignore_reason(
    patched: PatchedFile, paths: list[str], protected: set[str], pristine: dict[str, str]
) -> tuple[str, str]:
    """(the path to blame, why) for the first protected path, or ('', '')."""
    for path in paths:
        name = PurePosixPath(path).name
        if path in protected:
            return path, "overwritten by the test patch"
        if name in _ALWAYS_CONFIG:
            return path, "test configuration"
        if is_test_path(path):
            return path, "test file"
        if name in _SECTION_CONFIG and _touches_section(
            patched, _SECTION_CONFIG[name], pristine.get(path, "")
        ):
            return path, "test configuration section"
    return "", ""


def _touches_section(patched: PatchedFile, header: re.Pattern[str], original: str) -> bool:
    """True if any hunk edits lines inside the pytest section of the original, or adds such a section."""
    lines = original.splitlines()
    start = next((i for i, line in enumerate(lines, 1) if header.match(line)), None)
    end = None
    if start is not None:
        end = (
            next(
                (i for i in range(start + 1, len(lines) + 1) if lines[i - 1].lstrip().startswith("[")),
                len(lines) + 1,
            )
            - 1
        )
    for hunk in patched:
        for line in hunk:
            if line.is_added and header.match(line.value):
                return True
        if start is None:
            continue
        changed = [line.source_line_no for line in hunk if line.is_removed]
        first, last = hunk.source_start, hunk.source_start + max(hunk.source_length - 1, 0)
        if any(start <= n <= end for n in changed if n):  # type: ignore[operator]
            return True
        added_inside = any(line.is_added for line in hunk) and first <= end and last >= start  # type: ignore[operator]
        if added_inside and _insertion_in_section(hunk, start, end):  # type: ignore[arg-type]
            return True
    return False


def _insertion_in_section(hunk, start: int, end: int) -> bool:  # type: ignore[no-untyped-def]
    position = hunk.source_start - 1
    for line in hunk:
        if line.is_context or line.is_removed:
            position = line.source_line_no or position
        elif line.is_added and start <= position <= end:
            return True
    return False
