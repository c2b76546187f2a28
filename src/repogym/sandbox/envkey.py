"""What decides a Python environment's contents, hashed into its cache key.

The key covers the repo, the interpreter, the packages installed before the
install steps (the task's, and those its log parser needs), the install
commands, `exclude_newer`, the folder of wheels of an offline build
(`$REPOGYM_WHEELS`: its path and each file's name, size and time), and the install-relevant parts of the repository's
dependency files at the commit. The test command, the parser's name and the
test variables do not count: tasks that differ only in how they run tests
share one environment, as SWE-bench's per-version specs share theirs.

The dependency files' part is kept beside a pristine checkout (`<checkout>.envdeps`, where the jail never
looks) once computed: a cached grade then reads one small file instead of globbing and parsing the
checkout's packaging files each time (0.005-0.1 s a grade, more under load). The record is used only while
the checkout is the same one (its `.complete` marker, written once when it is made, has the same inode and
time) and every file it read still has the same inode, size and time; anything else recomputes it.
"""

from __future__ import annotations

import base64
import binascii
import configparser
import datetime
import hashlib
import json
import os
import threading
import tomllib
from pathlib import Path

from repogym.errors import EnvBuildError
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
        "v": 4,
    }
    wheels = offline_wheels()
    if wheels is not None:  # only then: every other key stays as it was
        spec["wheels"] = [str(wheels), wheels_listing(wheels)]
    digest.update(json.dumps(spec, sort_keys=True).encode())
    digest.update(dependency_files_content(pristine))
    return digest.hexdigest()[:20]


def offline_wheels() -> Path | None:
    """`$REPOGYM_WHEELS`: the folder of wheels that every build installs from alone (None: unset, the index)."""
    given = os.environ.get("REPOGYM_WHEELS")
    if not given:
        return None
    folder = Path(given).expanduser().resolve()
    if not folder.is_dir():
        raise EnvBuildError(f"REPOGYM_WHEELS={given}: no such folder; give a folder of wheels, or unset it")
    return folder


def wheels_listing(folder: Path) -> list[list[str | int]]:
    """Each file of the wheel folder as [name, size, mtime in ns]: a folder refilled in place (a wheel added,
    removed or rebuilt under its old name) keys new environments, not the ones built from what it held."""
    with os.scandir(folder) as entries:
        files = [(entry.name, entry.stat()) for entry in entries if entry.is_file()]
    return [[name, stat.st_size, stat.st_mtime_ns] for name, stat in sorted(files)]


def dependency_files_content(pristine: Path) -> bytes:
    """The install-relevant parts of `pristine`'s dependency files, as the key hashes them (kept beside a
    pristine checkout, see the module docstring)."""
    stamp = _identity(pristine.with_name(f"{pristine.name}.complete"))
    record_path = pristine.with_name(f"{pristine.name}.envdeps")
    if stamp is not None:
        try:
            record = json.loads(record_path.read_text())
            files = record["files"]
            if (
                record["v"] == _RECORD_VERSION
                and record["stamp"] == stamp
                and all(_identity(pristine / name) == identity for name, identity in files.items())
            ):
                return base64.b64decode(record["content"], validate=True)
        except (OSError, ValueError, KeyError, TypeError, AttributeError, binascii.Error):
            pass  # no record, or not one this code wrote: compute it
    content = bytearray()
    files: dict[str, list[int] | None] = {}
    for pattern in _DEP_FILES:
        for path in sorted(pristine.glob(pattern)):
            files[path.relative_to(pristine).as_posix()] = _identity(path)
            if path.name == "pyproject.toml":
                relevant = _pyproject_deps(path)
            elif path.name == "setup.cfg":
                relevant = _setup_cfg_deps(path)
            else:
                relevant = path.read_bytes()
            content += path.name.encode() + b"\0" + relevant + b"\0"
    if stamp is not None and all(identity is not None for identity in files.values()):  # no links
        encoded = base64.b64encode(bytes(content)).decode()
        record = {"v": _RECORD_VERSION, "stamp": stamp, "files": files, "content": encoded}
        temporary = record_path.with_name(f"{record_path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            temporary.write_text(json.dumps(record))
            os.replace(temporary, record_path)  # readers see the old record or the new, never half
        except OSError:
            temporary.unlink(missing_ok=True)
    return bytes(content)


#: Bump when what `dependency_files_content` returns changes: older records are then recomputed.
_RECORD_VERSION = 1


def _identity(path: Path) -> list[int] | None:
    """(inode, size, mtime in ns) of a file, never through a link; None when it is missing or a link."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return None if os.path.islink(path) else [info.st_ino, info.st_size, info.st_mtime_ns]


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
