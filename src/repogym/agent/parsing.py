"""Finding tool calls in a model's reply, whatever shape the model wrote them in.

Served models return native tool calls; small or untuned ones write calls in
text. `parse_tool_calls(text, tools)` tries, in order: Hermes/Qwen
`<tool_call>{...}</tool_call>` tags, fenced code blocks holding JSON or a call,
bare JSON objects naming a known tool, and the seed's call syntax
(`edit_file('models.py', '42:50', '...')`). What it cannot read is reported
(`broken_json`), never raised: a bad reply is data about the policy.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from repogym import pysyntax


@dataclass(frozen=True)
class ToolCall:
    """One call: a tool name and its arguments as JSON text (kept as sent, even when it is broken)."""

    name: str
    arguments: str
    id: str = ""

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }

    @classmethod
    def from_openai(cls, call: Mapping[str, Any], default_id: str = "") -> ToolCall:
        """Read an OpenAI tool-call dict; arguments given as an object are serialised."""
        function = call.get("function") if isinstance(call.get("function"), Mapping) else call
        arguments = function.get("arguments", "{}")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        return cls(str(function.get("name", "")), arguments, str(call.get("id") or default_id))

    def with_id(self, call_id: str) -> ToolCall:
        return ToolCall(self.name, self.arguments, self.id or call_id)


@dataclass(frozen=True)
class ParsedReply:
    """What was found in a reply: the calls, the format they were in, and what could not be read."""

    calls: tuple[ToolCall, ...] = ()
    source: str = ""
    """'native', 'tool_call_tag', 'fenced', 'json', 'call_syntax' or '' (nothing found)."""
    errors: tuple[str, ...] = ()


_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)```", re.DOTALL)


def tool_names(tools: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Tool name -> its parameter names in schema order (the order positional arguments take).

    >>> tool_names([{"type": "function", "function": {"name": "view_file",
    ...     "parameters": {"properties": {"path": {}, "lines": {}}}}}])
    {'view_file': ['path', 'lines']}
    """
    names: dict[str, list[str]] = {}
    for tool in tools:
        function = tool.get("function", tool)
        params = function.get("parameters", {}) or {}
        names[str(function.get("name", ""))] = list((params.get("properties") or {}).keys())
    return names


def parse_tool_calls(text: str, tools: Sequence[Mapping[str, Any]] = ()) -> ParsedReply:
    """Every tool call written in `text`, from the first format that yields any.

    >>> tools = [{"function": {"name": "view_file", "parameters": {"properties": {"path": {}, "lines": {}}}}},
    ...          {"function": {"name": "submit", "parameters": {"properties": {}}}}]
    >>> parse_tool_calls('<tool_call>{"name": "submit", "arguments": {}}</tool_call>', tools).calls
    (ToolCall(name='submit', arguments='{}', id=''),)
    >>> parse_tool_calls("Let me look. view_file('a.py', '1:5')", tools).calls[0].arguments
    '{"path": "a.py", "lines": "1:5"}'
    >>> parse_tool_calls('I will call {"name": "submit", "arguments": {', tools).errors
    ('broken_json: {"name": "submit", "arguments": {',)
    """
    known = tool_names(tools)
    for source, finder in (
        ("tool_call_tag", _from_tags),
        ("fenced", _from_fences),
        ("json", _from_bare_json),
        ("call_syntax", _from_call_syntax),
    ):
        calls, errors = finder(text, known)
        if calls:
            return ParsedReply(tuple(calls), source, tuple(errors))
        if errors:
            return ParsedReply((), "", tuple(errors))
    return ParsedReply()


def _from_tags(text: str, known: dict[str, list[str]]) -> tuple[list[ToolCall], list[str]]:
    calls, errors = [], []
    for match in _TAG.finditer(text):
        call, error = _call_from_json_text(match.group(1), known, allow_syntax=True)
        if call:
            calls.append(call)
        elif error:
            errors.append(error)
    return calls, errors


def _from_fences(text: str, known: dict[str, list[str]]) -> tuple[list[ToolCall], list[str]]:
    calls, errors = [], []
    for match in _FENCE.finditer(text):
        body = match.group(2).strip()
        if body.startswith(("{", "[")):
            found, bad = _calls_from_json_blob(body, known)
            calls.extend(found)
            errors.extend(bad)
        else:
            syntax_calls = _calls_in_source(body, known, whole=True)
            calls.extend(syntax_calls)
    return calls, errors


