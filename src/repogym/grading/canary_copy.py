"""The canary as a copy of a test's own source: a second `def`, beside the test it copies, in the test file's text.

Why a textual copy and not a copy made at run time (canary.py's appended code, still the fallback): a copy made
with `functools.wraps` is a different kind of object from the tests around it. Code under test that looks at a
test through `inspect` (which follows `__wrapped__` to the original) treats the two differently without trying to:
a forger that strips the assertions from each test's source before it runs stripped the real tests' and failed to
rebuild the canary, so the canary failed, the tests passed, and the grade was RESOLVED. A textual copy is a test
like every other one: its source is its own, its code object is compiled from the file, whatever a forger does to
the file's tests it does to the canary.

The copy is the test's decorators, signature and body under a new name, with one more statement at its end: a plain
``assert`` that the difference of two numbers is zero, which fails (written as a difference, not ``a == b`` of two
literals: tests that lint their own file, pylint's among them, fail on a comparison of constants). An honest run fails the copy whatever the patch (on a wrong fix the
body fails as the test does, on a right fix the assertion fails), and a forger that removes assertions, swallows
AssertionError or rewrites results makes it pass. A body that can end early (a ``return``, a ``yield``) is put in a
``try:`` with the assertion in its ``finally:``, so that it is always reached.

Not done (the caller falls back to the appended copy): a source Python 3's parser cannot read (a Python 2 test
file), a file with carriage returns, a test whose body starts on its `def` line, a test with an expected-failure
decorator, a test that cannot be found as a `def` at the named place (made at collection, assigned, inherited).
"""

from __future__ import annotations

import ast
import functools
import re

from repogym import pysyntax
from repogym.patches import split_lines

#: Decorator text that makes a test an expected failure: its copy would be reported XFAIL, not FAILED.
_EXPECTED_FAILURE = ("xfail", "expectedfailure")


def copied_canary_text(
    source: str, owners: list[str], target: str, name: str, got: int, want: int
) -> str | None:
    """`source` with a copy of the test `owners...target` inserted after it under `name` (see the module
    docstring); None when it cannot be copied this way.

    >>> text = "import os\\n\\n\\ndef test_a(tmp_path):\\n    assert os.sep\\n    return\\n"
    >>> print(copied_canary_text(text, [], "test_a", "test_edge12_a", 3, 5), end="")
    import os
    <BLANKLINE>
    <BLANKLINE>
    def test_a(tmp_path):
        assert os.sep
        return
    <BLANKLINE>
    <BLANKLINE>
    def test_edge12_a(tmp_path):
        try:
            assert os.sep
            return
        finally:
            assert 3 - 5 == 0
    >>> text = "class T:\\n    def test_b(self):\\n        x = 1\\n"
    >>> print(copied_canary_text(text, ["T"], "test_b", "test_b2", 1, 2), end="")
    class T:
        def test_b(self):
            x = 1
    <BLANKLINE>
        def test_b2(self):
            x = 1
            assert 1 - 2 == 0
    """
    if "\r" in source or name in source:
        return None
    tree = _parsed(source)
    if tree is None:
        return None
    node = _find(tree.body, owners, target)
    if node is None or any(_expects_failure(source, d) for d in node.decorator_list):
        return None
    lines = split_lines(source)
    copied = _copy(lines, node, target, name, f"assert {got} - {want} == 0\n")
    if copied is None:
        return None
    end = node.end_lineno or node.lineno
    before = lines[:end]
    if before and not before[-1].endswith("\n"):
        before[-1] += "\n"
    gap = ["\n"] * (1 if owners else 2)
    text = "".join(
        [*before, *gap, *copied, *(["\n"] if lines[end:] and lines[end].strip() else []), *lines[end:]]
    )
    return text if _defines(text, owners, name) else None


@functools.lru_cache(maxsize=32)
def _parsed(source: str) -> ast.Module | None:
    """`source`'s syntax tree (None when Python 3 cannot read it), kept for the next grade of the same test
    file: every grade of a task copies a test of the same text. Callers only read the tree."""
    try:
        return pysyntax.parse(source)
    except (SyntaxError, ValueError):
        return None


def _find(
    scope: list[ast.stmt], owners: list[str], target: str
) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The last definition of `target` in the class chain `owners` (what the name is bound to when the module ends)."""
    for owner in owners:
        classes = [n for n in scope if isinstance(n, ast.ClassDef) and n.name == owner]
        if not classes:
            return None
        scope = classes[-1].body
    found = [n for n in scope if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == target]
    return found[-1] if found else None


def _expects_failure(source: str, decorator: ast.expr) -> bool:
    text = (ast.get_source_segment(source, decorator) or "").lower()
    return any(word in text for word in _EXPECTED_FAILURE)


def _copy(
    lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef, target: str, name: str, failing: str
) -> list[str] | None:
    """The copy's lines: decorators and signature renamed, the body in try/finally; None when the layout is odd."""
    first = node.body[0]
    body_line = lines[first.lineno - 1]
    body_indent = body_line[: first.col_offset]
    def_line = lines[node.lineno - 1]
    def_indent = def_line[: len(def_line) - len(def_line.lstrip())]
    if body_indent.strip() or not body_indent.startswith(def_indent) or body_indent == def_indent:
        return None  # the body starts on the signature's line, or is not indented below it
    unit = body_indent[len(def_indent) :]
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    end = node.end_lineno or node.lineno
    header = lines[start - 1 : first.lineno - 1]
    at = node.lineno - start
    renamed = re.sub(rf"(\bdef\s+){re.escape(target)}(\s*\()", rf"\g<1>{name}\g<2>", header[at], count=1)
    if renamed == header[at]:
        return None
    header[at] = renamed
    body = lines[first.lineno - 1 : end]
    if body and not body[-1].endswith("\n"):
        body = [*body[:-1], body[-1] + "\n"]
    if not _leaves_early(node):
        return [*header, *body, f"{body_indent}{failing}"]  # the test as it is, one assertion more
    body = [unit + line if line.strip() else line for line in body]
    return [
        *header,
        f"{body_indent}try:\n",
        *body,
        f"{body_indent}finally:\n",
        f"{body_indent}{unit}{failing}",
    ]


def _leaves_early(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether the test's own body can end before its last line (a return, a yield): then the assertion goes in a
    `finally:`, which a plain copy of the body would not reach."""
    pending: list[ast.AST] = list(node.body)
    while pending:
        current = pending.pop()
        if isinstance(current, ast.Return | ast.Yield | ast.YieldFrom):
            return True
        if not isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            pending.extend(ast.iter_child_nodes(current))
    return False


def _defines(text: str, owners: list[str], name: str) -> bool:
    """The copied file parses and binds `name` where the canary's test id says."""
    try:
        return _find(pysyntax.parse(text).body, owners, name) is not None
    except (SyntaxError, ValueError):
        return False
