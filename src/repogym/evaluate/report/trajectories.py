"""The trajectory viewer's data: chosen attempts of a rollout folder, as plain text pieces for the page.

Everything here is text the page escapes (Jinja autoescape): trajectories hold model output and tool
output, which is hostile text. Long texts are cut in the middle with a marker, so one runaway
attempt cannot make the page unusable; at most `max_attempts` attempts are shown per folder, first
attempts of every task first (then second attempts, ...), so a big run still shows every task once.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repogym.files import read_jsonl_records

MAX_TEXT_CHARS = 20_000
MAX_PATCH_CHARS = 60_000


@dataclass(frozen=True)
class ToolCallView:
    name: str
    arguments: str


@dataclass(frozen=True)
class MessageView:
    role: str
    content: str
    tool_calls: tuple[ToolCallView, ...] = ()
    name: str = ""
    """The tool's name on a tool message."""


@dataclass(frozen=True)
class DiffLine:
    kind: str
    """add, del, hunk, file or context (the CSS class)."""
    text: str


@dataclass(frozen=True)
class AttemptView:
    instance_id: str
    attempt: int
    policy_id: str
    outcome: str
    grade_outcome: str
    resolved: bool
    reward: float
    components: dict[str, float]
    steps: int
    detail: str
    messages: tuple[MessageView, ...]
    diff: tuple[DiffLine, ...]
    tests: tuple[tuple[str, str], ...]
    """(test id, status) of the graded FAIL_TO_PASS and PASS_TO_PASS tests."""
    grade_detail: str = ""


@dataclass
class RolloutView:
    label: str
    attempts: list[AttemptView] = field(default_factory=list)
    total: int = 0
    """Attempts in the folder (the viewer may show fewer)."""


def clip(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """`text` with its middle cut when longer than `limit`.

    >>> clip("a" * 10 + "b" * 10, 10)
    'aaaaa\\n[... 10 characters cut ...]\\nbbbbb'
    """
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters cut ...]\n{text[-half:]}"


def _content(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # OpenAI content parts
        return "\n".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in value)
    return json.dumps(value, ensure_ascii=False)


def _tool_calls(calls: Any) -> tuple[ToolCallView, ...]:
    views = []
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function", call) if isinstance(call, dict) else {}
        arguments = function.get("arguments", "")
        if isinstance(arguments, str):
            with contextlib.suppress(ValueError):  # not JSON: shown as the model wrote it
                arguments = json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
        else:
            arguments = json.dumps(arguments, indent=2, ensure_ascii=False)
        views.append(ToolCallView(str(function.get("name", "?")), clip(str(arguments))))
    return tuple(views)


def diff_lines(patch: str) -> tuple[DiffLine, ...]:
    """A unified diff split into lines classed for colouring.

    >>> [line.kind for line in diff_lines("--- a/x\\n+++ b/x\\n@@ -1 +1 @@\\n-a\\n+b\\n c")]
    ['file', 'file', 'hunk', 'del', 'add', 'context']
    """
    lines = []
    for line in clip(patch, MAX_PATCH_CHARS).split("\n"):
        if line.startswith(("+++", "---", "diff --git")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "context"
        lines.append(DiffLine(kind, line))
    return tuple(lines)


def attempt_view(row: dict[str, Any]) -> AttemptView:
    """One stored trajectory row (Trajectory.to_dict()) as view pieces; odd fields become blanks."""
    grade = row.get("grade") if isinstance(row.get("grade"), dict) else {}
    tests = grade.get("tests") if isinstance(grade.get("tests"), dict) else {}
    breakdown = row.get("reward_breakdown") if isinstance(row.get("reward_breakdown"), dict) else {}
    components = breakdown.get("components") if isinstance(breakdown.get("components"), dict) else {}
    messages = tuple(
        MessageView(
            role=str(m.get("role", "?")),
            content=clip(_content(m.get("content"))),
            tool_calls=_tool_calls(m.get("tool_calls")),
            name=str(m.get("name") or ""),
        )
        for m in row.get("messages") or []
        if isinstance(m, dict)
    )
    return AttemptView(
        instance_id=str(row.get("instance_id", "?")), attempt=int(row.get("attempt") or 0),
        policy_id=str(row.get("policy_id", "")), outcome=str(row.get("outcome", "")),
        grade_outcome=str(grade.get("outcome") or "not graded"), resolved=bool(row.get("resolved")),
        reward=float(row.get("reward") or 0.0),
        components={str(k): float(v) for k, v in components.items() if isinstance(v, int | float)},
        steps=len(row.get("steps") or []), detail=clip(str(row.get("detail") or ""), 2000), messages=messages,
        diff=diff_lines(str(row.get("final_patch") or "")), tests=tuple((str(t), str(s)) for t, s in tests.items()),
        grade_detail=clip(str(grade.get("detail") or ""), 4000),
    )  # fmt: skip


def rollout_view(folder: Path, label: str, max_attempts: int) -> RolloutView:
    """Up to `max_attempts` attempts of a rollout folder: every task's first attempt, then the next, ..."""
    keys = sorted(
        {(int(r["attempt"]), str(r["instance_id"])) for r in read_jsonl_records(folder / ".ledger")
         if isinstance(r.get("attempt"), int) and "instance_id" in r}
    )  # fmt: skip
    view = RolloutView(label, total=len(keys))
    wanted = {(iid, attempt) for attempt, iid in keys[:max_attempts]}
    found: dict[tuple[str, int], AttemptView] = {}
    for shard in sorted(folder.glob("trajectories-*.jsonl")):
        for row in read_jsonl_records(shard):
            key = (str(row.get("instance_id")), row.get("attempt"))
            if (not wanted or key in wanted) and key not in found and isinstance(key[1], int):
                found[key] = attempt_view(row)  # type: ignore[index]
            if not wanted and len(found) >= max_attempts:
                break
    view.total = max(view.total, len(found))
    view.attempts = sorted(found.values(), key=lambda a: (a.instance_id, a.attempt))
    return view
