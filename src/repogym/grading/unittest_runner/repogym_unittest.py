"""Run unittest tests and write each result as a JSON line to a report file, for repogym's grader.

Run inside the sandbox as ``python /opt/repogym/plugins/repogym_unittest.py [-v|-q] [NAME ...]`` or
``... repogym_unittest.py discover [-s START] [-p PATTERN] [-t TOP]`` (this folder is mounted at
/opt/repogym/plugins). Run as a script, not with ``-m``: the runner and the standard library it uses are
imported while no folder of the repository is on sys.path (a ``unittest.py`` or ``json.py`` there, or a
``repogym_unittest.py``, cannot stand in for them); then the working directory goes first on sys.path, as
``python -m unittest`` has it. NAMEs are what ``python -m unittest`` takes: dotted names
(``pkg.tests.test_x.TestC.test_y``) or paths of test files. No NAME means discovery from the current directory.
The report file's path comes from the environment variable REPOGYM_REPORT_FILE, removed from os.environ at once
so tests and their subprocesses do not inherit it.

Records, one JSON object per line: ``{"event": "start", ...}``; per result ``{"event": "test", "id": ...,
"outcome": "passed"|"failed"|"error"|"skipped"|"xfail"|"xpass", "duration": float}`` ("xfail" only for a test
decorated with expectedFailure, else "failed"; a failing subtest is
recorded under its test's id; a class or module fixture error under unittest's description of it, such as
``setUpClass (mod.Class)``); per name that could not be loaded ``{"event": "load_error", "id": NAME}``; last
``{"event": "sessionfinish", "exitstatus": int, "records": int, "tests_run": int}``.

Exit status: 0 all passed, 1 a test failed or errored, an unexpected success, or a name failed to load;
2 bad command line; 5 no test ran.

Python 2.7 and 3.6+ syntax (no f-strings, no annotations), standard library only.
"""

# Runs under the task's interpreter, Python 2.7 included: no f-strings, keep (object) bases, __future__ imports, zip().
# ruff: noqa: UP004, UP010, UP032, B905

from __future__ import print_function

import os
import sys


def _outside(path, folder):
    real = os.path.realpath(path or ".")
    return real != folder and not real.startswith(folder + os.sep)


# os and sys are loaded before any script runs; the rest is imported with the repository's folders
# (the working directory, PYTHONPATH=src, a flat editable install) off sys.path.
_SAVED_PATH = list(sys.path)
sys.path[:] = [p for p in _SAVED_PATH if _outside(p, os.path.realpath(os.getcwd()))]
try:
    import json
    import platform
    import time
    import unittest
finally:
    sys.path[:] = _SAVED_PATH

REPORT_ENV = "REPOGYM_REPORT_FILE"
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NO_TESTS = 0, 1, 2, 5
USAGE = (
    "usage: python repogym_unittest.py [-v|-q] [NAME ...]\n"
    "       python repogym_unittest.py discover [-s START] [-p PATTERN] [-t TOP]"
)


class UsageError(Exception):
    pass


class ReportWriter(object):
    """Writes records, flushing each so a killed run still leaves what it saw."""

    def __init__(self, path):
        # O_EXCL: a file that is already there is stale or planted; refuse to append to it.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        self._stream = os.fdopen(fd, "wb")
        self.records = 0

    def write(self, record, counted=True):
        line = json.dumps(record, sort_keys=True) + "\n"
        if not isinstance(line, bytes):
            line = line.encode("utf-8")
        self._stream.write(line)
        self._stream.flush()
        if counted:
            self.records += 1

    def close(self):
        self._stream.close()


def _marked_expected_failure(test):
    """True when the test method (or its class) is decorated with unittest.expectedFailure."""
    method = getattr(test, getattr(test, "_testMethodName", ""), None)
    if getattr(method, "__unittest_expecting_failure__", False):
        return True
    if getattr(test, "__unittest_expecting_failure__", False):
        return True
    # Python 2's decorator leaves no attribute: it wraps the test in unittest/case.py's `wrapper`.
    code = getattr(getattr(method, "__func__", method), "__code__", None)
    filename = os.path.basename(getattr(code, "co_filename", "")).split(".")[0]
    return getattr(code, "co_name", "") == "wrapper" and filename == "case"


