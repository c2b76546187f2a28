"""Leakage guards: does a training row's answer write what a held-out fix writes, and by which guard?

A held-out task scores a model on restoring code it never trained on; a training row whose answer holds that
code teaches the answer. Two guards, checked in this order, each the reason its drops are counted under:

- `Guard.BODY`: the answer holds, as consecutive normalised lines, the body of a function that a held-out fix
  touches, as it reads after the fix (`repogym.locate.fixed_functions`): a training task that adds the
  held-out function whole, a corpus file that vendors it. A row both guards would drop counts here: the
  whole function is the larger leak.
- `Guard.LINE`: the answer holds a normalised line that a held-out gold patch adds, of `MIN_LINE_CHARS` or
  more (a body is guarded from that length too: a one-line `return x` body would ban everything).

"The answer" is every assistant turn's text and the strings of its tool calls' arguments, SEARCH text
included: an assistant-only loss trains on all of it. Lines are compared normalised (`normalise_line`):
comments and indentation dropped, tokens joined without spaces (one kept between two words), identifiers and
literals as written. So reformatting does not hide a line (spaces around operators, a trailing comment, a
method re-indented as a function); renaming a variable or reordering operands does.

Not guarded: the prompt (a row may show held-out code as context, as the env shows a file's other functions);
a body whose file cannot be read at the held-out task's base commit or does not parse after its patch
(`LeakageGuard.describe` counts the `tasks_without_body`, so a report says when the body guard was blind).
"""

from __future__ import annotations

import ast
import enum
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from repogym import pysyntax
from repogym.locate import fixed_functions
from repogym.patches import parse_patch
from repogym.task import Task

#: Shortest normalised line either guard keys on. Measured on the standard library's 868 modules: a
#: normalised line of 16-17 characters is found in one file only for 71% of its occurrences (90th
#: percentile: 12 files), against 52% (18 files) at 14-15 and 27-63% below 14, where the keys are
#: Python itself (`return None`, `import os`, `except OSError:`) and would drop rows for being code.
#: Its cost, measured with SWE-bench Lite's 20 flask and pytest fixes held out: of 20,000 ten-line windows of
#: the standard library, 177 (0.9%) held one of their 93 lines, all of them `except ValueError:`.
MIN_LINE_CHARS = 16

_TOKEN = re.compile(
    r"""(?P<string>[A-Za-z]{0,2}(?P<quote>["'])(?:\\.|(?!(?P=quote)).)*(?P=quote))"""
    r"""|(?P<comment>\#.*)|(?P<space>\s+)|(?P<word>\w+)|(?P<other>.)"""
)


class Guard(enum.StrEnum):
    """Which guard dropped a row; the value is the reason reports count the drop under."""

    BODY = "writes a held-out function's body"
    LINE = "writes a held-out task's fixed line"


def normalise_line(line: str) -> str:
    """A line as the guards compare it: comments and whitespace dropped, one space kept between two words.

    >>> normalise_line("    if value>high  and high is not None:  # clamp")
    'if value>high and high is not None:'
    >>> normalise_line("x = '# not a comment'  # a comment")
    "x='# not a comment'"
    """
    parts: list[str] = []
    for match in _TOKEN.finditer(line):
        if match.lastgroup in ("comment", "space"):
            continue
        text = match.group()
        if parts and _is_word_char(parts[-1][-1]) and _is_word_char(text[0]):
            parts.append(" ")
        parts.append(text)
    return "".join(parts)


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def normalised_lines(text: str) -> list[str]:
    """The text's non-blank normalised lines, in order (comment-only lines drop out)."""
    return [key for key in map(normalise_line, text.splitlines()) if key]


def answer_text(row: Mapping[str, Any]) -> str:
    """What a chat row trains a model to write: its assistant turns' text and tool-call argument strings."""
    parts: list[str] = []
    for message in row.get("messages") or []:
        if not isinstance(message, Mapping) or message.get("role") != "assistant":
            continue
        parts.append(str(message.get("content") or ""))
        for call in message.get("tool_calls") or []:
            arguments = (call.get("function") or {}).get("arguments", "")
            try:
                parts.extend(_strings(json.loads(arguments) if isinstance(arguments, str) else arguments))
            except json.JSONDecodeError:
                parts.append(arguments)
    return "\n".join(parts)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


