"""What a test run lacked from its environment, read from its log: a Python module no install provided, a
program the machine does not have. Named on a grade whose required tests did not pass, so that "gold does not
resolve" comes with its cause (issue 28: xarray's cdms2 tests skip for want of a conda-forge-only package;
sphinx's inheritance-diagram tests skip for want of graphviz's `dot`), as TESTS_NEED_NETWORK names the network.

Read from two places in the log:

- the skip summary lines of the files that hold a required test that did not pass (pytest -rA:
  ``SKIPPED [1] tests/test_x.py:18: could not import 'cdms2': No module named 'cdms2'``; a test skipped because
  a module or program is missing says so in its reason, whatever the project's own words around it);
- anywhere in the log, an error that says a module or a program is missing (``ModuleNotFoundError: No module
  named 'X'`` on a pytest ``E`` line; the shell's and subprocess's "not found" shapes that build diagnosis
  reads, `repogym.sandbox.syspackages.find_system_needs`).

A module is named only when the repository does not hold it (its top-level name is neither a folder nor a
Python file's or extension's stem anywhere in the base tree): a candidate that deletes one of the repository's
own modules is the candidate's fault, not the environment's. A program is named with the Debian
package that ships it where syspackages knows it.

Never a verdict: the outcome and every test's status stay as judged; this only adds a cause to a run that
did not pass (`GradeResult.lacks`), and a log that prints these words for another reason is taken at its
word, as `needs_network` takes it. Hand-written because no library reads pytest's summary lines for their
reasons; the program shapes are syspackages' own table.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable
from pathlib import Path

from repogym.sandbox.syspackages import NeedKind, find_system_needs, package_for

__all__ = ["environment_lacks"]

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_MODULE = r"[A-Za-z_][\w.]*"
#: A skip summary line: file, line, reason.
_SKIP_LINE = re.compile(r"^SKIPPED \[\d+\] ([^:\n]+):\d+: (.*)$", re.M)
#: A reason or error that says a module could not be imported (pytest.importorskip's and Python's words).
_NO_MODULE = re.compile(rf"(?:could not import '({_MODULE})'|No module named '({_MODULE})')")
#: Python's error as pytest prints it under a failing test (an `E` line), or at a collection error.
_MODULE_ERROR = re.compile(rf"^E?\s*(?:ModuleNotFoundError|ImportError): No module named '({_MODULE})'", re.M)
#: A skip reason that names a program as unavailable ('graphviz "dot" is not available', "'ffmpeg' not
#: found"): counted only for programs syspackages knows, as its loose shapes are.
_PROGRAM_UNAVAILABLE = re.compile(r"[\"'`]?([\w+-]+)[\"'`]? (?:is )?not (?:available|installed|found)", re.I)


def environment_lacks(log: str, not_passed: Iterable[str], repo_root: Path) -> tuple[str, ...]:
    """What the run's log shows it lacked, each once, in the order found: "module cdms2",
    "program dot (Debian package graphviz)". `not_passed`: the required test ids that did not pass (their
    files' skip lines are read); `repo_root`: the base tree, whose own modules are never named.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> log = "SKIPPED [1] xarray/tests/test_a.py:9: could not import 'cdms2': No module named 'cdms2'"
    >>> environment_lacks(log, ["xarray/tests/test_a.py::test_cdms2"], root)
    ('module cdms2',)
    >>> environment_lacks('SKIPPED [1] tests/test_d.py:18: graphviz "dot" is not available', ["tests/test_d.py::t"], root)
    ('program dot (Debian package graphviz)',)
    >>> environment_lacks(log, ["xarray/tests/test_b.py::test_other"], root)
    ()
    """
    text = _ANSI.sub("", log)
    files = {test_id.split("::", 1)[0] for test_id in not_passed}
    found: dict[str, None] = {}
    for match in _SKIP_LINE.finditer(text):
        if match.group(1).strip() not in files:
            continue
        reason = match.group(2)
        for module in _NO_MODULE.finditer(reason):
            _add_module(found, module.group(1) or module.group(2), repo_root)
        for program in _PROGRAM_UNAVAILABLE.finditer(reason):
            if package_for(NeedKind.COMMAND, program.group(1)):
                _add_program(found, program.group(1))
    for module in _MODULE_ERROR.finditer(text):
        _add_module(found, module.group(1), repo_root)
    for need in find_system_needs(_hint_lines(text)):
        if need.kind is NeedKind.COMMAND:
            _add_program(found, need.name)
    return tuple(found)


#: Words that every shape of a missing program holds (syspackages' "not found", "No such file or directory",
#: "could not find", "is not installed"), lower case.
_HINTS = ("found", "no such file", "not installed", "find")


def _hint_lines(text: str) -> str:
    """The lines of `text` that hold one of `_HINTS`, in order: syspackages' shapes were written for build
    logs, read once per failed build; a test log is read on every failing grade and can be megabytes (0.2 s
    for sympy's 270 KB), so they read only the lines that could match (str.find over the lowered text)."""
    lowered = text.lower()
    starts: set[int] = set()
    for hint in _HINTS:
        at = lowered.find(hint)
        while at >= 0:
            start = lowered.rfind("\n", 0, at) + 1
            starts.add(start)
            end = lowered.find("\n", at)
            at = lowered.find(hint, end) if end >= 0 else -1
    lines = []
    for start in sorted(starts):
        end = text.find("\n", start)
        lines.append(text[start : end if end >= 0 else len(text)])
    return "\n".join(lines)


def _add_module(found: dict[str, None], name: str, repo_root: Path) -> None:
    top = name.split(".", 1)[0]
    if top not in _tree_module_names(repo_root):  # else the repository's own: a candidate removed it
        found[f"module {top}"] = None


@functools.lru_cache(maxsize=64)
def _tree_module_names(root: Path) -> frozenset[str]:
    """Every name a module of the base tree could be imported by, wherever it sits (a test folder that pytest
    puts on sys.path, a src/ layout): each folder's name and each Python file's or extension's stem. Read
    once per tree (a base tree never changes) and only for a run whose log names a missing module."""
    names: set[str] = set()
    for _folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        names.update(dirs)
        names.update(f.split(".", 1)[0] for f in files if f.endswith((".py", ".pyi", ".so", ".pyd", ".pyx")))
    return frozenset(names)


def _add_program(found: dict[str, None], name: str) -> None:
    package = package_for(NeedKind.COMMAND, name)
    found[f"program {name} (Debian package {package})" if package else f"program {name}"] = None