def _result_class(writer):
    """A TextTestResult that also reports every outcome to `writer`."""
    base = unittest.TextTestResult

    class JsonResult(base):
        def startTest(self, test):
            self._repogym_started = time.time()
            base.startTest(self, test)

        def _record(self, test, outcome):
            started = getattr(self, "_repogym_started", None)
            duration = time.time() - started if started is not None else 0.0
            writer.write({"event": "test", "id": test.id(), "outcome": outcome, "duration": duration})

        def addSuccess(self, test):
            base.addSuccess(self, test)
            self._record(test, "passed")

        def addFailure(self, test, err):
            base.addFailure(self, test, err)
            self._record(test, "failed")

        def addError(self, test, err):
            base.addError(self, test, err)
            self._record(test, "error")

        def addSkip(self, test, reason):
            base.addSkip(self, test, reason)
            self._record(test, "skipped")

        def addExpectedFailure(self, test, err):
            base.addExpectedFailure(self, test, err)
            # Only a test decorated with expectedFailure may fail as expected: Python 2 also takes an
            # _ExpectedFailure raised by any code, code under test included.
            self._record(test, "xfail" if _marked_expected_failure(test) else "failed")

        def addUnexpectedSuccess(self, test):
            base.addUnexpectedSuccess(self, test)
            self._record(test, "xpass")

        def addSubTest(self, test, subtest, err):  # Python 3.4+ only calls this
            base.addSubTest(self, test, subtest, err)
            if err is not None:
                failed = issubclass(err[0], test.failureException)
                self._record(test, "failed" if failed else "error")

    return JsonResult


def _parse_args(argv):
    """(verbosity, names, discover arguments or None)."""
    verbosity, names = 2, []
    if argv and argv[0] == "discover":
        options = {"-s": ".", "-p": "test*.py", "-t": None}
        positional, rest = [], list(argv[1:])
        while rest:
            arg = rest.pop(0)
            if arg in options and rest:
                options[arg] = rest.pop(0)
            elif arg in ("-v", "--verbose", "-q", "--quiet"):
                verbosity = 0 if arg in ("-q", "--quiet") else 2
            elif arg.startswith("-"):
                raise UsageError("unknown option " + arg)
            else:
                positional.append(arg)
        for key, value in zip(("-s", "-p", "-t"), positional):
            options[key] = value
        return verbosity, [], (options["-s"], options["-p"], options["-t"])
    for arg in argv:
        if arg in ("-v", "--verbose", "-q", "--quiet"):
            verbosity = 0 if arg in ("-q", "--quiet") else 2
        elif arg.startswith("-"):
            raise UsageError("unknown option " + arg)
        else:
            names.append(arg)
    if not names:
        return verbosity, [], (".", "test*.py", None)
    return verbosity, names, None


def _module_name(name):
    """A test file's path as a dotted module name (what `python -m unittest path.py` does)."""
    if name.endswith(".py") and os.path.isfile(name):
        path = os.path.normpath(name)[: -len(".py")]
        return path.replace(os.sep, ".")
    return name


def _load(names, discover):
    """(suite, names that failed to load with their error)."""
    loader = unittest.TestLoader()
    if discover is not None:
        start, pattern, top = discover
        return loader.discover(start, pattern, top), []
    suite, failed = unittest.TestSuite(), []
    for name in names:
        try:
            suite.addTest(loader.loadTestsFromName(_module_name(name)))
        except Exception as exc:  # Python 2 raises here; Python 3 returns a failing test instead
            failed.append((name, "{}: {}".format(type(exc).__name__, exc)))
    return suite, failed


def _run(writer, argv):
    try:
        verbosity, names, discover = _parse_args(argv)
    except UsageError as exc:
        print("repogym_unittest: {}\n{}".format(exc, USAGE), file=sys.stderr)
        return EXIT_USAGE, 0
    suite, load_errors = _load(names, discover)
    for name, error in load_errors:
        print("repogym_unittest: cannot load {}: {}".format(name, error), file=sys.stderr)
        writer.write({"event": "load_error", "id": name})
    runner = unittest.TextTestRunner(verbosity=verbosity, resultclass=_result_class(writer))
    result = runner.run(suite)
    unexpected = getattr(result, "unexpectedSuccesses", [])
    if result.failures or result.errors or unexpected or load_errors:
        return EXIT_FAILED, result.testsRun
    return (EXIT_OK if result.testsRun else EXIT_NO_TESTS), result.testsRun


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    path = os.environ.pop(REPORT_ENV, None)
    if not path:
        print("repogym_unittest: set {} to the report file's path".format(REPORT_ENV), file=sys.stderr)
        return EXIT_USAGE
    writer = ReportWriter(path)
    writer.write({"event": "start", "python": platform.python_version(), "pid": os.getpid()}, counted=False)
    code, tests_run = _run(writer, argv)
    finish = {"event": "sessionfinish", "exitstatus": code, "records": writer.records, "tests_run": tests_run}
    writer.write(finish, counted=False)
    writer.close()
    return code


if __name__ == "__main__":
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # what `python -m unittest` does
    sys.exit(main())
