"""Turning a policy's action into one tool call: OpenAI tool-call dicts, JSON text, or the seed's call syntax.

Accepted actions (one tool call per step):

- an OpenAI tool call `{"id": ..., "type": "function", "function": {"name": ..., "arguments": "<JSON>"}}`,
  or the flat `{"name": ..., "arguments": {...} | "<JSON>"}`;
- an assistant message `{"role": "assistant", "tool_calls": [one call]}`;
- text holding either of those as JSON, or a Python-style call with literal arguments, as in the
  seed: `edit_file('models.py', '42:50', '...')`; a bare name (`submit`) is a call without arguments.
  Text wrapped in one ``` fence is unwrapped first.

Anything else raises `ActionError`, whose message says what was wrong and what is expected; the env
turns it into an observation and counts a format error (it never escapes `step`).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from repogym import pysyntax
from repogym.errors import RepogymError

EXAMPLE = "view_file('src/app.py', '1:40')"


class ActionError(RepogymError):
    """An action that is not one well-formed tool call (a format error)."""


@dataclass(frozen=True)
class ActionCall:
    """One parsed call: the tool's name, positional arguments (text syntax only) and keyword arguments."""

    name: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    call_id: str | None = None
    """The OpenAI tool call's id, when the action had one (echoed in info for the tool message)."""


def parse_action(action: Any) -> ActionCall:
    """The tool call an action holds; ActionError when there is not exactly one well-formed call.

    >>> parse_action("edit_file('models.py', '42:50', 'x = 1')")
    ActionCall(name='edit_file', args=('models.py', '42:50', 'x = 1'), kwargs={}, call_id=None)
    >>> parse_action({"type": "function", "id": "c1", "function": {"name": "bash", "arguments": '{"command": "ls"}'}})
    ActionCall(name='bash', args=(), kwargs={'command': 'ls'}, call_id='c1')
    >>> parse_action("submit")
    ActionCall(name='submit', args=(), kwargs={}, call_id=None)
    >>> parse_action('{"name": "bash", "arguments": {"command": "ls"')
    Traceback (most recent call last):
    ...
    repogym.env.actions.ActionError: the action is not valid JSON: Expecting ',' delimiter at line 1 column 47
    """
    if isinstance(action, ActionCall):
        return action
    if isinstance(action, Mapping):
        return _from_mapping(action)
    if isinstance(action, str):
        return _from_text(action)
    raise ActionError(f"an action is a tool-call dict or text such as {EXAMPLE}; got {type(action).__name__}")


def _from_mapping(data: Mapping[str, Any]) -> ActionCall:
    if "tool_calls" in data:
        calls = data["tool_calls"]
        if not isinstance(calls, list) or len(calls) != 1:
            count = len(calls) if isinstance(calls, list) else "no"
            raise ActionError(f"one tool call per step: the message has {count} tool calls")
        if not isinstance(calls[0], Mapping):
            raise ActionError("a tool call must be an object with 'function': {'name', 'arguments'}")
        return _from_mapping(calls[0])
    function = data.get("function")
    body = function if isinstance(function, Mapping) else data
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise ActionError(
            "the tool call has no 'name'; expected {'type': 'function', 'function': {'name': ..., 'arguments': ...}}"
        )
    raw = body.get("arguments", {})
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        raw = {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ActionError(
                f"the arguments of {name} are not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
            ) from None
    if not isinstance(raw, Mapping):
        raise ActionError(f"the arguments of {name} must be a JSON object, got {type(raw).__name__}")
    call_id = data.get("id")
    return ActionCall(name, (), dict(raw), call_id if isinstance(call_id, str) else None)


def _from_text(text: str) -> ActionCall:
    source = _unfence(text.strip())
    if not source:
        raise ActionError(f"the action is empty; write one tool call such as {EXAMPLE}")
    if source[0] in "{[":
        try:
            data = json.loads(source)
        except json.JSONDecodeError as exc:
            raise ActionError(
                f"the action is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
            ) from None
        if not isinstance(data, Mapping):
            raise ActionError("one tool call per step: send a single JSON object, not a list")
        return _from_mapping(data)
    try:
        node = pysyntax.parse(source, mode="eval").body
    except SyntaxError as exc:
        raise ActionError(
            f"the action is not a tool call ({exc.msg}, line {exc.lineno}); write one call such as {EXAMPLE}"
        ) from None
    if isinstance(node, ast.Name):
        return ActionCall(node.id)
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ActionError(f"the action is not a tool call; write one call such as {EXAMPLE}")
    name = node.func.id
    args = tuple(_literal(arg, name, f"argument {index + 1}") for index, arg in enumerate(node.args))
    kwargs: dict[str, Any] = {}
    for keyword in node.keywords:
        if keyword.arg is None:
            raise ActionError(f"{name}(**...) is not supported; name each argument")
        kwargs[keyword.arg] = _literal(keyword.value, name, f"argument {keyword.arg!r}")
    return ActionCall(name, args, kwargs)


def _literal(node: ast.expr, name: str, label: str) -> Any:
    if isinstance(node, ast.Starred):
        raise ActionError(f"{name}(*...) is not supported; write each argument")
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise ActionError(
            f"{label} of {name} is not a literal; arguments must be strings, numbers, lists or None"
        ) from None


def _unfence(text: str) -> str:
    """The inside of one ``` fence around the whole text (the text itself otherwise).

    >>> _unfence("```python\\nsubmit()\\n```")
    'submit()'
    """
    if text.startswith("```") and text.endswith("```") and len(text) >= 6:
        inner = text[3:-3]
        if "```" not in inner:
            first, _, rest = inner.partition("\n")
            return (rest if first.strip().isidentifier() or not first.strip() else inner).strip()
    return text
