"""Why a candidate's tests say nothing about its fix: a broken environment, Python 2 code, a test that dials out
(`needs_network`, grading's detector, which grading uses for TESTS_NEED_NETWORK too).

Pure functions over test and build logs, so that the funnel names the environment's fault instead of
blaming the candidate ("no_fail_to_pass: before 267 fail, after 267 fail" for a missing module), and
`repogym env check` names why a repository's environment did not build (`SetupCause`, `diagnose_build`).
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from pathlib import Path

from repogym.sandbox.network_attempts import needs_network
from repogym.sandbox.syspackages import LACKS, SystemNeed, describe_needs, find_system_needs

__all__ = [
    "BuildDiagnosis",
    "SetupCause",
    "build_failure_cause",
    "diagnose_build",
    "empty_submodules",
    "env_build_cause",
    "first_env_error",
    "missing_submodules",
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


_SUBMODULE_PATH = re.compile(r"^\s*path\s*=\s*(.+?)\s*$", re.M)


def empty_submodules(checkout: Path) -> list[str]:
    """The submodule paths of the checkout's .gitmodules that hold no files there ([] when it has none).

    A checkout gets a submodule's files only where the clone it came from checked it out (see
    `repogym.sandbox.workspace`); a plain `git clone` leaves each one an empty folder.

    >>> import tempfile
    >>> top = Path(tempfile.mkdtemp())
    >>> _ = (top / ".gitmodules").write_text('[submodule "data"]\\n\\tpath = tests/data\\n\\turl = https://x/y.git\\n')
    >>> (top / "tests" / "data").mkdir(parents=True)
    >>> empty_submodules(top)
    ['tests/data']
    """
    try:
        text = (checkout / ".gitmodules").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    paths = dict.fromkeys(match.group(1).strip("\"'") for match in _SUBMODULE_PATH.finditer(text))
    return [path for path in paths if not (checkout / path).is_dir() or not any((checkout / path).iterdir())]


def missing_submodules(log: str, checkout: Path | None) -> list[str]:
    """The empty submodules of `checkout` that a test log names: what the suite failed on when it could not
    collect ([] when none is named: an empty submodule the failure never touched is not its cause)."""
    if checkout is None:
        return []
    return [
        path
        for path in empty_submodules(checkout)
        if re.search(rf"(?<![\w.-]){re.escape(path.rstrip('/'))}(?![\w.-])", log)
    ]


_BUILD_LOG = re.compile(r"failed \((timed out|exit code -?\d+)\); log (\S+);")
#: The installer's words when the repository's own build (its backend, setup.py) failed, not a download.
_OWN_BUILD_FAILED = re.compile(
    r"The build backend returned an error|Failed to build `|setup\.py[^\n]*did not run successfully"
)
#: pythons.choose_python's and interpreters.pick_interpreter's words for a Python that is not installed.
_NO_PYTHON = re.compile(r"needs (?:the )?Python [^\n]*none installed")
_TIMED_OUT = (
    "timed out: the build ran past its wall-clock limit (a loaded machine or a source build; see the log)"
)


class SetupCause(enum.StrEnum):
    """Why a repository's environment was not built or its test suite not collected, one name per way."""

    REPO_UNAVAILABLE = "repo_unavailable"
    PYTHON2_ONLY = "python2_only"
    NO_MATCHING_PYTHON = "no_matching_python"
    """No installed interpreter is one the commit allows (requires-python) or the task names."""
    SYSTEM_PACKAGE_MISSING = "system_package_missing"
    """The build needed a C library or program the machine lacks; the detail names the Debian package."""
    BUILD_TIMED_OUT = "build_timed_out"
    BUILD_NEEDS_NETWORK = "build_needs_network"
    """Building the repository reached for a host (a download while the build backend ran) and could not
    resolve it: only the package index is reachable, so no rule here can make that build succeed."""
    INSTALL_FAILED = "install_failed"
    """The installer failed for another reason; the detail quotes its error line."""
    SUBMODULE_MISSING = "submodule_missing"
    """The suite failed on a git submodule the checkout holds empty (the clone never checked it out, and only
    the package index is reachable to fetch it); the detail names the submodule paths."""
    COLLECTION_ERROR = "collection_error"
    """Test files failed to import; the detail names them and the first error."""
    NO_TESTS = "no_tests"
    TESTS_DID_NOT_RUN = "tests_did_not_run"
    """The runner gave no trusted report (a timeout, a crash, a runner that never started)."""


