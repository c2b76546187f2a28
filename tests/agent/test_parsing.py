"""Tool calls are found in every shape models write them, and what cannot be read is reported, not guessed."""

from __future__ import annotations

import json

import pytest

from repogym.agent.parsing import ToolCall, parse_tool_calls

TOOLS = [
    {"type": "function", "function": {"name": "view_file", "parameters": {"properties": {"path": {}, "lines": {}}}}},
    {"type": "function", "function": {"name": "edit_file",
                                      "parameters": {"properties": {"path": {}, "lines": {}, "text": {}}}}},
    {"type": "function", "function": {"name": "bash", "parameters": {"properties": {"command": {}}}}},
    {"type": "function", "function": {"name": "submit", "parameters": {"properties": {}}}},
]  # fmt: skip


def calls(text: str) -> list[tuple[str, dict]]:
    return [(call.name, json.loads(call.arguments)) for call in parse_tool_calls(text, TOOLS).calls]


def test_hermes_tags_with_several_calls():
    text = (
        'I will look first.\n<tool_call>\n{"name": "view_file", "arguments": {"path": "a.py"}}\n</tool_call>'
        '<tool_call>{"name": "bash", "arguments": "{\\"command\\": \\"ls\\"}"}</tool_call>'
    )
    assert calls(text) == [("view_file", {"path": "a.py"}), ("bash", {"command": "ls"})]
    assert parse_tool_calls(text, TOOLS).source == "tool_call_tag"


def test_fenced_json_and_fenced_call_syntax():
    assert calls('```json\n{"name": "bash", "arguments": {"command": "pytest -x"}}\n```') == [
        ("bash", {"command": "pytest -x"})
    ]
    fenced_call = "Here:\n```python\nedit_file('m.py', '42:50', 'x = 1\\n')\n```"
    assert calls(fenced_call) == [("edit_file", {"path": "m.py", "lines": "42:50", "text": "x = 1\n"})]


def test_a_fenced_block_of_ordinary_code_is_not_a_call():
    text = "The bug is here:\n```python\ndef add(a, b):\n    return a - b\n```\nno tool call yet"
    parsed = parse_tool_calls(text, TOOLS)
    assert parsed.calls == () and parsed.errors == ()


def test_bare_json_in_prose_openai_shape_and_python_literals():
    text = 'Next: {"type": "function", "function": {"name": "submit", "arguments": "{}"}} done'
    assert calls(text) == [("submit", {})]
    assert calls("{'name': 'bash', 'arguments': {'command': 'ls', 'check': True}}") == []  # not JSON in prose
    assert calls("```\n{'name': 'bash', 'arguments': {'command': 'ls'}}\n```") == [
        ("bash", {"command": "ls"})
    ]


def test_seed_call_syntax_in_prose_with_keywords_and_parentheses_in_strings():
    text = "Let me fix it: edit_file('models.py', lines='2:3', text='print(f(x))\\n') and then submit()"
    assert calls(text) == [
        ("edit_file", {"path": "models.py", "lines": "2:3", "text": "print(f(x))\n"}),
        ("submit", {}),
    ]


def test_json_objects_that_name_no_known_tool_are_ignored():
    assert calls('the config is {"name": "flask", "version": 2}') == []


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "bash", "arguments": {"command": "ls"</tool_call>',
        '```json\n{"name": "bash", "arguments": {"command": \n```',
        'calling {"name": "bash", "arguments": {"command": "ls"',
    ],
)
def test_broken_json_is_reported_not_guessed(text):
    parsed = parse_tool_calls(text, TOOLS)
    assert parsed.calls == ()
    assert parsed.errors and parsed.errors[0].startswith("broken_json")


def test_a_reply_cut_inside_a_tag_is_broken_json():
    parsed = parse_tool_calls('<tool_call>\n{"name": "edit_file", "arguments": {"path": "a.py", "te', TOOLS)
    assert parsed.errors and not parsed.calls


def test_no_call_at_all():
    assert parse_tool_calls("I think the bug is in add().", TOOLS).calls == ()


def test_openai_round_trip_keeps_broken_arguments_verbatim():
    call = ToolCall.from_openai({"id": "c7", "function": {"name": "bash", "arguments": '{"command": '}})
    assert call.to_openai() == {
        "id": "c7",
        "type": "function",
        "function": {"name": "bash", "arguments": '{"command": '},
    }
    assert ToolCall.from_openai({"function": {"name": "bash", "arguments": {"command": "ls"}}}).arguments == (
        '{"command": "ls"}'
    )
