"""SFT chat rows: the one row shape `repogym data sft` writes and `repogym train sft` reads.

A row is `{"messages": [...], "tools": [...], "source": ..., "instance_id": ..., ...}`:
OpenAI chat messages (system / user / assistant / tool; assistant tool calls as
`{"id", "type": "function", "function": {"name", "arguments": JSON text}}`) and the tool
schemas the policy was offered. Extra keys (source, instance_id, metadata) are kept for
bookkeeping and ignored by training.

Every message is normalised to the same keys (`role`, `content`, `tool_calls`, `tool_call_id`,
`name`) so that `datasets` infers one Arrow schema for any mix of agent and agentless rows, and
`tools` travels to the trainer as JSON text (TRL decodes it), because tool schemas differ in
shape from row to row and Arrow would otherwise pad them with nulls the templates then render.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repogym.errors import DatasetError

ROLES = ("system", "user", "assistant", "tool")


def normalize_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """One message with exactly the five keys; tool-call arguments as JSON text.

    >>> normalize_message({"role": "assistant", "content": None,
    ...     "tool_calls": [{"function": {"name": "submit", "arguments": {}}}]})["tool_calls"]
    [{'id': 'call_0', 'type': 'function', 'function': {'name': 'submit', 'arguments': '{}'}}]
    """
    calls = []
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or call
        arguments = function.get("arguments", {})
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        calls.append(
            {
                "id": str(call.get("id") or f"call_{index}"),
                "type": "function",
                "function": {"name": str(function.get("name", "")), "arguments": arguments},
            }
        )
    content = message.get("content")
    return {
        "role": str(message.get("role", "")),
        "content": "" if content is None else str(content),
        "tool_calls": calls or None,
        "tool_call_id": message.get("tool_call_id"),
        "name": message.get("name"),
    }


def unusable_reason(messages: Any) -> str | None:
    """Why a row cannot be trained on (None when it can).

    >>> unusable_reason([{"role": "user", "content": "hi"}])
    'no assistant turn'
    >>> unusable_reason([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]) is None
    True
    """
    if not isinstance(messages, list) or not messages:
        return "no messages"
    if not all(isinstance(m, Mapping) for m in messages):
        return "a message is not an object"
    roles = [m.get("role") for m in messages]
    if any(role not in ROLES for role in roles):
        return f"unknown role (allowed: {', '.join(ROLES)})"
    if not any(
        m.get("role") == "assistant" and ((m.get("content") or "").strip() or m.get("tool_calls"))
        for m in messages
    ):
        return "no assistant turn"
    return None


def through_last_assistant(messages: list[Any]) -> list[Any]:
    """Messages up to the last assistant turn: what follows it (the env's answer to submit) trains nothing.

    >>> [m["role"] for m in through_last_assistant([{"role": "user"}, {"role": "assistant"}, {"role": "tool"}])]
    ['user', 'assistant']
    """
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=len(messages) - 1)
    return list(messages[: last + 1])


def make_row(
    messages: Iterable[Mapping[str, Any]], tools: Iterable[Mapping[str, Any]] = (), **extra: Any
) -> dict[str, Any]:
    """A normalised row (what `data sft` writes)."""
    kept = through_last_assistant(list(messages))
    return {"messages": [normalize_message(m) for m in kept], "tools": [dict(t) for t in tools], **extra}


def row_digest(row: Mapping[str, Any]) -> str:
    """A content hash of what training sees (messages and tools), for deduplication."""

    payload = json.dumps([row.get("messages"), row.get("tools") or []], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass
class LoadedRows:
    """Rows fit for training, and a count of those left out per reason."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)
    total: int = 0


def read_chat_rows(files: Iterable[str | os.PathLike[str]]) -> LoadedRows:
    """Rows of chat-row JSONL files, normalised for training (tools as JSON text); DatasetError on bad JSON."""
    loaded = LoadedRows()
    for file in files:
        for number, row in _jsonl(Path(file)):
            loaded.total += 1
            messages = row.get("messages")
            reason = unusable_reason(messages)
            if reason is not None:
                loaded.dropped[reason] += 1
                continue
            tools = row.get("tools") or []
            if isinstance(tools, str):
                try:
                    tools = json.loads(tools) or []
                except json.JSONDecodeError:
                    raise DatasetError(f"{file}:{number}: `tools` is text but not JSON") from None
            loaded.rows.append(
                {
                    "messages": [normalize_message(m) for m in through_last_assistant(messages)],
                    "tools": json.dumps(tools, ensure_ascii=False),
                }
            )
    return loaded


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        handle = open(path, encoding="utf-8")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        raise DatasetError(
            f"{path}: no such file (build one with `repogym data sft ... --out {path}`)"
        ) from None
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read: {exc.strerror or exc}") from None
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path}:{number}: not JSON: {exc.msg}") from None
            if not isinstance(row, dict):
                raise DatasetError(f"{path}:{number}: a row must be a JSON object with `messages`")
            yield number, row
