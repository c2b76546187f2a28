"""Which files configure pytest, and whether an edit to one changes what pytest would read from it.

The names are pytest's own (``CONFIG_LOADERS_BY_NAME`` in _pytest/config/findpaths.py, pytest 9), plus the
sections older pytests read: a dedicated file configures pytest whatever it holds; a shared file
(setup.cfg, tox.ini, pyproject.toml) only through its pytest section. pytest looks for them in every folder
above the tests it is given, so the rules apply to these names wherever they are.

Comparing sections instead of hunk headers is what makes the check hold against edits that move lines
into a section without touching its header: an indented line continues the previous value in pytest's ini
parser (so ``" [flake8]"`` makes the next lines part of ``[pytest]``), and TOML can write the same table as
``[tool.pytest.ini_options]``, ``[tool]`` plus a dotted key, or an inline table.
"""

from __future__ import annotations

import tomllib
from pathlib import PurePosixPath
from typing import Any

#: Files that configure pytest by their name alone (even empty ones decide the rootdir).
DEDICATED_FILES = frozenset({"pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini"})
#: Files that configure pytest through one section; pytest reads the first that has it, folder by folder.
SHARED_FILES = frozenset({"pyproject.toml", "tox.ini", "setup.cfg"})
#: Section names of the ini files, for every pytest since 2.x ([pytest] in setup.cfg before pytest 4).
_INI_SECTIONS = frozenset({"pytest", "tool:pytest"})


def pytest_config_changed(path: str, old: str, new: str) -> bool:
    """True when `new` may configure pytest differently from `old` (the same file before and after an
    edit, '' when it did not exist); a text that does not parse counts as changed.

    >>> pytest_config_changed("setup.cfg", "[flake8]\\nmax = 1\\n", "[flake8]\\nmax = 2\\n")
    False
    >>> pytest_config_changed("setup.cfg", "[tool:pytest]\\nx = 1\\n[flake8]\\nmax = 1\\n",
    ...                       "[tool:pytest]\\nx = 1\\n [flake8]\\naddopts = -p evil\\n")
    True
    >>> pytest_config_changed("pyproject.toml", '[project]\\nname = "a"\\n', 'tool = {pytest = {x = 1}}\\n[project]\\nname = "a"\\n')
    True
    >>> pytest_config_changed("pyproject.toml", '[project]\\nname = "a"\\n', '[project]\\nname = "b"\\n')
    False
    """
    name = PurePosixPath(path).name
    if name in DEDICATED_FILES:
        return old != new
    if name == "pyproject.toml":
        return _toml_tables(old) != _toml_tables(new) or _toml_tables(new) is None
    if name in SHARED_FILES:
        return _ini_regions(old) != _ini_regions(new)
    return False


def sets_option(path: str, text: str, option: str) -> bool:
    """Whether the file `path` (by its name) holding `text` sets pytest's ini option `option` in what pytest
    reads of it: a dedicated file's pytest section, or a shared file's pytest section only.

    >>> sets_option("setup.cfg", "[flake8]\\ntestpaths = x\\n[tool:pytest]\\naddopts = -q\\n", "testpaths")
    False
    >>> sets_option("pyproject.toml", '[tool.pytest.ini_options]\\ntestpaths = ["tests"]\\n', "testpaths")
    True
    >>> sets_option("pytest.ini", "[pytest]\\ntestpaths =\\n    tests\\n", "testpaths")
    True
    """
    name = PurePosixPath(path).name
    if name.endswith(".toml"):
        tables = _toml_tables(text)
        if tables is None:
            return False
        tool_pytest, top = tables
        sections = [top] if name in DEDICATED_FILES else []
        if isinstance(tool_pytest, dict):
            sections += [tool_pytest, tool_pytest.get("ini_options")]
        return any(isinstance(section, dict) and option in section for section in sections)
    if name not in DEDICATED_FILES | SHARED_FILES:
        return False
    return any(
        line.split("=", 1)[0].split(":", 1)[0].strip() == option
        for region in _ini_regions(text)
        for line in region[1:]
        if line[:1] not in (" ", "\t") and ("=" in line or ":" in line)
    )


def _toml_tables(text: str) -> tuple[Any, Any] | None:
    """The ``[tool.pytest]`` and top-level ``[pytest]`` tables of a TOML document; None when it does not parse."""
    try:
        document = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, UnicodeError, ValueError):
        return None
    tool = document.get("tool")
    return (tool.get("pytest") if isinstance(tool, dict) else None, document.get("pytest"))


def _ini_regions(text: str) -> list[list[str]]:
    """The lines of every stretch of an ini file that any pytest might read as its section.

    Generous on purpose, so that no parser can see more: a header counts wherever its bracket stands
    (configparser allows indentation) and whatever whitespace or case it has; the stretch only ends at a
    line that starts with '[' in its first column (pytest's iniconfig reads an indented line as a value).
    """
    regions: list[list[str]] = []
    current: list[str] | None = None
    for line in text.removeprefix("\ufeff").splitlines():
        if _is_pytest_header(line):
            current = [line.strip()]
            regions.append(current)
        elif line.startswith("["):
            current = None
        elif current is not None:
            current.append(line.rstrip())
    return regions


def _is_pytest_header(line: str) -> bool:
    stripped = line.strip()
    if not stripped.startswith("["):
        return False
    name = "".join(stripped[1:].split("]", 1)[0].split()).lower()
    return name in _INI_SECTIONS
