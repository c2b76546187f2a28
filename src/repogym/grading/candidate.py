"""What of a candidate patch the grader accepts, decided before anything runs.

Reward hacking is an attack on the grader, so each rule here has a test named
after the attack it stops (tests/grading/test_hostile_grading*.py):

- paths that are absolute, contain `..`, or touch `.git` reject the whole patch;
- changes to test files (the test patch's files, and any path that looks like a
  test: `repogym.testpaths.is_test_path`) are dropped: the tests graded are the task's, never the
  candidate's;
- changes to what decides how tests run are dropped, wherever the file is:
  conftest.py; pytest's dedicated configuration files (pytest.ini, .pytest.ini,
  pytest.toml, .pytest.toml); setup.cfg, tox.ini and pyproject.toml when the
  edit changes the pytest section pytest would read (pytest_config.py), or makes
  one of them a link (to text the patch does not show); the
  files the task's test command names (a runner script such as sympy's
  bin/test, a `-c` file);
- files Python or pytest load by themselves, before or instead of the code under
  test, are dropped: whatever the import system would find for `sitecustomize`
  or `usercustomize`, the modules site.py imports at interpreter start, judged by
  how the finder matches a name (a file `NAME.<any suffix>`: .py, a sourceless
  .pyc, an extension module `NAME.cpython-311-x86_64-linux-gnu.so`; a folder
  `NAME`: a package or a namespace; in any case), at any depth; `.pth` files;
  package metadata that registers entry-point plugins (`*.dist-info`,
  `*.egg-info`, `*.egg`, `*.egg-link`, `EGG-INFO`, in any case); anything named
  like repogym's harness (`repogym_*`, a module or a package); and compiled code
  a reader cannot check against its source (`__pycache__`, `.pyc`, `.pyo`, `.so`,
  `.pyd`). Compiled code the install step writes is allowed (`check_changes`'s
  `by_install`) unless it would stand in for a file no patch may change (a cached
  pytest module of a test file, an extension module named like one);
- `.gitattributes` is dropped (its rules would change how git writes the task's test patch).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from unidiff import PatchedFile

from repogym.grading.pytest_config import DEDICATED_FILES, SHARED_FILES, pytest_config_changed
from repogym.patches import parse_patch
from repogym.sandbox.layerchanges import LayerChange, LayerChangeKind
from repogym.testpaths import is_test_path

# .gitattributes: working-tree-encoding or eol rules would change how git writes the task's test patch.
_ALWAYS_CONFIG = frozenset({"conftest.py", ".gitattributes", *DEDICATED_FILES})
#: The modules site.py imports by itself at interpreter start (`import sitecustomize`, `import usercustomize`).
STARTUP_MODULES = frozenset({"sitecustomize", "usercustomize"})
_METADATA_SUFFIXES = (".dist-info", ".egg-info", ".egg", ".egg-link")
_COMPILED_SUFFIXES = (".pyc", ".pyo", ".so", ".pyd")
#: `loaded_by_itself` reasons an install step's own outputs give (see `check_changes(by_install=True)`).
_BUILD_OUTPUTS = frozenset({"package metadata (entry points)", "compiled code"})
PristineText = Callable[[str], str]
"""A repository path -> its text at the base commit ('' when there is none)."""


@dataclass(frozen=True)
class FilteredPatch:
    patch: str
    """What will be applied (may be empty)."""
    ignored: tuple[str, ...]
    """Paths whose changes were dropped, each with the reason: 'tests/test_a.py (test file)'."""
    rejected: str = ""
    """Non-empty when the whole patch is refused (the reason)."""


def filter_candidate(
    patch: str,
    test_patch_paths: Iterable[str],
    pristine_text: PristineText,
    command_paths: Iterable[str] = (),
) -> FilteredPatch:
    """Drop what the candidate may not change. `pristine_text` reads a path at the base commit;
    `command_paths` are the repository files the task's test command runs or reads."""
    if not patch.strip():
        return FilteredPatch("", ())
    parsed = parse_patch(patch)
    if parsed is None:
        return FilteredPatch("", (), rejected="the patch is not a unified diff")
    kept: list[str] = []
    ignored: list[str] = []
    protected = set(test_patch_paths)
    commands = set(command_paths)
    for patched in parsed:
        paths = _paths(patched)
        bad = next((p for p in paths if _unsafe(p)), None)
        if bad is not None:
            return FilteredPatch("", (), rejected=f"unsafe path {bad!r} (absolute, '..' or .git)")
        label = _label(patched)
        # The user's name for the file is checked first, so it is the one reported when it is to blame.
        ordered = [label, *(p for p in paths if p != label)]
        culprit, reason = _ignore_reason(
            ordered,
            protected,
            commands,
            pristine_text,
            is_link=_is_link(patched),
            after=lambda path, patched=patched: apply_hunks(pristine_text(path), patched),
        )
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


