"""pytest plugin that writes each test result as a JSON line to a report file, for repogym's grader.

Registered inside the sandbox by the launcher beside it (repogym_pytest.py, which imports it before the
repository is on sys.path), or loaded with ``-p repogym_report`` by a command the launcher cannot start (this
folder is mounted at /opt/repogym/plugins and put on PYTHONPATH). The report file's path comes from the environment variable REPOGYM_REPORT_FILE, which the
plugin removes from os.environ at once so tests and their subprocesses do not inherit it.

Records, one JSON object per line, in this order:

- ``{"event": "start", "pytest": ..., "python": ..., "pid": ...}``
- ``{"event": "test", "nodeid": ..., "when": "setup"|"call"|"teardown", "outcome": "passed"|"failed"|"skipped",
  "wasxfail": bool, "xfail_marked": bool, "duration": float}`` per test phase; ``xfail_marked`` says whether
  the test carries an xfail mark (its own, its class's or its module's), so that an xfail raised at run time
  by ``pytest.xfail()``, which code under test can call, is told apart from an expected failure
- ``{"event": "collect_error", "nodeid": ...}`` per file (or directory) that failed to collect
- ``{"event": "sessionfinish", "exitstatus": int, "records": int, "counts": {...}}`` last, where ``records`` is
  the number of test and collect_error records written before it

The parser (repogym.grading.parsers.pytest) trusts the report only when it ends with the sessionfinish record
and that record's exit status equals the process's exit code.

Written for every interpreter a task may use: Python 2.7 and 3.6+ syntax (no f-strings, no annotations), the
standard library only, pytest >= 2.8 (pytest.hookimpl). Under pytest-xdist only the controller writes; workers
forward their reports to it.
"""

# Runs under the task's interpreter, Python 2.7 included: keep (object) bases and __future__ imports.
# ruff: noqa: UP004, UP010

from __future__ import absolute_import, print_function

import json
import os
import platform
import sys

import pytest

REPORT_ENV = "REPOGYM_REPORT_FILE"
_REGISTERED_NAME = "repogym_reporter"


class _Reporter(object):
    """Appends records to the report file, flushing each so a killed run still leaves what it saw."""

    def __init__(self, stream):
        self._stream = stream
        self._records = 0
        self._counts = {}

    def _write(self, record):
        line = json.dumps(record, sort_keys=True) + "\n"
        if not isinstance(line, bytes):  # Python 3; on Python 2 json.dumps already gives ASCII bytes
            line = line.encode("utf-8")
        self._stream.write(line)
        self._stream.flush()

    def start(self):
        self._write(
            {
                "event": "start",
                "pytest": getattr(pytest, "__version__", "?"),
                "python": platform.python_version(),
                "pid": os.getpid(),
            }
        )

    def _count(self, key):
        self._records += 1
        self._counts[key] = self._counts.get(key, 0) + 1

    def pytest_runtest_logreport(self, report):
        outcome = str(report.outcome)
        self._write(
            {
                "event": "test",
                "nodeid": report.nodeid,
                "when": report.when,
                "outcome": outcome,
                "wasxfail": hasattr(report, "wasxfail"),
                "xfail_marked": _xfail_marked(report),
                "duration": float(getattr(report, "duration", 0.0) or 0.0),
            }
        )
        self._count(report.when + "." + outcome)

    def pytest_collectreport(self, report):
        if report.failed:
            self._write({"event": "collect_error", "nodeid": report.nodeid})
            self._count("collect_error")

    # trylast, and session.exitstatus rather than the argument: a hook that rewrites the exit status
    # (a conftest setting session.exitstatus = 0) has run by now, so the record shows what pytest will return.
    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        status = getattr(session, "exitstatus", exitstatus)
        self._write(
            {
                "event": "sessionfinish",
                "exitstatus": int(status),
                "records": self._records,
                "counts": self._counts,
            }
        )

    def close(self):
        self._stream.close()


def _xfail_marked(report):
    """True when the test carries an xfail mark: marks are among a report's keywords (under xdist too)."""
    try:
        return "xfail" in (getattr(report, "keywords", None) or {})
    except Exception:  # a keywords object of an unexpected kind: no mark seen
        return False


def _is_xdist_worker(config):
    return hasattr(config, "workerinput") or hasattr(config, "slaveinput")


def pytest_configure(config):
    if _is_xdist_worker(config):
        return
    path = os.environ.pop(REPORT_ENV, None)
    if not path:
        # Loaded without a report file (a nested pytest run): nothing to write; the grader's parser
        # sees no report and trusts nothing.
        return
    # O_EXCL: a file that is already there is stale or planted; refuse to append to it.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    reporter = _Reporter(os.fdopen(fd, "wb"))
    reporter.start()
    config.pluginmanager.register(reporter, _REGISTERED_NAME)


def pytest_unconfigure(config):
    reporter = config.pluginmanager.getplugin(_REGISTERED_NAME)
    if reporter is not None:
        reporter.close()
        config.pluginmanager.unregister(reporter)


if __name__ == "__main__":  # pragma: no cover - a plugin, not a script
    sys.exit("repogym_report is a pytest plugin: run pytest with -p repogym_report")
