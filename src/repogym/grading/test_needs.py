"""What a test run lacked from its environment: a Python module no install provided, a program or a Debian package
the machine does not have. Named on a grade whose required tests did not pass, so that "gold does not resolve"
comes with its cause (issue 28: xarray's cdms2 tests skip for want of a conda-forge-only package; sphinx's
inheritance-diagram tests skip for want of graphviz's `dot`), as TESTS_NEED_NETWORK names the network.

Read from three places:

- the skip reasons of the required tests that did not pass, and of the files skipped whole that hold them, from
  the runner's structured report (`TestReport.skip_reasons`: "could not import 'cdms2': No module named
  'cdms2'", 'graphviz "dot" is not available'): exact per test, and not something printed output can forge;
- the log's errors that say a module or a program is missing (``ModuleNotFoundError: No module named 'X'`` on a
  pytest ``E`` line; the shell's and subprocess's "not found" shapes that build diagnosis reads,
  `repogym.sandbox.syspackages.find_system_needs`);
- the task's `env.system_packages` that dpkg does not record as installed (`syspackages.installed_packages`):
  what the task says its tests expect, checked on the machine, whatever the log's wording.

A module is named only when nothing provides it: its top-level name is not a folder or a Python file's or
extension's stem anywhere in the base tree, nor a name the task's patch or test patch adds, nor in the
environment's site-packages. So a candidate that deletes one of the repository's own modules is not excused
as a missing package, and a broken import inside an installed package (`numpy.core._multiarray_umath`) is not
called absent. A program is named with the Debian package that ships it where syspackages knows it; a
program the table does not know is named only from the strict shapes (the shell's "not found"), never a
`*_config` name of the loose ones, which in test output is as often a Python name.

Never a verdict: the outcome and every test's status stay as judged; this only adds a cause to a run that
did not pass (`GradeResult.lacks`, at most `MAX_NAMED` names and a count of the rest). The log is one a
candidate writes: every pattern here reads it in linear time (tests/grading/test_test_needs.py's hostile
logs). Hand-written because no library reads these causes out of a test log.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from repogym.patches import changed_paths
from repogym.sandbox.syspackages import (
    NeedKind,
    find_system_needs,
    installed_packages,
    is_config_script,
    package_for,
)
from repogym.task import Task

__all__ = ["MAX_NAMED", "environment_lacks", "missing_system_packages", "provided_modules"]

#: The most causes a grade names; the rest are counted ("and 3 more").
MAX_NAMED = 5

_MODULE = r"[A-Za-z_][\w.]*"
#: A reason or error that says a module could not be imported (pytest.importorskip's and Python's words).
_NO_MODULE = re.compile(rf"(?:could not import '({_MODULE})'|No module named '({_MODULE})')")
#: Python's error as pytest prints it under a failing test (an `E` line), or as a traceback's last line.
#: One run of horizontal space: `\s*` after `^` would read on over every blank line that follows, at every
#: line, and two runs side by side (`E[ \t]+[ \t]*`) share a long one out in every way, both quadratic.
_MODULE_ERROR = re.compile(
    rf"^E?[ \t]*(?:ModuleNotFoundError|ImportError): No module named '({_MODULE})'", re.M
)
#: A skip reason that names a program as unavailable ('graphviz "dot" is not available', "'ffmpeg' not
#: found"): counted only for programs syspackages knows, as its loose shapes are, and read in the reasons of
#: the required tests only (a log's summary prints every skipped test's reason). The name's start is not
#: inside a longer name (linear on a line of "a-a-a-...").
_PROGRAM_UNAVAILABLE = re.compile(
    r"(?<![\w+-])[\"'`]?([\w+-]+)[\"'`]? (?:is )?not (?:available|installed|found)", re.I
)


def environment_lacks(
    log: str,
    skip_reasons: Iterable[str],
    provided: Callable[[str], bool],
    missing_packages: Iterable[str] = (),
) -> tuple[str, ...]:
    """What the run shows it lacked, each once, in the order found, at most `MAX_NAMED` and a count:
    "module cdms2", "program dot (Debian package graphviz)", "Debian package graphviz not installed".
    `skip_reasons`: the reasons of the required tests that did not pass; `provided(top_level_name)`: whether
    something provides that module (`provided_modules`); `missing_packages`: the task's system packages the
    machine lacks.

    >>> environment_lacks("", ["could not import 'cdms2': No module named 'cdms2'"], lambda name: False)
    ('module cdms2',)
    >>> environment_lacks("", ['graphviz "dot" is not available'], lambda name: False)
    ('program dot (Debian package graphviz)',)
    >>> environment_lacks("E   ModuleNotFoundError: No module named 'geo'", [], lambda name: name == "geo")
    ()
    """
    found: dict[str, None] = {}
    for reason in skip_reasons:
        for module in _NO_MODULE.finditer(reason):
            _add_module(found, module.group(1) or module.group(2), provided)
        for program in _PROGRAM_UNAVAILABLE.finditer(reason):
            if package_for(NeedKind.COMMAND, program.group(1)):
                _add_program(found, program.group(1))
        _add_programs(found, reason)
    for module in _MODULE_ERROR.finditer(log):
        _add_module(found, module.group(1), provided)
    _add_programs(found, log)
    for package in missing_packages:
        found[f"Debian package {package} not installed"] = None
    named = tuple(found)
    if len(named) > MAX_NAMED:
        return (*named[:MAX_NAMED], f"and {len(named) - MAX_NAMED} more")
    return named


def provided_modules(task: Task, tree: Path, venv: Path | None) -> Callable[[str], bool]:
    """Whether a top-level module name is provided: by the base tree (anywhere in it: a test folder pytest
    puts on sys.path, a src/ layout), by a file the task's patch or test patch adds, or by the environment's
    site-packages. Nothing is read until a name is asked about (most failed runs name no missing module)."""

    @functools.cache
    def added() -> frozenset[str]:
        paths = changed_paths(task.patch + task.test_patch)
        return frozenset(part.split(".", 1)[0] for path in paths for part in path.split("/"))

    def provided(name: str) -> bool:
        if name in added() or name in _tree_names(tree):
            return True
        return venv is not None and name in _site_names(venv)

    return provided


@functools.lru_cache(maxsize=64)
def _tree_names(root: Path) -> frozenset[str]:
    """Every name a module of the base tree could be imported by: each folder's name and each Python file's or
    extension's stem. Read once per tree (a base tree never changes), only for a run whose log names a
    missing module."""
    names: set[str] = set()
    for _folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        names.update(dirs)
        names.update(f.split(".", 1)[0] for f in files if f.endswith((".py", ".pyi", ".so", ".pyd", ".pyx")))
    return frozenset(names)


@functools.lru_cache(maxsize=64)
def _site_names(venv: Path) -> frozenset[str]:
    """The top-level names an environment's site-packages holds (folders, modules, extensions)."""
    names: set[str] = set()
    for site in venv.glob("lib/python*/site-packages"):
        for entry in os.scandir(site):
            names.add(entry.name.split(".", 1)[0] if entry.is_file() else entry.name)
    return frozenset(names)


def _add_module(found: dict[str, None], name: str, provided: Callable[[str], bool]) -> None:
    if not provided(name.split(".", 1)[0]):
        found[f"module {name}"] = None


def _add_programs(found: dict[str, None], text: str) -> None:
    for need in find_system_needs(text):
        if need.kind is NeedKind.COMMAND and (need.package or not is_config_script(need.name)):
            _add_program(found, need.name)


def _add_program(found: dict[str, None], name: str) -> None:
    package = package_for(NeedKind.COMMAND, name)
    found[f"program {name} (Debian package {package})" if package else f"program {name}"] = None


def missing_system_packages(task: Task) -> tuple[str, ...]:
    """The task's `env.system_packages` that dpkg does not record as installed (none where dpkg cannot tell:
    doctor says so; a grade names only what it knows)."""
    if not task.env.system_packages:
        return ()
    installed = installed_packages(task.env.system_packages)
    return () if installed is None else tuple(p for p in task.env.system_packages if p not in installed)