@dataclass(frozen=True)
class BuildDiagnosis:
    """What an environment build failed on."""

    cause: SetupCause
    detail: str
    """The cause in words ('' when the log names none: the error message is then all there is)."""
    needs: tuple[SystemNeed, ...] = ()
    """For SYSTEM_PACKAGE_MISSING: what the build lacked, each with its Debian package where known."""
    log: str = ""
    """The build log the message names ('' when it names none)."""


def diagnose_build(message: str) -> BuildDiagnosis:
    """What an EnvBuildError's message (and the build log it names) says the build failed on.

    In this order: an interpreter that is not installed; a timeout as such (the installer's words from an
    earlier, recovered step would mislead); a header, program or library the machine lacks, anywhere in the
    build log (a compiler's error sits far above the log's tail); else the installer's own words, from the
    message's tail or, past it, from the whole log.

    >>> diagnose_build("environment build for o/r failed (timed out); log /nonexistent.log; tail:\\nBecause x").cause
    <SetupCause.BUILD_TIMED_OUT: 'build_timed_out'>
    >>> found = diagnose_build("install step failed (exit code 1); log /nonexistent.log; tail:\\n"
    ...                        "  Error: pg_config executable not found.")
    >>> found.cause.value, found.detail
    ('system_package_missing', 'libpq-dev (command pg_config not found); install: apt-get install libpq-dev')
    """
    if _NO_PYTHON.search(message):
        return BuildDiagnosis(SetupCause.NO_MATCHING_PYTHON, message.strip().split("\n")[0])
    found = _BUILD_LOG.search(message)
    path = found.group(2) if found else ""
    if found and found.group(1) == "timed out":
        return BuildDiagnosis(SetupCause.BUILD_TIMED_OUT, _TIMED_OUT, log=path)
    log = read_log(path) if path else ""
    needs = find_system_needs(log or message)
    if needs:
        return BuildDiagnosis(SetupCause.SYSTEM_PACKAGE_MISSING, describe_needs(needs), needs, path)
    text = log or message
    if _OWN_BUILD_FAILED.search(text) and (reached := needs_network(text)):
        return BuildDiagnosis(
            SetupCause.BUILD_NEEDS_NETWORK,
            f"building the repository tried to reach a host ({reached}): only the package index "
            "is reachable; an env file's install steps can build it from files in the repository instead",
            log=path,
        )
    cause = build_failure_cause(message) or build_failure_cause(log[-20000:])
    return BuildDiagnosis(SetupCause.INSTALL_FAILED, cause, log=path)


def env_build_cause(message: str) -> str:
    """What an EnvBuildError's message says the build failed on, in words ('' when neither it nor its log
    names anything): `diagnose_build`'s detail, the packages the machine lacks said as such.

    >>> env_build_cause("environment build for o/r failed (timed out); log /nonexistent.log; tail:\\nBecause x")
    'timed out: the build ran past its wall-clock limit (a loaded machine or a source build; see the log)'
    >>> env_build_cause("install step failed (exit code 1); log /nonexistent.log; tail:\\nsh: 1: swig: not found")
    'the machine lacks: swig (command swig not found); install: apt-get install swig'
    """
    found = diagnose_build(message)
    return f"{LACKS}: {found.detail}" if found.cause is SetupCause.SYSTEM_PACKAGE_MISSING else found.detail
