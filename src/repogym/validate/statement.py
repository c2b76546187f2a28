"""Problem statements for validated tasks that have none (synthetic ones): from the failing tests' output, and
never the fix.

The default statement names the tests that fail and shows, per test (at most three), the tail of its failure
section from the first run with the bug: the assertion (`E` lines) and where it happened. The output shows
the buggy code, never the fixed code; `reveals_fix` checks that for any text: it finds the gold patch's new
lines and changed fragments (those the buggy file does not contain) in the text. A line of the default
statement that reveals the fix is left out; a writer's statement that reveals it is refused and the default
used instead.

A `StatementWriter` (e.g. an LLM behind an OpenAI-compatible endpoint, `repogym.synth.issues`) may rewrite
the default into an issue-style text; what it returns goes through the same check.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

from repogym.errors import RepogymError
from repogym.hostgit import git
from repogym.patches import parse_patch
from repogym.sandbox.base import read_jail_file
from repogym.task import Source, Task
from repogym.taskmeta import ValidationRecord

MAX_TESTS_SHOWN = 3
TAIL_LINES = 14
MIN_FRAGMENT = 3
_HEADER = re.compile(r"^_{3,} (.+?) _{3,}$")
_BANNER = re.compile(r"^={3,}( .* )?={3,}$")
_TOKEN = re.compile(r"\w+|[^\w\s]+")


class StatementWriter(Protocol):
    """Writes a problem statement for a validated task from its default (failing-output) statement."""

    name: str
    """Recorded in metadata["statement"]["writer"], e.g. 'openai:my-model'."""

    def write(self, task: Task, default: str) -> str:
        """The statement; raising or returning '' keeps the default."""
        ...


def fix_fragments(gold_patch: str, buggy_text: str = "") -> list[str]:
    """What of the gold patch a statement must not contain: its added lines and, for a changed line, the
    changed tokens with one token of context each side; only those the buggy code does not already show.

    >>> fix_fragments("--- a/f.py\\n+++ b/f.py\\n@@ -1 +1 @@\\n-    return a - b\\n+    return a + b\\n")
    ['return a + b', 'a + b']
    """
    found: list[str] = []
    for patched in parse_patch(gold_patch) or []:
        for hunk in patched:
            removed = [line.value.rstrip("\n") for line in hunk if line.is_removed]
            added = [line.value.rstrip("\n") for line in hunk if line.is_added]
            for line in added:
                if len(line.strip()) >= MIN_FRAGMENT:
                    found.append(line.strip())
            for old, new in zip(removed, added, strict=False):
                found += _changed_spans(old, new)
    unique = list(dict.fromkeys(found))
    return [f for f in unique if f not in buggy_text]


def _changed_spans(old: str, new: str) -> list[str]:
    tokens = [(m.start(), m.end()) for m in _TOKEN.finditer(new)]
    spans = []
    for tag, _, _, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag in ("replace", "insert"):
            touched = [k for k, (start, end) in enumerate(tokens) if start < max(j2, j1 + 1) and end > j1]
            if not touched:
                continue
            first, last = max(touched[0] - 1, 0), min(touched[-1] + 1, len(tokens) - 1)
            fragment = new[tokens[first][0] : tokens[last][1]].strip()
            if len(fragment) >= MIN_FRAGMENT:
                spans.append(fragment)
    return spans


def reveals_fix(text: str, fragments: Iterable[str]) -> str:
    """The first fragment of the fix found in `text` (whitespace-insensitive), '' when none is.

    >>> reveals_fix("Use `a + b` there", ["return a + b", "a + b"])
    'a + b'
    >>> reveals_fix("add(2, 3) returned -1", ["return a + b", "a + b"])
    ''
    """
    flat = " ".join(text.split())
    for fragment in fragments:
        if " ".join(fragment.split()) in flat:
            return fragment
    return ""


def failure_sections(log_text: str) -> dict[str, list[str]]:
    """pytest's failure sections by their header ('test_x', 'TestC.test_y[1]'), from a -rA log."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    in_failures = False
    for line in log_text.splitlines():
        if _BANNER.match(line):
            in_failures = " FAILURES " in line or " ERRORS " in line
            current = None
            continue
        header = _HEADER.match(line)
        if in_failures and header:
            current = sections.setdefault(header.group(1).removeprefix("ERROR at setup of "), [])
            continue
        if current is not None:
            current.append(line)
    return sections