@dataclass(frozen=True)
class LeakageGuard:
    """What the held-out tasks' fixes write, keyed for a fast check of each training row."""

    lines: frozenset[str]
    """Normalised lines the held-out gold patches add, `MIN_LINE_CHARS` or longer."""
    bodies: Mapping[str, tuple[str, ...]]
    """Normalised bodies of the held-out functions after the fix ("\\n"-joined lines), by their first line."""
    tasks: int
    """Held-out tasks the guard was built from."""
    tasks_without_body: int
    """Held-out tasks the body guard cannot see: the fix is at module level, or its file could not be read at
    the base commit, patched or parsed."""

    @classmethod
    def from_tasks(cls, tasks: Iterable[Task], repos_dir: str | None = None) -> LeakageGuard:
        """The guard for `tasks`; their repositories (`repo_source`, else `repos_dir`) give the bodies."""
        lines: set[str] = set()
        bodies: dict[str, set[str]] = {}
        count = without_body = 0
        for task in tasks:
            count += 1
            lines.update(key for key in fixed_line_keys(task.patch) if len(key) >= MIN_LINE_CHARS)
            found = [body for text in fixed_functions(task, repos_dir).values() if (body := body_lines(text))]
            without_body += not found
            for body in found:
                if len("".join(body)) >= MIN_LINE_CHARS:
                    bodies.setdefault(body[0], set()).add("\n".join(body))
        by_first = {first: tuple(sorted(texts)) for first, texts in bodies.items()}
        return cls(frozenset(lines), by_first, count, without_body)

    def check(self, answer: str) -> Guard | None:
        """The guard `answer` trips (the body guard first), or None when it writes nothing held out."""
        keys = normalised_lines(answer)
        present = set(keys)
        if present & self.bodies.keys():
            joined = "\n" + "\n".join(keys) + "\n"
            for first in present & self.bodies.keys():
                if any(f"\n{body}\n" in joined for body in self.bodies[first]):
                    return Guard.BODY
        return Guard.LINE if present & self.lines else None

    def check_row(self, row: Mapping[str, Any]) -> Guard | None:
        """`check` of a chat row's answer (`answer_text`)."""
        return self.check(answer_text(row))

    def describe(self) -> dict[str, int]:
        """What the guard holds, for a report beside its drops."""
        bodies = sum(len(found) for found in self.bodies.values())
        return {"held_out_tasks": self.tasks, "lines": len(self.lines), "bodies": bodies,
                "tasks_without_body": self.tasks_without_body}  # fmt: skip


def fixed_line_keys(patch: str) -> list[str]:
    """The normalised lines a patch adds (blank and comment-only ones left out), in patch order.

    >>> fixed_line_keys("--- a/f.py\\n+++ b/f.py\\n@@ -1 +1 @@\\n-    if a:\\n+    if a >= len(xs):  # end\\n")
    ['if a>=len(xs):']
    """
    added = (
        line.value
        for patched in parse_patch(patch) or []
        for hunk in patched
        for line in hunk
        if line.is_added
    )
    return [key for key in map(normalise_line, added) if key]


def body_lines(function_text: str) -> list[str]:
    """The normalised lines of a def's or class's body, without decorators or signature ([] if unparsed).

    >>> body_lines("    @cached\\n    def area(self,\\n          k=1):\\n        return self.w * k  # px\\n")
    ['return self.w*k']
    """
    # A method's text is indented: under `if 1:` it parses where it stands (dedenting would break on a
    # docstring's unindented continuation lines).
    indented = function_text[:1].isspace()
    try:
        tree = pysyntax.parse("if 1:\n" + function_text if indented else function_text)
    except (SyntaxError, ValueError):
        return []
    if not isinstance(tree, ast.Module) or not tree.body:
        return []
    node = tree.body[0].body[0] if indented and isinstance(tree.body[0], ast.If) else tree.body[0]
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return []
    first = node.body[0].lineno - (2 if indented else 1)
    return normalised_lines("\n".join(function_text.splitlines()[first:]))
