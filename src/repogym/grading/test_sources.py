"""A task's trusted test sources: the repository as its tests see it, and which files hold its tests.

Trusted means what the candidate cannot change: the base commit's files with the task's test patch applied,
read on the host from the pristine checkout (never the candidate's tree). The grader uses it to protect the
files that hold the FAIL_TO_PASS / PASS_TO_PASS tests from the candidate like the test patch's files (a
synthetic task's tests are files of the repository, named as that repository names them), to find where
the canary may be planted (canary.py), and to read the tests' xfail marks (xfail_marks.py).

Test ids map to files by framework: pytest node ids name their file (``path::Class::test``), unittest ids
are dotted module paths (the longest prefix that is a file), django's ``test_x (app.tests.T)`` is looked up
from the root and from ``tests/`` (Django's runtests.py), sympy's bare names are searched for in the given
files (the test patch's).

Guarantees: only the pristine checkout and the test patch are read, never through a link that leaves the
checkout; a file the test patch removes, or that is not there, is no test file; a doctest's id (it names
the module it is in, code under test) never makes its module a test file.

Not guaranteed: a test patch hunk that git applies at an offset is read as the base file plus the hunk's
added lines (enough to see a mark, not the file's exact text); a unittest module outside the root's
package paths (a ``src/`` layout) or a django app outside the root and ``tests/`` is not found, so its file
is protected only by its path rules and gets no canary.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from unidiff import PatchedFile

from repogym.grading.candidate import apply_hunks
from repogym.patches import parse_patch

ReadText = Callable[[str], "str | None"]
"""A repository path -> its text after the test patch (None when it is not a readable file then)."""

_UNITTEST_LIKE = frozenset({"unittest", "django"})


def after_test_patch(pristine: Path, test_patch: str) -> ReadText:
    """A reader of the repository as the tests see it: `pristine` (the base commit's checkout, never read
    through a link that leaves it) with `test_patch` applied, file by file, exactly.

    >>> import tempfile; root = Path(tempfile.mkdtemp()); _ = (root / "t.py").write_text("a = 1\\n")
    >>> read = after_test_patch(root, "--- a/t.py\\n+++ b/t.py\\n@@ -1 +1 @@\\n-a = 1\\n+a = 2\\n")
    >>> read("t.py"), read("missing.py")
    ('a = 2\\n', None)
    """
    sections = (
        {section.path: section for section in parse_patch(test_patch) or []} if test_patch.strip() else {}
    )
    root = pristine.resolve()

    def base(path: str) -> str | None:
        try:
            target = (root / path).resolve()
            if not target.is_relative_to(root) or not target.is_file():
                return None
            return target.read_text(encoding="utf-8")
        except (OSError, RuntimeError, UnicodeDecodeError):
            return None

    def read(path: str) -> str | None:
        section = sections.get(path)
        if section is None:
            return base(path)
        return _patched(section, base(_source_path(section)))

    return read


def _source_path(section: PatchedFile) -> str:
    source = section.source_file or ""
    return source[2:] if source.startswith(("a/", "b/")) else section.path


def _patched(section: PatchedFile, before: str | None) -> str | None:
    if section.is_removed_file:
        return None
    after = apply_hunks(before or "", section)
    if after is None:
        # The test patch applies with an offset (git apply allows one): the added lines are what can mark.
        after = (before or "") + "".join(
            str(line.value) for hunk in section for line in hunk if line.is_added
        )
    return after


def required_test_files(framework: str, test_ids: Iterable[str], read: ReadText) -> list[str]:
    """The files that hold `test_ids` (pytest node ids ``path::...``; unittest / django dotted ids mapped to
    module files), those that exist after the test patch, in first-seen order. A doctest's id names the
    module it is in (``src/pkg/mod.py::pkg.mod.func``), which is code under test, not a test file: left out.

    >>> files = {"tests/test_a.py": "", "pkg/tests/test_b.py": "", "pkg/mod.py": ""}
    >>> required_test_files("pytest", ["tests/test_a.py::test_x", "tests/gone.py::test_y"], files.get)
    ['tests/test_a.py']
    >>> required_test_files("pytest", ["pkg/mod.py::pkg.mod.func"], files.get)
    []
    >>> required_test_files("unittest", ["pkg.tests.test_b.T.test_y"], files.get)
    ['pkg/tests/test_b.py']
    """
    found: list[str] = []
    for test_id in test_ids:
        for path, names in locate(framework, test_id, read):
            if path not in found and all(name.isidentifier() for name in names):
                found.append(path)
    return found


def locate(
    framework: str, test_id: str, read: ReadText, candidates: Sequence[str] = ()
) -> list[tuple[str, tuple[str, ...]]]:
    """Where `test_id` is defined: (file, the names from the module down to the test) for each file that
    exists and can hold it. `candidates`: the files to search for ids that name no file (sympy's bare names).

    >>> locate("pytest", "t/test_a.py::TestC::test_x[1-2]", {"t/test_a.py": ""}.get)
    [('t/test_a.py', ('TestC', 'test_x'))]
    >>> locate("django", "test_x (app.tests.T)", {"tests/app/tests.py": ""}.get)
    [('tests/app/tests.py', ('T', 'test_x'))]
    """
    if framework in _UNITTEST_LIKE:
        dotted = _django_dotted(test_id) if framework == "django" else test_id
        roots = ("", "tests/") if framework == "django" else ("",)
        return _dotted_location(dotted, read, roots)
    if "::" in test_id or test_id.endswith(".py"):
        path, _, rest = test_id.partition("::")
        names = tuple(part for part in rest.split("[", 1)[0].split("::") if part and part != "()")
        return [(path, names)] if read(path) is not None else []
    name = test_id.split("[", 1)[0].strip()
    return [(path, (name,)) for path in candidates if name.isidentifier() and read(path) is not None]


def _django_dotted(test_id: str) -> str:
    """``test_x (app.tests.T)`` (Django < 5) or ``test_x (app.tests.T.test_x)`` -> app.tests.T.test_x."""
    match = re.fullmatch(r"(\w+) \(([\w.]+)\)(?: .*)?", test_id.strip())
    if match is None:
        return test_id
    name, dotted = match.groups()
    return dotted if dotted.endswith("." + name) else f"{dotted}.{name}"


def _dotted_location(dotted: str, read: ReadText, roots: Sequence[str]) -> list[tuple[str, tuple[str, ...]]]:
    parts = dotted.split(".")
    if not all(part.isidentifier() for part in parts):
        return []
    for cut in range(len(parts) - 1, 0, -1):  # the longest module prefix that is a file
        for root in roots:
            path = root + "/".join(parts[:cut]) + ".py"
            if read(path) is not None:
                return [(path, tuple(parts[cut:]))]
    return []