def default_statement(fail_to_pass: Sequence[str], log_text: str, fragments: Sequence[str]) -> str:
    """The failing tests and the tail of their output; lines that would reveal the fix are left out."""
    sections = failure_sections(log_text)
    lines = [f"{len(fail_to_pass)} test(s) fail:", *(f"- {test}" for test in fail_to_pass[:10])]
    if len(fail_to_pass) > 10:
        lines.append(f"- ... and {len(fail_to_pass) - 10} more")
    for test in fail_to_pass[:MAX_TESTS_SHOWN]:
        body = sections.get(".".join(test.split("::")[1:])) or sections.get(test.split("::")[-1])
        if not body:
            continue
        tail = [line for line in body if line.strip()][-TAIL_LINES:]
        kept = [line for line in tail if not reveals_fix(line, fragments)]
        lines += ["", f"Output of {test}:", "", *(f"    {line}" for line in kept)]
    return "\n".join(lines).rstrip() + "\n"


def write_statements(tasks: Sequence[Task], writer: StatementWriter | None = None) -> list[Task]:
    """Synthetic tasks without a problem statement get one (see the module docstring); the others are left
    alone (a mined task's statement is its issue or commit message, empty or not).

    The failing output comes from the log named in metadata["validation"]["logs"]["before"]; a task whose
    log is gone gets the list of failing tests only.
    """
    written = []
    for task in tasks:
        if task.problem_statement.strip() or task.source is not Source.SYNTHETIC:
            written.append(task)
            continue
        log_path = ValidationRecord.of(task).log("before")
        log_text = (read_jail_file(Path(log_path)) or "") if log_path else ""
        fragments = fix_fragments(task.patch, buggy_code(task))
        statement = default_statement(task.FAIL_TO_PASS, log_text, fragments)
        record: dict[str, str] = {"writer": "tests"}
        if writer is not None:
            statement, record = _ask(writer, task, statement, fragments)
        metadata = {**task.metadata, "statement": record}
        if isinstance(metadata.get("difficulty"), dict):
            metadata["difficulty"] = {**metadata["difficulty"], "fail_to_pass": len(task.FAIL_TO_PASS)}
        written.append(task.replace(problem_statement=statement, metadata=metadata))
    return written


def rewrite_statements(tasks: Sequence[Task], writer: StatementWriter) -> list[Task]:
    """Synthetic tasks whose statement is the failing-output one get the writer's statement instead (when it
    passes the check); every other task is left alone."""
    rewritten = []
    for task in tasks:
        record = task.metadata.get("statement")
        if (
            task.source is not Source.SYNTHETIC
            or not isinstance(record, dict)
            or record.get("writer") != "tests"
        ):
            rewritten.append(task)
            continue
        fragments = fix_fragments(task.patch, buggy_code(task))
        statement, record = _ask(writer, task, task.problem_statement, fragments)
        rewritten.append(
            task.replace(problem_statement=statement, metadata={**task.metadata, "statement": record})
        )
    return rewritten


def _ask(
    writer: StatementWriter, task: Task, default: str, fragments: Sequence[str]
) -> tuple[str, dict[str, str]]:
    try:
        text = writer.write(task, default).strip()
    except Exception as exc:  # a writer that fails (endpoint down, bad reply) must not lose the task
        return default, {
            "writer": "tests",
            "refused": f"{writer.name} failed: {type(exc).__name__}: {exc}"[:300],
        }
    if len(text) < 20:
        return default, {"writer": "tests", "refused": f"{writer.name} returned {len(text)} characters"}
    revealed = reveals_fix(text, fragments)
    if revealed:
        # The record names no fragment: metadata travels with the task, and the fragment is the answer.
        return default, {"writer": "tests", "refused": f"{writer.name} quoted the fix"}
    return text + "\n", {"writer": writer.name}


def buggy_code(task: Task) -> str:
    """What the solver sees of the files the gold patch touches: their text at the base commit (read from
    the task's repository), or, when it cannot be read, the patch's removed and context lines."""
    texts = []
    readable = bool(task.repo_source) and Path(task.repo_source).is_dir()
    for patched in parse_patch(task.patch) or []:
        try:
            if not readable:
                raise RepogymError("no local repository")
            texts.append(git(task.repo_source, "show", f"{task.base_commit}:{patched.path}"))
        except (RepogymError, OSError):
            texts += [line.value for hunk in patched for line in hunk if not line.is_added]
    return "".join(texts)
