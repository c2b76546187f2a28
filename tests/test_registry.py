"""Registries: short names, aliases, any dotted path, and unknown names that list the known ones."""

from __future__ import annotations

import textwrap

import pytest

from repogym.errors import UnknownNameError
from repogym.registry import Registry


@pytest.fixture
def rewards() -> Registry:
    table: Registry = Registry("reward function")

    @table.register("tests_pass", "run_pytest")
    def tests_pass(**_):
        return 1.0

    @table.register("diff_size_penalty")
    def diff_size_penalty(**_):
        return -0.1

    return table


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """A team's own reward module, importable the way a plug-in would be (not registered anywhere)."""
    package = tmp_path / "acme_rewards"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "shaping.py").write_text(
        textwrap.dedent(
            """
            def lint_clean(**_):
                return 0.5

            class Weights:
                @staticmethod
                def heavy(**_):
                    return 2.0
            """
        )
    )
    (package / "needs_torch.py").write_text("import torch_that_is_not_installed\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return "acme_rewards"


def test_short_names_and_aliases(rewards):
    assert rewards.get("tests_pass")() == 1.0
    assert rewards.get("run_pytest") is rewards.get("tests_pass")
    assert rewards.canonical("run_pytest") == "tests_pass"
    assert "run_pytest" in rewards
    assert "nope" not in rewards
    assert rewards.names() == list(rewards) == ["diff_size_penalty", "tests_pass"]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("acme_rewards.shaping:lint_clean", 0.5),
        ("acme_rewards.shaping.lint_clean", 0.5),
        ("acme_rewards.shaping:Weights.heavy", 2.0),
        ("acme_rewards.shaping.Weights.heavy", 2.0),
    ],
)
def test_dotted_paths_import_user_code(rewards, user_module, name, value):
    assert rewards.get(name)() == value


def test_unknown_name_suggests_and_lists_known_names(rewards):
    with pytest.raises(UnknownNameError) as caught:
        rewards.get("test_pass")
    message = str(caught.value)
    assert "unknown reward function 'test_pass' (did you mean 'tests_pass'?)" in message
    assert "known: diff_size_penalty, run_pytest, tests_pass" in message
    assert "dotted path such as 'package.module:name'" in message
    assert isinstance(caught.value, KeyError), "callers may catch KeyError"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("acme_rewards.shaping:missing", r"module 'acme_rewards.shaping' has no attribute 'missing'"),
        ("acme_rewards.nothere:fn", r"cannot import module 'acme_rewards.nothere'"),
        ("nosuchpkg.rewards.fn", r"'nosuchpkg.rewards.fn': no importable module in it"),
        (
            "acme_rewards.needs_torch.fn",
            r"importing 'acme_rewards.needs_torch' failed: .*torch_that_is_not_installed",
        ),
        ("acme_rewards.shaping:", r"names a module, not an attribute"),
    ],
)
def test_bad_dotted_paths_say_why_and_list_known_names(rewards, user_module, name, message):
    with pytest.raises(UnknownNameError, match=message) as caught:
        rewards.get(name)
    assert "known reward function names: diff_size_penalty, run_pytest, tests_pass" in str(caught.value)


def test_a_name_cannot_be_registered_twice(rewards):
    with pytest.raises(ValueError, match="reward function 'run_pytest' is registered twice"):
        rewards.add("run_pytest", print)


def test_empty_registry_says_so():
    with pytest.raises(UnknownNameError, match=r"known: \(none\)"):
        Registry("policy").get("scripted")
