"""The command lines the README shows are ones the CLI takes, spelt the current way (issue 27).

Each `repogym ...` command in the README's shell blocks is parsed by the command it names, as a run would
parse it (options, arguments, types, the sandbox check), without running it; an old spelling would print
a deprecation note, and the README must not teach one. Every `repogym COMMAND` named anywhere in the
README, docs/ and examples/ must exist.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest
import typer.main

from repogym.cli import app

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SEPARATORS = {"&&", "||", "|", ";", "&", ">", "2>", ">>"}


def _shell_blocks(text: str) -> list[str]:
    """The lines of the ```bash blocks, continuation lines joined."""
    blocks = re.findall(r"^```bash\n(.*?)^```", text, flags=re.S | re.M)
    return [line for block in blocks for line in block.replace("\\\n", " ").splitlines()]


def _commands(line: str) -> list[list[str]]:
    """The `repogym` commands of one shell line (comments dropped, split at && | ; & >), words after it."""
    commands, current = [], None
    for word in shlex.split(line, comments=True):
        if word in SEPARATORS:
            current = None
        elif current is None and (word == "repogym" or word.endswith("/repogym")):
            current = []
            commands.append(current)
        elif current is not None:
            current.append(word)
    return commands


def _resolve(words: list[str]):
    """The command a command line runs, its name and the words it parses (groups' default commands too)."""
    command, path, rest = typer.main.get_command(app), ["repogym"], list(words)
    while getattr(command, "commands", None) is not None:
        if rest and rest[0] in command.commands:
            path.append(rest[0])
            command = command.commands[rest.pop(0)]
        elif rest and getattr(command, "default", ""):
            path.append(command.default)
            command = command.commands[command.default]
        else:
            break
    return command, " ".join(path), rest


README_COMMANDS = [words for line in _shell_blocks(README.read_text()) for words in _commands(line)]


def test_the_readme_shows_commands():
    assert len(README_COMMANDS) > 30
    assert ["quickstart"] in README_COMMANDS


@pytest.mark.parametrize("words", README_COMMANDS, ids=lambda words: " ".join(words)[:60])
def test_a_readme_command_line_parses_in_its_current_spelling(words):
    command, name, rest = _resolve(words)
    assert getattr(command, "commands", None) is None or not rest, f"{name} has no command {rest[0]!r}"
    notes = io.StringIO()
    with contextlib.redirect_stderr(notes):
        command.make_context(name, rest)  # raises a usage error naming the option or argument
    assert "deprecated" not in notes.getvalue(), notes.getvalue()


def test_every_subcommand_named_in_the_docs_exists():
    """`repogym GROUP WORD` in the README, docs/ or examples/ names one of GROUP's commands (a renamed or
    removed one would leave the docs teaching a command that is gone)."""
    root = typer.main.get_command(app)
    groups = {
        name: set(command.commands) for name, command in root.commands.items() if hasattr(command, "commands")
    }
    files = [README, *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "examples").glob("*.yaml"))]
    missing = []
    for path in files:
        for match in re.finditer(r"\brepogym ([a-z]+) ([a-z]+)\b(?![./_-])", path.read_text()):
            group, word = match.groups()
            if group in groups and word not in groups[group]:
                missing.append(f"{path.relative_to(ROOT)}: repogym {group} {word}")
    assert missing == []
