"""Compact agentless prompts: only the neighbourhood of localized lines (`context="window"`).

A tiny model cannot read whole files (issue 13: whole functions gave 0% exact repair in 10
minutes of training, the 3 lines around the bug 44.5%), so the window context shows, per
localized line, `window_lines` lines either side, merged where windows meet, verbatim (so a
SEARCH text is copied from the prompt as it is and is a real slice of the file), followed by the
suspicious lines themselves with their line numbers.

Localization is named and pluggable (`localize=`, a registry name or a dotted path to a
`Localizer`):

- `oracle`: the lines the gold patch changes. This is *perfect fault localization*, the usual
  setting of program-repair studies (it uses gold information): say so wherever a rate measured
  with it is reported.
- `sbfl`: spectrum-based fault localization from per-test line coverage of the task's failing and
  passing tests, run in the sandbox (no gold information; see `repogym.env.localize`).

`window_answer` is the gold demonstration in window mode: SWE-RL's answer restricted to the
windows (each block's SEARCH text lies inside one window, unique in its file), or None when the
gold change does not lie inside the windows (a localizer that missed).
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from repogym.env.lines_answer import LINES_FORMAT, spot_order
from repogym.patches import PatchError, apply_patch, parse_patch, split_lines
from repogym.registry import Registry
from repogym.search_replace import DEFAULT_THOUGHT, FormatError, SearchReplace, apply_edits, render_answer

if TYPE_CHECKING:
    from repogym.sandbox.runtime import TaskRuntime
    from repogym.task import Task

WINDOW_FORMAT = (
    "Answer with <think>...</think> then <solution>...</solution> holding SEARCH/REPLACE blocks:\n"
    "```python\n### path/to/file.py\n<<<<<<< SEARCH\nlines copied exactly from above\n=======\n"
    "the lines that replace them\n>>>>>>> REPLACE\n```\n"
)


@dataclass(frozen=True)
class Localization:
    """Where a localizer thinks the bug is: 1-based line numbers of the original files."""

    method: str
    spots: dict[str, tuple[int, ...]]
    uses_gold: bool
    """True for oracle localization (perfect fault localization): report it with any rate measured."""
    detail: str = ""
    scores: dict[str, float] = field(default_factory=dict)
    """Optional per-line suspiciousness, keyed "path:line"."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "uses_gold": self.uses_gold,
            "spots": {path: list(lines) for path, lines in self.spots.items()},
            "detail": self.detail,
        }


class Localizer(Protocol):
    """`(task, original file contents, prepared runtime or None) -> Localization`."""

    def __call__(
        self, task: Task, contents: Mapping[str, str], runtime: TaskRuntime | None
    ) -> Localization: ...


localizers: Registry[Localizer] = Registry("localizer")
_memo: dict[tuple[str, ...], Localization] = {}
_memo_lock = threading.Lock()


def localize(name: str, task: Task, contents: Mapping[str, str], runtime: TaskRuntime | None) -> Localization:
    """`localizers.get(name)(...)`, remembered per task and method: a GRPO group's envs localize once."""
    key = (name, task.instance_id, task.base_commit, str(hash((task.patch, task.test_patch))))
    with _memo_lock:
        if key in _memo:
            return _memo[key]
    found = localizers.get(name)(task, contents, runtime)
    with _memo_lock:
        if len(_memo) > 4096:
            _memo.clear()
        _memo[key] = found
    return found


@localizers.register("oracle")
def oracle_localizer(
    task: Task, contents: Mapping[str, str], runtime: TaskRuntime | None = None
) -> Localization:
    """The original lines each hunk of the gold patch removes (for a pure insertion: the line before it)."""
    spots: dict[str, set[int]] = {}
    for patched in parse_patch(task.patch) or []:
        if patched.is_added_file or patched.path not in contents:
            continue
        total = len(split_lines(contents[patched.path]))
        for hunk in patched:
            removed = [line.source_line_no for line in hunk if line.is_removed]
            if not removed:  # insertion: point at the line it follows (or the first line)
                added = [i for i, line in enumerate(hunk) if line.is_added]
                before = [line.source_line_no for line in list(hunk)[: added[0]] if line.source_line_no]
                removed = [min(max(before[-1] if before else 1, 1), max(total, 1))]
            spots.setdefault(patched.path, set()).update(removed)
    return Localization(
        "oracle", {path: tuple(sorted(lines)) for path, lines in spots.items()}, uses_gold=True,
        detail="perfect fault localization (the lines the gold patch changes)",
    )  # fmt: skip


@dataclass(frozen=True)
class Window:
    """Lines start..end (1-based, inclusive) of `path`."""

    path: str
    start: int
    end: int


