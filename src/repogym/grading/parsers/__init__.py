"""Test log parsers: one signature that turns a test run in the sandbox into a TestReport.

A LogParser knows two things about one test framework: the shell command that runs some tests and leaves a
structured report behind (`command`), and how to read what that run produced (`parse`). The sandbox runs the
command and fills a `TestRun`; the grader hands it back to the same parser.

Built-in parsers (names in `log_parsers`):

- ``pytest``: results from the `repogym_report` plugin's JSON-lines report, cross-checked with the exit code;
  ``pytest-options``, ``pytest-v2``, ``pytest-matplotlib``, ``pytest-seaborn``: the same, for tasks whose ids
  SWE-bench read with its parser of that name (swebench_ids.py).
- ``unittest``: results from the `repogym_unittest` runner's JSON-lines report, cross-checked likewise.
- ``django``: Django's ``tests/runtests.py`` verbose log, read with SWE-bench's parse_log_django semantics.
- ``sympy``: sympy's ``bin/test`` verbose log, read with SWE-bench's parse_log_sympy semantics.

Every parser fails closed: a run that was killed, timed out, or whose report disagrees with its exit code gives
``TestReport(collected=False, note=...)`` with no results, so a broken run never looks like a pass.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from repogym.errors import UnknownNameError
from repogym.grading.parsers.common import REPORT_ENV, SANDBOX_PLUGIN_DIR
from repogym.grading.report import TestReport
from repogym.registry import Registry


@dataclass(frozen=True)
class TestRun:
    """What running tests in the sandbox produced (the sandbox fills it)."""

    __test__ = False  # not a pytest test class

    log: str
    """Combined stdout+stderr (may be capped, with a truncation marker)."""
    report_text: str | None
    """Contents of the structured report file, None if the run wrote none."""
    exit_code: int | None
    """The command's exit status; None if it was killed."""
    timed_out: bool = False
    log_path: str = ""
    duration_s: float = 0.0


@runtime_checkable
class LogParser(Protocol):
    """How one test framework is run and read."""

    name: str
    plugin_dir: Path | None
    """A host folder the sandbox binds read-only at /opt/repogym/plugins (None if not needed)."""

    def command(self, test_cmd: str, test_ids: Sequence[str], report_file: str) -> str:
        """The shell command (run with `sh -c` in the repo root inside the sandbox, with the task's Python env
        first on PATH) that runs `test_ids` (all tests when empty) and writes the structured report to
        `report_file` (an absolute path in the sandbox, outside the repo). `test_cmd` is the task's
        env.test_cmd, '' meaning the parser's default."""
        ...

    def parse(self, run: TestRun) -> TestReport:
        """The per-test statuses of `run`, or an untrusted (collected=False, no results) report saying why."""
        ...


log_parsers: Registry[LogParser] = Registry("log parser")


def get_parser(name: str) -> LogParser:
    """The parser registered as `name`, or the one a dotted path names (a class is instantiated).

    >>> get_parser("pytest").name
    'pytest'
    >>> get_parser("repogym.grading.parsers.sympy:SympyParser").name
    'sympy'
    """
    found = log_parsers.get(name)
    parser = found() if isinstance(found, type) else found
    if not isinstance(parser, LogParser):
        raise UnknownNameError(
            f"log parser {name!r} resolves to {type(parser).__name__}, which lacks name, plugin_dir, "
            "command() and parse(); see repogym.grading.parsers.LogParser"
        )
    return parser


# Registered here rather than in each module, so a parser module never imports this package half-built.
from repogym.grading.parsers.pytest import PytestParser  # noqa: E402
from repogym.grading.parsers.swebench_ids import READINGS  # noqa: E402

log_parsers.add("pytest", PytestParser())
# SWE-bench's other pytest-family parsers: the same runner, another reading of its cut test ids.
for _reading in READINGS:
    if _reading != "pytest":
        log_parsers.add(_reading, PytestParser(name=_reading, reading=_reading))
# The other frameworks' parsers are imported when a task names them: a grade imports the one it uses
# (each module compiles its log patterns at import; `repogym grade` start-up, issue 10).
_LAZY_PARSERS = {
    "UnittestParser": ("unittest", "repogym.grading.parsers.unittest"),
    "DjangoParser": ("django", "repogym.grading.parsers.django"),
    "SympyParser": ("sympy", "repogym.grading.parsers.sympy"),
}
for _class_name, (_name, _module) in _LAZY_PARSERS.items():
    log_parsers.add_path(_name, f"{_module}:{_class_name}")

if TYPE_CHECKING:
    from repogym.grading.parsers.django import DjangoParser
    from repogym.grading.parsers.sympy import SympyParser
    from repogym.grading.parsers.unittest import UnittestParser


def __getattr__(name: str) -> Any:
    """`from repogym.grading.parsers import DjangoParser` (and the other lazily registered classes)."""
    if name not in _LAZY_PARSERS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY_PARSERS[name][1]), name)
    globals()[name] = value
    return value


__all__ = [
    "REPORT_ENV",
    "SANDBOX_PLUGIN_DIR",
    "DjangoParser",
    "LogParser",
    "PytestParser",
    "SympyParser",
    "TestRun",
    "UnittestParser",
    "get_parser",
    "log_parsers",
]
