"""Parsing actions and binding them to tools: every malformed form is an ActionError that says what is wrong."""

from __future__ import annotations

import json

import pytest

from repogym.env.actions import ActionCall, ActionError, parse_action
from repogym.env.observation import truncate
from repogym.env.tools import parse_line_range, tool_names, tools


def test_seed_text_syntax_keeps_the_arguments_exactly():
    call = parse_action("edit_file('models.py', '42:50', '''def f():\n    return \"x\"\n''')")
    assert call == ActionCall("edit_file", ("models.py", "42:50", 'def f():\n    return "x"\n'))


def test_keywords_bare_names_and_fenced_calls():
    assert parse_action("search(pattern='def add', path='src')").kwargs == {
        "pattern": "def add",
        "path": "src",
    }
    assert parse_action("  submit  ").name == "submit"
    assert parse_action("```python\nview_file('a.py')\n```") == ActionCall("view_file", ("a.py",))


def test_openai_tool_call_forms():
    openai = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "bash", "arguments": '{"command": "ls"}'},
    }
    assert parse_action(openai) == ActionCall("bash", (), {"command": "ls"}, "call_1")
    assert parse_action({"name": "bash", "arguments": {"command": "ls"}}).kwargs == {"command": "ls"}
    assert parse_action({"role": "assistant", "content": None, "tool_calls": [openai]}).call_id == "call_1"
    assert parse_action(json.dumps(openai)).kwargs == {"command": "ls"}
    assert parse_action({"function": {"name": "submit", "arguments": ""}}) == ActionCall("submit")


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ('{"name": "bash", "arguments": {"command": "ls"}', "not valid JSON"),
        ({"function": {"name": "bash", "arguments": '{"command": '}}, "arguments of bash are not valid JSON"),
        ({"function": {"name": "bash", "arguments": "[1, 2]"}}, "must be a JSON object"),
        ({"function": {"arguments": "{}"}}, "has no 'name'"),
        ({"role": "assistant", "tool_calls": []}, "one tool call per step"),
        ('[{"name": "submit"}]', "one tool call per step"),
        ("view_file('a.py'", "not a tool call"),
        ("I think the bug is in add()", "not a tool call"),
        ("view_file(path)", "is not a literal"),
        ("view_file(*paths)", "not supported"),
        ("bash(**{'command': 'ls'})", "not supported"),
        ("os.system('ls')", "not a tool call"),
        ("", "empty"),
        (42, "got int"),
    ],
)
def test_malformed_actions_say_what_is_wrong(action, message):
    with pytest.raises(ActionError, match=message.replace("(", r"\(")):
        parse_action(action)


def _bind(name: str, action: str):
    return tools.get(name).bind(parse_action(action))


def test_binding_maps_positional_and_keyword_arguments():
    assert _bind("edit_file", "edit_file('m.py', '42:50', text='x')") == {
        "path": "m.py",
        "lines": "42:50",
        "text": "x",
    }
    assert _bind("view_file", "view_file('m.py', 7)") == {"path": "m.py", "lines": "7"}
    assert _bind("view_file", "view_file('m.py', None)") == {"path": "m.py", "lines": None}
    assert _bind("run_tests", "run_tests(['tests/test_a.py::test_x'])") == {
        "tests": ["tests/test_a.py::test_x"]
    }


@pytest.mark.parametrize(
    ("name", "action", "message"),
    [
        ("edit_file", "edit_file('m.py')", "missing required argument(s) lines, text"),
        ("view_file", "view_file('m.py', '1:2', 'extra')", "takes 2 argument(s), got 3"),
        ("view_file", "view_file(path='m.py', line='1:2')", "no argument 'line' (did you mean 'lines'?)"),
        ("view_file", "view_file('m.py', path='n.py')", "two values for argument 'path'"),
        ("bash", "bash(['ls'])", "'command' of bash must be a string, got list"),
        ("run_tests", "run_tests('tests/test_a.py')", "must be a list of strings"),
        ("view_file", "view_file('m.py', True)", "must be a string, got bool"),
    ],
)
def test_binding_errors_name_the_argument(name, action, message):
    with pytest.raises(ActionError) as caught:
        _bind(name, action)
    assert message in str(caught.value)


def test_tool_schemas_are_openai_functions_that_match_binding():
    for name in tool_names():
        schema = tools.get(name).schema()
        function = schema["function"]
        assert schema["type"] == "function" and function["name"] == name and function["description"]
        parameters = function["parameters"]
        assert parameters["type"] == "object" and parameters["additionalProperties"] is False
        assert set(parameters["required"]) <= set(parameters["properties"])
        required_only = {key: "x" for key in parameters["required"]}
        typed = {k: (["x"] if parameters["properties"][k]["type"] == "array" else "x") for k in required_only}
        assert tools.get(name).bind(ActionCall(name, (), typed)) == typed
    assert tool_names() == [
        "bash", "view_file", "search", "edit_file", "str_replace", "create_file", "run_tests", "submit",
    ]  # fmt: skip
    assert tool_names(["view_file"]) == ["view_file", "submit"]


def test_line_ranges():
    assert parse_line_range("42:50") == (42, 50)
    assert parse_line_range(None) == (1, None)
    assert parse_line_range("5:4") == (5, 4)  # an empty range: insert before line 5
    for bad in ("a:b", "0:3", "1:2:3", "9:2"):
        with pytest.raises(ValueError, match="line range"):
            parse_line_range(bad)


def test_truncation_keeps_head_and_tail_and_says_how_much_was_cut():
    text = "".join(f"line {n}\n" for n in range(10_000))
    short = truncate(text, 1_000)
    assert len(short) <= 1_000
    assert short.startswith("line 0\n") and short.endswith("line 9999\n")
    head, tail = short.split("\n[... ")[0], short.rsplit(" ...]\n", 1)[1]
    omitted = len(text) - len(head) - len(tail)
    assert text.startswith(head) and text.endswith(tail)
    assert f"{omitted:,} characters omitted" in short