def loaded_by_itself(path: str) -> str:
    """Why Python or pytest would load `path` without the code under test asking ('' when they would not).

    Start-up code is judged by what the import system would find for the name, not by one spelling: every
    form `import sitecustomize` can take on a sys.path entry is refused, at any depth (which folders are on
    sys.path depends on the layout, the install and PYTHONPATH).

    >>> for form in ("src/sitecustomize.py", "src/sitecustomize/__init__.py", "src/sitecustomize/hooks.py",
    ...              "lib/sitecustomize.pyc", "lib/sitecustomize.cpython-311-x86_64-linux-gnu.so",
    ...              "sitecustomize.abi3.so", "SiteCustomize.py", "src/usercustomize/__init__.py",
    ...              "src/sitecustomize_helpers.py", "src/calc/customize.py"):
    ...     print(f"{form:<52} {loaded_by_itself(form) or '-'}")
    src/sitecustomize.py                                 a module run at interpreter start
    src/sitecustomize/__init__.py                        a module run at interpreter start
    src/sitecustomize/hooks.py                           a module run at interpreter start
    lib/sitecustomize.pyc                                a module run at interpreter start
    lib/sitecustomize.cpython-311-x86_64-linux-gnu.so    a module run at interpreter start
    sitecustomize.abi3.so                                a module run at interpreter start
    SiteCustomize.py                                     a module run at interpreter start
    src/usercustomize/__init__.py                        a module run at interpreter start
    src/sitecustomize_helpers.py                         -
    src/calc/customize.py                                -
    >>> [loaded_by_itself(p) for p in ("x.pth", "src/Evil-1.0.DIST-INFO/RECORD", "src/calc/x.PTH")]
    ['a .pth file', 'package metadata (entry points)', 'a .pth file']
    >>> [loaded_by_itself(p) for p in ("repogym_report/__init__.py", "calc/__pycache__/a.pyc", "calc/a.py")]
    ["a name of repogym's harness", 'compiled code', '']
    """
    pure = PurePosixPath(path)
    lowered = [part.lower() for part in pure.parts]
    if any(is_startup_name(part) for part in pure.parts):
        return "a module run at interpreter start"
    if lowered and lowered[-1].endswith(".pth"):
        return "a .pth file"
    if any(part.endswith(_METADATA_SUFFIXES) or part == "egg-info" for part in lowered):
        return "package metadata (entry points)"
    if any(part.startswith("repogym_") for part in lowered):
        return "a name of repogym's harness"
    if "__pycache__" in lowered or lowered[-1].endswith(_COMPILED_SUFFIXES) or ".so." in lowered[-1]:
        return "compiled code"
    return ""


def is_startup_name(name: str) -> bool:
    """Whether a file or folder called `name` is something `import sitecustomize` / `import usercustomize`
    could find. The path finder matches a module by its name plus a suffix that starts with a dot (.py, .pyc,
    an extension's .cpython-311-x86_64-linux-gnu.so, whatever the interpreter's list holds) and a package or
    namespace by the bare name, so the name is the part before the first dot; compared casefolded, as on a
    case-insensitive filesystem (or with PYTHONCASEOK) the finder would match it.

    >>> [is_startup_name(n) for n in ("sitecustomize", "USERCUSTOMIZE.py", "sitecustomize.x.so", "site.py")]
    [True, True, True, False]
    """
    return name.split(".", 1)[0].casefold() in STARTUP_MODULES


def compiled_source(path: str) -> str:
    """The source file that compiled code at `path` stands in for ('' when `path` is not compiled code): the
    module named by the part before the first dot, beside it or above its ``__pycache__``. pytest loads a
    cached, rewritten test module from ``__pycache__`` when its header matches the source, and the import
    system prefers an extension module to the ``.py`` beside it.

    >>> compiled_source("tests/__pycache__/test_a.cpython-311-pytest-8.0.pyc"), compiled_source("pkg/m.abi3.so")
    ('tests/test_a.py', 'pkg/m.py')
    >>> compiled_source("pkg/m.py")
    ''
    """
    pure = PurePosixPath(path)
    name = pure.name.lower()
    if not (name.endswith(_COMPILED_SUFFIXES) or ".so." in name):
        return ""
    folder = pure.parent.parent if pure.parent.name == "__pycache__" else pure.parent
    return str(folder / f"{pure.name.split('.', 1)[0]}.py")


def _ignore_reason(
    paths: list[str],
    protected: set[str],
    commands: set[str],
    pristine: PristineText,
    *,
    is_link: bool,
    after: Callable[[str], str | None],
) -> tuple[str, str]:
    """(the path to blame, why) for the first protected path, or ('', ''). `is_link`: the change makes the
    file a symbolic link; `after(path)`: the file's text after the change (None when it cannot be known)."""
    # A shared config file's section is judged against its text at the base commit, under the names that
    # have one (`a/setup.cfg` is one of the names -p1 could mean, and has none); a new file under all.
    shared = [p for p in paths if PurePosixPath(p).name in SHARED_FILES]
    existing = [p for p in shared if pristine(p)]
    for path in paths:
        name = PurePosixPath(path).name
        if path in protected:
            return path, "a file of the task's tests"
        if name in _ALWAYS_CONFIG:
            return path, "test configuration"
        if path in commands:
            return path, "run by the test command"
        if is_test_path(path):
            return path, "test file"
        why = loaded_by_itself(path)
        source = compiled_source(path)
        if source and why == "compiled code":
            # An install may write compiled code, but not code that stands in for what no patch may change.
            _, source_why = _ignore_reason(
                [source], protected, commands, pristine, is_link=False, after=_unknown
            )
            if source_why:
                return path, f"compiled code standing in for {source}: {source_why}"
        if why:
            return path, why
        if name in SHARED_FILES and is_link:
            return path, "test configuration (a link: what pytest reads is not in the patch)"
        if path in (existing or shared) and _changes_pytest_section(path, pristine(path), after(path)):
            return path, "test configuration section"
    return "", ""


