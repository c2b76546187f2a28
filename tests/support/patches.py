"""Patches written by hand, as a candidate (or an attacker) would hand them to the grader.

Guarantees: each builder returns one git-style file section (`diff --git ...`), ready to concatenate with
others; header paths are written as given, so a test can spell one as git would quote it.
Not guaranteed: that git accepts the result: hostile tests build patches git refuses on purpose.

>>> print(new_file("src/a.py", "x = 1\\n"), end="")
diff --git a/src/a.py b/src/a.py
new file mode 100644
--- /dev/null
+++ b/src/a.py
@@ -0,0 +1,1 @@
+x = 1
>>> new_file('"conftest.py"', "").splitlines()[0]
'diff --git "a/conftest.py" "b/conftest.py"'
"""

from __future__ import annotations

import difflib
from pathlib import Path

from repogym.task import Task
from repogym.testing import BUGGY_SOURCE, toy_patch


def new_file(header_path: str, text: str) -> str:
    """A section creating `header_path` with `text`; a path starting with '"' is a C-quoted git header."""
    lines = text.splitlines()
    body = "".join(f"+{line}\n" for line in lines)
    a, b = _side("a", header_path), _side("b", header_path)
    return f"diff --git {a} {b}\nnew file mode 100644\n--- /dev/null\n+++ {b}\n@@ -0,0 +1,{len(lines)} @@\n{body}"


def _side(prefix: str, path: str) -> str:
    if path.startswith('"'):
        return f'"{prefix}/{path[1:]}'
    return f"{prefix}/{path}"


def edit(path: str, old: str, new: str) -> str:
    """The unified diff (difflib's) from `old` to `new` at `path`; an empty `old` is a new file (/dev/null).

    >>> print(edit("a.py", "x = 1\\n", "x = 2\\n"), end="")
    diff --git a/a.py b/a.py
    --- a/a.py
    +++ b/a.py
    @@ -1 +1 @@
    -x = 1
    +x = 2
    """
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{path}" if old else "/dev/null",
        tofile=f"b/{path}",
    )
    return f"diff --git a/{path} b/{path}\n" + "".join(lines)


def deletion(repo: Path, path: str) -> str:
    """A section deleting `path` of `repo`'s working tree, line by line."""
    lines = (repo / path).read_text().splitlines()
    body = "".join(f"-{line}\n" for line in lines)
    return (
        f"diff --git a/{path} b/{path}\ndeleted file mode 100644\n--- a/{path}\n+++ /dev/null\n"
        f"@@ -1,{len(lines)} +0,0 @@\n{body}"
    )


def buggy_with(task: Task, extra: str) -> str:
    """A toy-task candidate that leaves the bug in place and appends `extra` to the module the tests import."""
    return toy_patch(task, "src/calc/__init__.py", BUGGY_SOURCE + "\n" + extra)
