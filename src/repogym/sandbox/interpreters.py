"""Which Python interpreters this machine has, and the one a task's `env.python` names.

`env.python` is a version ("3.9" = the newest 3.9.x found, "3.9.18" = that one) or an interpreter's
absolute path. Interpreters are never downloaded: a version that is not installed is an EnvBuildError
that says which are. Paths given to uv are the interpreter's real executable (pyenv's shims fail for
versions that are not the global one).

`prefix_layout_lines` lays out an environment's interpreter so that it is a Python prefix of its own as well
as a venv (sandbox/envbuild.py's layout rule).
"""

from __future__ import annotations

import functools
import glob
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from repogym.errors import EnvBuildError
from repogym.sandbox.base import VENV_DIR

# Python 2.7 compatible: an explicit interpreter may be old.
_DESCRIBE = (
    "import sys, os; v = sys.version_info; "
    "sys.stdout.write('%d.%d.%d\\n%s\\n%s\\n' % (v[0], v[1], v[2], "
    "getattr(sys, 'base_prefix', sys.prefix), os.path.realpath(sys.executable)))"
)


@dataclass(frozen=True)
class Interpreter:
    version: str
    """Full version, e.g. 3.9.18."""
    executable: Path
    prefix: Path


def find_interpreters() -> list[Interpreter]:
    """CPython installations on this machine: pyenv's, the one running repogym, and /usr/bin's.

    Searched once per state of the folders searched (a grade asks for every task; the search globs and
    resolves some hundred paths): installing or removing an interpreter changes its folder's time.
    """
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    folders = (pyenv_root / "versions", Path("/usr/bin"), Path("/usr/local/bin"))
    return list(_search(pyenv_root, tuple(_mtime(folder) for folder in folders)))


def _mtime(folder: Path) -> int:
    try:
        return folder.stat().st_mtime_ns
    except OSError:
        return 0


@functools.lru_cache(maxsize=8)
def _search(pyenv_root: Path, stamp: tuple[int, ...]) -> tuple[Interpreter, ...]:
    """`find_interpreters`' search; `stamp` (the folders' times) is the cache key only."""
    found: dict[str, Interpreter] = {}
    candidates = sorted(glob.glob(str(pyenv_root / "versions" / "*" / "bin" / "python[23].*")))
    candidates += [
        sys.executable,
        *sorted(glob.glob("/usr/bin/python3.*")),
        *sorted(glob.glob("/usr/local/bin/python3.*")),
    ]
    for raw in candidates:
        path = Path(raw)
        match = re.fullmatch(r"python(\d+\.\d+)", path.name)
        if raw != sys.executable and not match:
            continue
        if path.parent.parent.name.count(".") == 2 and "versions" in path.parts:
            version = path.parent.parent.name
            prefix = path.parent.parent
        elif raw == sys.executable:
            version = ".".join(map(str, sys.version_info[:3]))
            prefix = Path(sys.base_prefix)
            path = Path(sys._base_executable) if hasattr(sys, "_base_executable") else path
        else:
            version = match.group(1) if match else ""
            prefix = path.parent.parent
        found.setdefault(version, Interpreter(version, path.resolve(), prefix.resolve()))
    return tuple(sorted(found.values(), key=lambda i: [int(p) for p in re.findall(r"\d+", i.version)]))


def pick_interpreter(wanted: str) -> Interpreter:
    """The interpreter `env.python` names: '' = the one running repogym, a version prefix, or a path."""
    if wanted.startswith("/"):
        return interpreter_at(wanted)
    interpreters = find_interpreters()
    if not wanted:
        wanted = ".".join(map(str, sys.version_info[:3]))
    matches = [i for i in interpreters if i.version == wanted or i.version.startswith(wanted + ".")]
    if not matches:
        have = ", ".join(i.version for i in interpreters) or "none"
        raise EnvBuildError(
            f"the task needs Python {wanted}, none installed: Python {wanted} is not installed on this "
            f"machine (found: {have}); repogym cannot download interpreters here. Install it (e.g. "
            "`pyenv install`) or set env.python to one of these versions or to an interpreter's path"
        )
    return matches[-1]


@functools.cache
def interpreter_at(path: str) -> Interpreter:
    """The interpreter at an absolute path, asked for its version and installation prefix."""
    if not os.access(path, os.X_OK) or not Path(path).is_file():
        raise EnvBuildError(
            f"the task needs the Python at {path} (env.python), none installed there: no executable file "
            f"at that path. Installed: {', '.join(i.version for i in find_interpreters()) or 'none'}"
        )
    try:
        # Runs the interpreter itself on the host with a fixed one-liner: no repository code. -E -s (no
        # PYTHON* variables, no user site) rather than -I, which Python 2.7 lacks.
        done = subprocess.run(
            [path, "-E", "-s", "-c", _DESCRIBE],
            capture_output=True,
            text=True,
            timeout=30,
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvBuildError(f"env.python {path} could not be run: {exc}") from None
    lines = done.stdout.splitlines()
    if done.returncode != 0 or len(lines) != 3:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise EnvBuildError(f"env.python {path} is not a working Python interpreter: {' | '.join(tail)}")
    version, prefix, executable = lines
    return Interpreter(version, Path(executable), Path(prefix).resolve())


def prefix_layout_lines(major_minor: tuple[int, ...]) -> list[str]:
    """Make the venv's interpreter a Python prefix of its own as well (see the module docstring).

    CPython finds a venv by the pyvenv.cfg beside the path it was started by, not the one that path links
    to; a link made elsewhere to sys.executable found none and ran the base interpreter alone. Started by
    such a link, the interpreter now resolves to `.prefix/bin/pythonX.Y`, finds the standard library's
    landmark under `.prefix/lib/pythonX.Y` and takes that prefix, whose site-packages is the venv's.
    Started as the venv's own python it is the venv it was, pyvenv.cfg and all.
    """
    version = ".".join(str(part) for part in major_minor[:2])
    prefix = f"{VENV_DIR}/.prefix"
    library = f"{prefix}/lib/python{version}"
    ask = f"{VENV_DIR}/bin/python -c"
    return [
        f"base_python=\"$({ask} 'import os, sys; print(os.path.realpath(sys.executable))')\"",
        f"base_prefix=\"$({ask} 'import sys; print(sys.base_prefix)')\"",
        f"mkdir -p {prefix}/bin {library}",
        f'cp "$base_python" {prefix}/bin/python{version}',
        f'ln -s "$base_prefix"/lib/python{version}/* {library}/',
        f"rm -f {library}/site-packages",  # the base interpreter's own: the venv's stands there instead
        f"ln -s ../../../lib/python{version}/site-packages {library}/site-packages",
        f'[ ! -d "$base_prefix/include" ] || ln -s "$base_prefix/include" {prefix}/include',
        f"ln -sfn ../.prefix/bin/python{version} {VENV_DIR}/bin/python",
        f"ln -sfn python {VENV_DIR}/bin/python{major_minor[0]}",
        f"ln -sfn python {VENV_DIR}/bin/python{version}",
    ]
