"""pytest plugin recording, per test, which lines of the repository's own code its call phase ran.

Loaded inside the sandbox with ``-p repogym_spectrum`` (repogym puts this file in the episode's inbox and on
PYTHONPATH) by `repogym.env.localize`'s spectrum-based fault localization. The output path comes from the
environment variable REPOGYM_SPECTRUM_FILE (removed from os.environ at once). It writes one JSON object:
``{nodeid: {"outcome": "passed"|"failed"|"skipped", "lines": {path: [line, ...]}, "last": [[path, line], ...]}}``
where paths are relative to the rootdir, test files are left out, and ``last`` holds the final distinct lines
executed (most recent last). Only the call phase is traced (not imports or fixtures' setup), with
``sys.settrace``: slow for big suites, enough for the tests of one task.
"""

# Runs under the task's interpreter: keep Python 2.7 / 3.6 syntax (no f-strings, no annotations).
# ruff: noqa: UP004, UP010

from __future__ import absolute_import

import fnmatch
import json
import os
import sys

import pytest

OUT_ENV = "REPOGYM_SPECTRUM_FILE"
KEEP_LAST = 20


def _is_test_file(path):
    # A copy of repogym.testpaths.is_test_path(path, support_files=True): this file runs under the task's
    # interpreter, which cannot import repogym. Keep the two in step.
    parts = path.split(os.sep)
    name = parts[-1]
    if any(part in ("tests", "test") for part in parts[:-1]):
        return True
    if len(parts) > 1 and parts[0] == "testing":
        return True
    if name in ("conftest.py", "tests.py", "test.py"):
        return True
    return fnmatch.fnmatchcase(name, "test_*.py") or fnmatch.fnmatchcase(name, "*_test.py")


class _Spectrum(object):
    def __init__(self, root, out):
        self.root = root.rstrip(os.sep) + os.sep
        self.out = out
        self.results = {}
        self._lines = {}
        self._last = []
        self._own = {}

    def _relative(self, filename):
        cached = self._own.get(filename)
        if cached is None:
            absolute = os.path.abspath(filename)
            inside = (
                not filename.startswith("<")  # <frozen abc>, <string>: no file of the repository
                and absolute.startswith(self.root)
                and "site-packages" not in absolute
                and os.path.isfile(absolute)
            )
            relative = absolute[len(self.root) :] if inside else ""
            cached = relative if relative and not _is_test_file(relative) else ""
            self._own[filename] = cached
        return cached

    def _trace(self, frame, event, arg):
        path = self._relative(frame.f_code.co_filename)
        if not path:
            return None  # not our code: do not trace inside it
        if event == "line":
            self._lines.setdefault(path, set()).add(frame.f_lineno)
            key = (path, frame.f_lineno)
            if key in self._last:
                self._last.remove(key)
            self._last.append(key)
            del self._last[:-KEEP_LAST]
        return self._trace

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        self._lines, self._last = {}, []
        sys.settrace(self._trace)
        try:
            yield
        finally:
            sys.settrace(None)
            self.results[item.nodeid] = {
                "outcome": "passed",
                "lines": dict((p, sorted(n)) for p, n in self._lines.items()),
                "last": [list(k) for k in self._last],
            }

    def pytest_runtest_logreport(self, report):
        if report.when == "call" and report.nodeid in self.results:
            self.results[report.nodeid]["outcome"] = report.outcome

    def pytest_sessionfinish(self, session):
        with open(self.out, "w") as handle:
            json.dump(self.results, handle)


def pytest_configure(config):
    out = os.environ.pop(OUT_ENV, None)
    if out:
        config.pluginmanager.register(_Spectrum(str(config.rootdir), out), "repogym_spectrum_recorder")