def make_windows(
    spots: Mapping[str, tuple[int, ...]], contents: Mapping[str, str], window_lines: int
) -> list[Window]:
    """One window per localized line, `window_lines` either side, merged where they overlap or touch."""
    windows: list[Window] = []
    for path in sorted(spots):
        if path not in contents:
            continue
        total = max(len(split_lines(contents[path])), 1)
        merged: list[list[int]] = []
        for line in sorted(spots[path]):
            start, end = max(1, line - window_lines), min(total, line + window_lines)
            if merged and start <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        windows.extend(Window(path, start, end) for start, end in merged)
    return windows


def window_text(window: Window, contents: Mapping[str, str]) -> str:
    lines = split_lines(contents[window.path])
    return "".join(lines[window.start - 1 : window.end])


def window_prompt(
    problem_statement: str,
    windows: list[Window],
    spots: Mapping[str, tuple[int, ...]],
    contents: Mapping[str, str],
    answer_format: str = "search_replace",
    style: str = "full",
) -> str:
    """The window observation: the issue, each window verbatim, the suspicious lines, the format.

    `answer_format="lines"` asks for the suspicious lines rewritten (`repogym.env.lines_answer`)
    instead of SEARCH/REPLACE blocks. `style="compact"` (`EnvOptions.prompt_style`) leaves the issue and
    the code fences out, names a suspicious line by its number alone when every one is in one file, and
    puts the answer format first, so the suspicious lines are the last thing before the answer: a tiny
    model cannot read an issue, pays for every prompt token, and copies most easily from nearby."""
    compact = style == "compact"
    fence, end = ("", "") if compact else ("```python\n", "```\n")
    blocks = []
    for window in windows:
        text = window_text(window, contents)
        text = text if text.endswith("\n") or not text else text + "\n"
        blocks.append(f"{fence}### {window.path} (lines {window.start}-{window.end})\n{text}{end}")
    # The order a lines answer follows (`spot_order`): listing and parsing share it.
    order = spot_order(spots, contents)
    bare = compact and len({path for path, _ in order}) == 1
    suspicious = [
        f"{'' if bare else f'{path}:'}{number}: {split_lines(contents[path])[number - 1].rstrip()}"
        for path, number in order
    ]
    listed = ["Suspicious lines:\n" + "\n".join(suspicious) + "\n"] if suspicious else []
    answer = LINES_FORMAT if answer_format == "lines" else WINDOW_FORMAT
    if compact:
        return "\n".join([answer, *blocks, *listed])
    return "\n".join([f"Issue:\n{problem_statement.strip()}\n", *blocks, *listed, answer])


def window_answer(
    patch: str, contents: Mapping[str, str], windows: list[Window], thought: str = DEFAULT_THOUGHT
) -> str | None:
    """SWE-RL's gold answer whose SEARCH texts all lie inside `windows`; None when the change is outside them."""
    try:
        new_contents = apply_patch(patch, contents)
    except PatchError:
        return None
    edits: list[SearchReplace] = []
    for path, new in new_contents.items():
        old = contents.get(path)
        if old is None or new is None or new == old:
            if new != old:
                return None  # a new or deleted file cannot be written inside a window
            continue
        file_edits = _file_window_edits(path, old, new, [w for w in windows if w.path == path])
        if file_edits is None:
            return None
        edits.extend(file_edits)
    if not edits:
        return None
    try:
        applied = apply_edits(contents, edits)
    except FormatError:
        return None
    if any(applied[path] != new_contents[path] for path in applied):
        return None
    return render_answer(edits, thought)


def _file_window_edits(path: str, old: str, new: str, windows: list[Window]) -> list[SearchReplace] | None:
    a, b = split_lines(old), split_lines(new)
    changes = [
        op for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"
    ]
    by_window: dict[Window, list[tuple[str, int, int, int, int]]] = {}
    for change in changes:
        i1, i2 = change[1], change[2]
        home = next((w for w in windows if w.start - 1 <= i1 and i2 <= w.end), None)
        if home is None:
            return None
        by_window.setdefault(home, []).append(change)
    edits = []
    for window, group in by_window.items():
        span = [
            min(c[1] for c in group),
            max(c[2] for c in group),
            min(c[3] for c in group),
            max(c[4] for c in group),
        ]
        edit = _unique_block(path, a, b, span, window, old)
        if edit is None:
            return None
        edits.append(edit)
    return edits


def _unique_block(
    path: str, a: list[str], b: list[str], span: list[int], window: Window, old: str
) -> SearchReplace | None:
    """The smallest widening of a change (fewest extra lines, lines above first), inside its window,
    whose SEARCH text is unique in the file."""
    i1, i2, j1, j2 = span
    room_up, room_down = i1 - (window.start - 1), window.end - i2
    for extra in range(room_up + room_down + 1):
        for up in range(min(extra, room_up), -1, -1):
            down = extra - up
            if down > room_down:
                break
            search = "".join(a[i1 - up : i2 + down])
            replace = "".join(b[j1 - up : j2 + down])
            if search.endswith("\n") and replace.endswith("\n"):
                search, replace = search[:-1], replace[:-1]
            if search and search != replace and ("\n" + old).count("\n" + search) == 1:
                return SearchReplace(path, search, replace)
    return None