def _from_bare_json(text: str, known: dict[str, list[str]]) -> tuple[list[ToolCall], list[str]]:
    calls, errors = [], []
    decoder = json.JSONDecoder()
    position = 0
    while (start := text.find("{", position)) != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            if _looks_like_call(text[start:], known):
                errors.append(f"broken_json: {_clip(text[start:])}")
                break
            position = start + 1
            continue
        call = _call_from_value(value, known)
        if call:
            calls.append(call)
        position = end
    return calls, errors


def _from_call_syntax(text: str, known: dict[str, list[str]]) -> tuple[list[ToolCall], list[str]]:
    return _calls_in_source(text, known, whole=False), []


def _calls_from_json_blob(body: str, known: dict[str, list[str]]) -> tuple[list[ToolCall], list[str]]:
    value = _loads_lenient(body)
    if value is None:
        return [], ([f"broken_json: {_clip(body)}"] if _looks_like_call(body, known) else [])
    items = value if isinstance(value, list) else [value]
    calls = [call for item in items if (call := _call_from_value(item, known))]
    return calls, []


def _call_from_json_text(
    body: str, known: dict[str, list[str]], allow_syntax: bool
) -> tuple[ToolCall | None, str]:
    value = _loads_lenient(body)
    if value is not None:
        call = _call_from_value(value, known, any_name=True)
        return call, "" if call else f"broken_json: not a tool call: {_clip(body)}"
    if allow_syntax and (syntax_calls := _calls_in_source(body, known, whole=True)):
        return syntax_calls[0], ""
    return None, f"broken_json: {_clip(body)}"


def _call_from_value(value: Any, known: dict[str, list[str]], any_name: bool = False) -> ToolCall | None:
    """A call from a decoded JSON object in any of the shapes models write."""
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):
        value = value["function"]
    name = value.get("name", value.get("tool"))
    if not isinstance(name, str) or not (any_name or name in known):
        return None
    arguments = value.get("arguments", value.get("parameters", value.get("args", {})))
    if isinstance(arguments, str):
        parsed = _loads_lenient(arguments)
        arguments = parsed if isinstance(parsed, dict) else arguments
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return ToolCall(name, text)


def _calls_in_source(text: str, known: dict[str, list[str]], whole: bool) -> list[ToolCall]:
    """Calls like `name(arg, key=value)` to known tools, literal arguments only."""
    if not known:
        return []
    if whole:
        try:
            tree = pysyntax.parse(text.strip())
        except SyntaxError:
            return []
        nodes = [stmt.value for stmt in tree.body if isinstance(stmt, ast.Expr)]
        if len(nodes) != len(tree.body):
            return []
        calls = [_call_from_ast(node, known) for node in nodes]
        return [call for call in calls if call] if all(calls) else []
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, known)) + r")\s*\(")
    calls: list[ToolCall] = []
    position = 0
    while match := pattern.search(text, position):
        call, end = _balanced_call(text, match.start(), known)
        if call:
            calls.append(call)
        position = end if call else match.end()
    return calls


def _balanced_call(text: str, start: int, known: dict[str, list[str]]) -> tuple[ToolCall | None, int]:
    """The shortest `name(...)` from `start` that parses as a call; tried at each ')' in turn."""
    close = start
    for _ in range(400):  # bounded: a reply with thousands of ')' is not worth more parses
        close = text.find(")", close + 1)
        if close == -1:
            break
        try:
            node = pysyntax.parse(text[start : close + 1], mode="eval").body
        except SyntaxError:
            continue
        return _call_from_ast(node, known), close + 1
    return None, start + 1


def _call_from_ast(node: ast.AST, known: dict[str, list[str]]) -> ToolCall | None:
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or node.func.id not in known:
        return None
    params = known[node.func.id]
    if len(node.args) > len(params):
        return None
    try:
        arguments = {name: ast.literal_eval(arg) for name, arg in zip(params, node.args, strict=False)}
        for keyword in node.keywords:
            if keyword.arg is None:
                return None
            arguments[keyword.arg] = ast.literal_eval(keyword.value)
    except (ValueError, SyntaxError, TypeError):
        return None
    return ToolCall(node.func.id, json.dumps(arguments, ensure_ascii=False))


def _loads_lenient(text: str) -> Any:
    """JSON, else a Python literal (single quotes, True/None, trailing commas), else None.

    >>> _loads_lenient("{'path': 'a.py', 'n': True,}")
    {'path': 'a.py', 'n': True}
    >>> _loads_lenient('{"a": ') is None
    True
    """
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        pass
    pythonic = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", re.sub(r"\bnull\b", "None", text)))
    try:
        return ast.literal_eval(pythonic)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _looks_like_call(text: str, known: dict[str, list[str]]) -> bool:
    head = text[:400]
    return '"name"' in head or "'name'" in head or any(f'"{name}"' in head for name in known)


def _clip(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
