"""What decides a Python environment's contents, hashed into its cache key.

The key covers the repo, the interpreter, the packages installed before the
install steps (the task's, and those its log parser needs), the install
commands, `exclude_newer`, and the install-relevant parts of the repository's
dependency files at the commit. The test command, the parser's name and the
test variables do not count: tasks that differ only in how they run tests
share one environment, as SWE-bench's per-version specs share theirs.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import tomllib
from pathlib import Path

from repogym.sandbox.interpreters import Interpreter
from repogym.task import Task

_DEP_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "requirements*.txt", "requirements/*.txt", "tox.ini")


def env_key(task: Task, pristine: Path, interpreter: Interpreter) -> str:
    """What decides the environment's contents: repo, interpreter, packages, install steps, exclude_newer
    and the install-relevant parts of the dependency files (see the module docstring).

    Of pyproject.toml and setup.cfg only the parts that change what gets installed count (build system,
    dependencies, extras, requires-python, build-tool tables, setuptools options), so a version bump or a
    tool setting does not force a rebuild. Other dependency files count whole.
    """
    digest = hashlib.sha256()
    spec = {
        "repo": task.repo,
        "python": [interpreter.version, str(interpreter.executable)],
        "packages": environment_packages(task),
        "install": list(task.env.install),
        "exclude_newer": exclude_newer_timestamp(task.env.exclude_newer),
        "v": 3,
    }
    digest.update(json.dumps(spec, sort_keys=True).encode())
    for pattern in _DEP_FILES:
        for path in sorted(pristine.glob(pattern)):
            if path.name == "pyproject.toml":
                content = _pyproject_deps(path)
            elif path.name == "setup.cfg":
                content = _setup_cfg_deps(path)
            else:
                content = path.read_bytes()
            digest.update(path.name.encode() + b"\0" + content + b"\0")
    return digest.hexdigest()[:20]


def environment_packages(task: Task) -> list[str]:
    """The packages installed before the install steps: the task's, plus pytest for the pytest parser."""
    return ["pytest", *task.env.packages] if task.env.log_parser == "pytest" else list(task.env.packages)


def exclude_newer_timestamp(value: str) -> str:
    """`env.exclude_newer` as the full UTC timestamp given to uv and pip ('' = none); a date means its end.

    >>> exclude_newer_timestamp("2021-03-04")
    '2021-03-05T00:00:00Z'
    >>> exclude_newer_timestamp("2021-03-04t05:06:07z")
    '2021-03-04T05:06:07Z'
    """
    if not value:
        return ""
    if len(value) == 10:
        return (datetime.date.fromisoformat(value) + datetime.timedelta(days=1)).isoformat() + "T00:00:00Z"
    return value.upper().replace(" ", "T")


def _pyproject_deps(path: Path) -> bytes:
    """The install-relevant tables of a pyproject.toml, canonically serialised (the whole file if unreadable).

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> a, b = folder / "a.toml", folder / "b.toml"
    >>> _ = a.write_text('[project]\\nname = "x"\\nversion = "1.0"\\ndependencies = ["attrs"]\\n')
    >>> _ = b.write_text('[project]\\nname = "x"\\nversion = "2.0"\\ndependencies = ["attrs"]\\n')
    >>> _pyproject_deps(a) == _pyproject_deps(b)
    True
    """
    raw = path.read_bytes()
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return raw
    project = data.get("project", {})
    tool = data.get("tool", {})
    relevant = {
        "build-system": data.get("build-system"),
        "project": {
            k: project.get(k)
            for k in (
                "name",
                "dependencies",
                "optional-dependencies",
                "requires-python",
                "dynamic",
                "scripts",
                "entry-points",
            )
        },
        "tool": {k: tool.get(k) for k in ("setuptools", "poetry", "hatch", "flit", "pdm")},
    }
    return json.dumps(relevant, sort_keys=True, default=str).encode()


def _setup_cfg_deps(path: Path) -> bytes:
    """The install-relevant sections of a setup.cfg ([options*], the project name), canonically serialised.

    >>> import tempfile, pathlib
    >>> a = pathlib.Path(tempfile.mkdtemp()) / "setup.cfg"
    >>> _ = a.write_text("[metadata]\\nname = x\\n[options]\\ninstall_requires = attrs\\n[flake8]\\nmax-line = 80\\n")
    >>> before = _setup_cfg_deps(a)
    >>> _ = a.write_text("[metadata]\\nname = x\\n[options]\\ninstall_requires = attrs\\n[flake8]\\nmax-line = 99\\n")
    >>> _setup_cfg_deps(a) == before
    True
    """
    import configparser

    raw = path.read_bytes()
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(raw.decode("utf-8"))
    except (configparser.Error, UnicodeDecodeError):
        return raw
    relevant = {
        section: dict(parser.items(section, raw=True))
        for section in parser.sections()
        if section == "options" or section.startswith("options.")
    }
    relevant["name"] = {"name": parser.get("metadata", "name", fallback="", raw=True)}
    return json.dumps(relevant, sort_keys=True).encode()