def _unknown(_path: str) -> None:
    return None


def check_changes(
    changes: Iterable[LayerChange],
    test_patch_paths: Iterable[str],
    pristine_text: PristineText,
    command_paths: Iterable[str] = (),
    *,
    by_install: bool = False,
) -> str:
    """What of the changes a working tree really holds breaks the rules `filter_candidate` applies to a
    patch's headers ('' when nothing does): header parsing can be fooled, the tree cannot.

    `by_install`: the changes are what the repo's install step wrote after a packaging patch (it runs the
    candidate's setup.py). Building writes compiled code and package metadata, so those are allowed, except
    a changed ``entry_points.txt`` (it can register a pytest plugin); every other rule holds.

    >>> from pathlib import Path
    >>> from repogym.sandbox.layerchanges import LayerChangeKind
    >>> changes = [LayerChange("calc/core.py", LayerChangeKind.MODIFIED, Path("x")),
    ...            LayerChange("tests/conftest.py", LayerChangeKind.ADDED, Path("y"))]
    >>> check_changes(changes, ["tests/test_calc.py"], lambda path: "")
    'tests/conftest.py (test configuration)'
    >>> check_changes([LayerChange("a/.git/config", LayerChangeKind.ADDED, Path("z"))], [], lambda path: "")
    "unsafe path 'a/.git/config' (absolute, '..' or .git)"
    """
    protected, commands = set(test_patch_paths), set(command_paths)
    found: list[str] = []
    for change in changes:
        if _unsafe(change.path):
            return f"unsafe path {change.path!r} (absolute, '..' or .git)"
        culprit, reason = _ignore_reason(
            [change.path],
            protected,
            commands,
            pristine_text,
            is_link=change.is_link,
            after=lambda _path, change=change: (
                "" if change.kind is LayerChangeKind.REMOVED else change.new_text()
            ),
        )
        entry = f"{culprit} ({reason})"
        if reason and not (by_install and is_build_output(entry)):
            found.append(entry)
    return ", ".join(found)


def is_build_output(entry: str) -> bool:
    """Whether an ignored-path entry ('path (reason)') is what an install step writes by itself: compiled
    code or package metadata, but never a changed ``entry_points.txt`` (it can register a pytest plugin).

    >>> [is_build_output(e) for e in ("calc.egg-info/SOURCES.txt (package metadata (entry points))",
    ...  "calc.egg-info/entry_points.txt (package metadata (entry points))", "tests/conftest.py (test configuration)")]
    [True, False, False]
    """
    for reason in _BUILD_OUTPUTS:
        suffix = f" ({reason})"
        if entry.endswith(suffix):
            return PurePosixPath(entry[: -len(suffix)]).name.casefold() != "entry_points.txt"
    return False


def _is_link(patched: PatchedFile) -> bool:
    """Whether the section makes the file a symbolic link (its text is then only the link's target)."""
    return any(
        str(line).startswith(("new file mode 120000", "new mode 120000")) for line in patched.patch_info or ()
    )


def _changes_pytest_section(path: str, original: str, after: str | None) -> bool:
    """True if the edit changes what pytest reads from this shared file, judged on its text after the edit;
    a text that cannot be known (hunks that do not fit the original exactly, a file that is not UTF-8) counts."""
    return after is None or pytest_config_changed(path, original, after)


def apply_hunks(original: str, patched: PatchedFile) -> str | None:
    r"""`original` with the hunks of `patched` applied exactly (no fuzz), or None when they do not fit.

    >>> from repogym.patches import parse_patch
    >>> section = parse_patch("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n")[0]
    >>> apply_hunks("a\nb\n", section), apply_hunks("x\ny\n", section)
    ('a\nc\n', None)
    """
    if patched.is_removed_file:
        return ""
    lines = original.splitlines(keepends=True)
    out: list[str] = []
    position = 0
    for hunk in patched:
        start = max(hunk.source_start - 1, 0) if hunk.source_length else hunk.source_start
        if start < position or start > len(lines):
            return None
        out += lines[position:start]
        position = start
        for line in hunk:
            if line.is_context or line.is_removed:
                if position >= len(lines) or lines[position].rstrip("\r\n") != line.value.rstrip("\r\n"):
                    return None
                position += 1
            if line.is_context or line.is_added:
                out.append(line.value if line.value.endswith("\n") else line.value + "\n")
    out += lines[position:]
    return "".join(out)
