"""Why a candidate's tests say nothing about its fix: a broken environment, Python 2 code, a test that dials out
(`needs_network`, grading's detector, which grading uses for TESTS_NEED_NETWORK too).

Pure functions over test and build logs, so that the funnel names the environment's fault instead of
blaming the candidate ("no_fail_to_pass: before 267 fail, after 267 fail" for a missing module).
"""

from __future__ import annotations

import re
from pathlib import Path

from repogym.grading.network_attempts import needs_network

__all__ = [
    "build_failure_cause",
    "env_build_cause",
    "first_env_error",
    "needs_network",
    "python2_code",
    "read_log",
]

_MAX_LOG_BYTES = 4_000_000

#: An import or collection error as pytest prints it (first group: the error itself).
_ENV_ERROR = re.compile(
    r"^(?:E\s+)?((?:ModuleNotFoundError|ImportError|SyntaxError|AttributeError: module|FileNotFoundError|"
    r"pkg_resources\.\w+|importlib\.metadata\.PackageNotFoundError|"
    r"TypeError: (?:required field|__init__\(\) got an unexpected keyword))[^\n]*)$",
    re.M,
)
#: pytest's own collection-failure lines, at the start of a line (a test of pytest itself prints these
#: words inside its assertion output, indented, and must not count).
_COLLECTION = re.compile(
    r"^(_+ ERROR collecting|ImportError while importing test module|ImportError while loading conftest|"
    r"Interrupted: \d+ errors? during collection)",
    re.M,
)
_PYTHON2 = re.compile(
    r"(Missing parentheses in call to '(?:print|exec)'|"
    r"SyntaxError: invalid syntax[^\n]*\n[^\n]*except \w+(?:\.\w+)*, \w+:|"
    r"No module named '(?:urllib2|urlparse|StringIO|cPickle|ConfigParser|__builtin__)'|"
    r"name '(?:unicode|basestring|xrange|long|unichr|raw_input)' is not defined)"
)
#: uv's and pip's words for the package or URL a build could not get.
_BUILD_CAUSE = re.compile(
    r"((?:Because|╰─▶ Because) [^\n]*(?:not found in the package registry|no versions of|"
    r"depends on|unsatisfiable)[^\n]*|"
    r"(?:error|×): Failed to (?:build|download|fetch|prepare distributions)[^\n]*|"
    r"Failed to fetch: [^\n]*|ERROR: Could not find a version that satisfies[^\n]*|"
    r"ERROR: No matching distribution found for[^\n]*|"
    r"error: [^\n]*(?:not found|Could not find)[^\n]*|"
    r"fatal: unable to access[^\n]*|the task needs Python[^\n]*)"
)


def read_log(path: str | Path) -> str:
    """A log's text ('' when it is missing); the start is kept, where pytest reports collection errors."""
    try:
        with open(path, "rb") as handle:
            return handle.read(_MAX_LOG_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return ""


def first_env_error(log: str) -> str:
    """The first import or collection error of a test log ('' when the run shows none).

    >>> first_env_error("____ ERROR collecting tests/test_a.py ____\\nE   ModuleNotFoundError: No module named 'jinja2'\\n")
    "ModuleNotFoundError: No module named 'jinja2'"
    >>> first_env_error("ImportError while loading conftest 'c.py'.\\nE   ModuleNotFoundError: No module named 'app'")
    "ModuleNotFoundError: No module named 'app'"
    >>> first_env_error("E       Failed: nomatch: '*ERROR collecting*'\\nE   and: 'INTERNALERROR> x'\\n")
    ''
    >>> first_env_error("E   assert 1 == 2\\n")
    ''
    """
    if not _COLLECTION.search(log):
        return ""  # an ImportError inside a test's own failure is that test's business
    # pytest's "E   ..." line names the error itself; its header line ("ImportError while loading
    # conftest ...") only names where it happened.
    errors = list(_ENV_ERROR.finditer(log))
    match = next((m for m in errors if m.group(0).startswith("E")), errors[0] if errors else None)
    if match:
        return match.group(1).strip()[:300]
    return ""  # a collection header with no import error under it (pytest's own suite prints them)


def python2_code(log: str) -> str:
    """What shows the code is Python 2 only ('' when nothing does).

    >>> python2_code("SyntaxError: Missing parentheses in call to 'print'. Did you mean print(...)?")
    "Missing parentheses in call to 'print'"
    """
    match = _PYTHON2.search(log)
    return " ".join(match.group(1).split())[:300] if match else ""


def build_failure_cause(log: str) -> str:
    """The package or URL an environment build failed on, in the installer's words ('' when not found).

    >>> build_failure_cause("  × No solution found when resolving dependencies:\\n  ╰─▶ Because foo was not found in the package registry and you require foo, we can conclude ...")
    '╰─▶ Because foo was not found in the package registry and you require foo, we can conclude ...'
    """
    match = _BUILD_CAUSE.search(log)
    return match.group(1).strip()[:400] if match else ""


_BUILD_LOG = re.compile(r"failed \((timed out|exit code -?\d+)\); log (\S+);")


def env_build_cause(message: str) -> str:
    """What an EnvBuildError's message says the build failed on: a timeout as such (the installer's
    words from an earlier, recovered step would mislead), else the installer's words from the message's
    tail or, past it, from the whole build log ('' when neither names one).

    >>> env_build_cause("environment build for o/r failed (timed out); log /nonexistent.log; tail:\\nBecause x")
    'timed out: the build ran past its wall-clock limit (a loaded machine or a source build; see the log)'
    """
    found = _BUILD_LOG.search(message)
    if found and found.group(1) == "timed out":
        return "timed out: the build ran past its wall-clock limit (a loaded machine or a source build; see the log)"
    cause = build_failure_cause(message)
    if not cause and found:
        cause = build_failure_cause(read_log(found.group(2))[-20000:])
    return cause
