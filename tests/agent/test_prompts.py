"""Prompt templates: defaults render, a user's folder overrides file by file, mistakes fail at load."""

from __future__ import annotations

import pytest

from repogym.agent.prompts import load_prompts
from repogym.errors import ConfigError

TOOLS = [{"type": "function", "function": {"name": "bash", "description": "Run a command.\nMore.",
                                           "parameters": {"properties": {"command": {}}}}}]  # fmt: skip


def test_defaults_list_the_tools_and_carry_the_observation():
    prompts = load_prompts()
    assert "- bash(command): Run a command." in prompts.system(TOOLS)
    assert prompts.problem("<issue>add is wrong</issue>") == "<issue>add is wrong</issue>"
    assert "no_tool_call" in prompts.format_error("Format error: x", "no_tool_call")


def test_an_override_folder_replaces_only_its_files(tmp_path):
    (tmp_path / "system.md").write_text("Custom. Costs $$5. Tools:\n$tool_list\n")
    prompts = load_prompts(tmp_path)
    assert prompts.system(TOOLS).startswith("Custom. Costs $5. Tools:\n- bash(command)")
    assert prompts.sources["problem.md"].endswith("agent/prompts/problem.md")


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("system.md", "Hello $user\n", r"unknown placeholder\(s\) \['user'\]"),
        ("problem.md", "costs $5\n", "write '\\$\\$' for a literal dollar sign"),
        ("sytem.md", "x", r"unknown template\(s\) \['sytem.md'\]"),
    ],
)
def test_template_mistakes_fail_when_loading(tmp_path, name, text, message):
    (tmp_path / name).write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_prompts(tmp_path)


def test_a_missing_folder_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="not a folder"):
        load_prompts(tmp_path / "nope")
