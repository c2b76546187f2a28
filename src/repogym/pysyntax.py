"""`ast.parse` for a threaded program: one lock around CPython's construction of syntax trees.

CPython 3.11 keeps the AST constructor's recursion depth in interpreter state that every thread shares; a thread
switch in the middle of building a tree (a garbage collection running a finalizer is enough) lets another parse
corrupt it, and one of them raises `SystemError: AST constructor recursion depth mismatch` (cpython gh-106905; seen
here on 3.11.7 when a GRPO group's grades, each reading its test file, ran in parallel threads). repogym parses in
grader, rollout and agent threads, so every parse goes through this lock; a parse takes microseconds to
milliseconds next to the sandbox runs around it.
"""

from __future__ import annotations

import ast
import threading
from typing import Literal

_lock = threading.Lock()


def parse(
    source: str | bytes, filename: str = "<unknown>", mode: Literal["exec", "eval"] = "exec"
) -> ast.Module | ast.Expression:
    """`ast.parse(source, filename, mode)`, one thread at a time (raises SyntaxError / ValueError as it does).

    >>> type(parse("x = 1")).__name__, type(parse("1 + 2", mode="eval")).__name__
    ('Module', 'Expression')
    """
    with _lock:
        return ast.parse(source, filename=filename, mode=mode)
