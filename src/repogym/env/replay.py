"""A patch as tool actions: the gold patch replayed through edit_file / str_replace calls (for check_env and tests).

Each changed region of a modified file becomes one call, bottom-up so that line numbers above
stay valid: alternately `edit_file` (by line range) and `str_replace` (when the old text is unique
in the file at that point, else `edit_file` again), so both tools are exercised on any patch with
two regions or more. A new file becomes `create_file`, a deleted one `bash rm`; a file whose line
endings or final newline the line tools would normalise is written whole with `create_file`.
"""

from __future__ import annotations

import difflib
import json
import shlex
from collections.abc import Mapping
from typing import Any

from repogym.patches import apply_patch, split_lines


def tool_call(name: str, call_id: str, **arguments: Any) -> dict[str, Any]:
    """An OpenAI tool-call dict.

    >>> tool_call("submit", "c0")
    {'id': 'c0', 'type': 'function', 'function': {'name': 'submit', 'arguments': '{}'}}
    """
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def patch_actions(patch: str, originals: Mapping[str, str], submit: bool = True) -> list[dict[str, Any]]:
    """Tool calls that turn `originals` (path -> text at the base commit) into what `patch` produces.

    >>> actions = patch_actions("--- a/m.py\\n+++ b/m.py\\n@@ -1 +1 @@\\n-x = 1\\n+x = 2\\n", {"m.py": "x = 1\\n"})
    >>> [(a["function"]["name"], json.loads(a["function"]["arguments"])) for a in actions]
    [('edit_file', {'path': 'm.py', 'lines': '1:1', 'text': 'x = 2\\n'}), ('submit', {})]
    """
    actions: list[dict[str, Any]] = []

    def add(name: str, **arguments: Any) -> None:
        actions.append(tool_call(name, f"replay-{len(actions)}", **arguments))

    for path, new in apply_patch(patch, originals).items():
        old = originals.get(path)
        if new is None:
            add("bash", command=f"rm -- {shlex.quote(path)}")
        elif old is None or not _line_tools_reproduce(old, new):
            add("create_file", path=path, text=new)
        else:
            for name, arguments in _region_calls(path, old, new):
                add(name, **arguments)
    if submit:
        add("submit")
    return actions


def _line_tools_reproduce(old: str, new: str) -> bool:
    """Whether edit_file/str_replace can give exactly `new` (they normalise CR LF and add final newlines)."""
    return "\r" not in old + new and old.endswith("\n") == new.endswith("\n") and bool(old)


def _region_calls(path: str, old: str, new: str) -> list[tuple[str, dict[str, Any]]]:
    a, b = split_lines(old), split_lines(new)
    opcodes = [
        op for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"
    ]
    current = list(a)
    calls: list[tuple[str, dict[str, Any]]] = []
    for index, (_, i1, i2, j1, j2) in enumerate(reversed(opcodes)):
        old_text, new_text = "".join(a[i1:i2]), "".join(b[j1:j2])
        text = "".join(current)
        if index % 2 == 1 and old_text and text.count(old_text) == 1:
            calls.append(("str_replace", {"path": path, "old": old_text, "new": new_text}))
        else:
            calls.append(("edit_file", {"path": path, "lines": f"{i1 + 1}:{i2}", "text": new_text}))
        current[i1:i2] = b[j1:j2]
    return calls
