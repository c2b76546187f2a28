"""pytest plugin that records which test ran which lines, for `repogym synth`'s choice of functions to mutate.

Loaded inside the sandbox with ``-p repogym_coverage`` (this folder is bound read-only and put on PYTHONPATH),
next to repogym_report. It starts `coverage` as soon as pytest imports it (before conftest files and test
modules import the code under test), switches coverage's dynamic context to each test's nodeid for the
test's setup, call and teardown, and at the end writes one JSON file (path from REPOGYM_COVERAGE_FILE):

    {"tests": [nodeid, ...], "files": {"relative/path.py": {"<line>": [test index, ...]}}}

Only files under the working directory (the repository) are recorded. Lines a test module runs while it is
imported are recorded under "collect::<module nodeid>" (the reader gives them to every test of that
module); other lines run outside any test (conftest imports) carry no test and are left out.

Written for the task's interpreter: Python 3.6+ syntax (no f-strings), the standard library, pytest and
coverage (>= 5, which has dynamic contexts and switch_context).
"""

# Runs under the task's interpreter: keep __future__ imports and no f-strings.
# ruff: noqa: UP010

from __future__ import absolute_import, print_function

import json
import os

import pytest

COVERAGE_ENV = "REPOGYM_COVERAGE_FILE"
COLLECT_PREFIX = "collect::"
_OUT = os.environ.pop(COVERAGE_ENV, None)
_ROOT = os.getcwd()
_COV = None

if _OUT:
    import coverage

    # data_file=None: nothing written to the repository; config_file=False: the repository's own coverage
    # settings (omit lists, plugins, a [run] source elsewhere) must not change what is measured.
    _COV = coverage.Coverage(data_file=None, config_file=False, source=[_ROOT], branch=False)
    _COV.start()


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    # What a test module runs when it is imported (module-level calls into the library) is charged to
    # "collect::<module nodeid>", which the reader expands to every test of that module: all of them
    # fail if that code breaks.
    module = getattr(pytest, "Module", None)
    if _COV is not None and module is not None and isinstance(collector, module):
        _COV.switch_context(COLLECT_PREFIX + collector.nodeid)
        yield
        _COV.switch_context("")
    else:
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if _COV is not None:
        _COV.switch_context(item.nodeid)
    yield
    if _COV is not None:
        _COV.switch_context("")


def pytest_unconfigure(config):
    if _COV is None or hasattr(config, "workerinput"):
        return
    _COV.stop()
    data = _COV.get_data()
    tests = []
    index = {}
    files = {}
    for filename in data.measured_files():
        path = os.path.relpath(filename, _ROOT)
        if path.startswith(".."):
            continue
        by_line = {}
        for line, contexts in (data.contexts_by_lineno(filename) or {}).items():
            ids = []
            for context in contexts:
                if not context:
                    continue
                if context not in index:
                    index[context] = len(tests)
                    tests.append(context)
                ids.append(index[context])
            if ids:
                by_line[str(line)] = sorted(set(ids))
        if by_line:
            files[path.replace(os.sep, "/")] = by_line
    # O_EXCL: a file that is already there is stale or planted.
    fd = os.open(_OUT, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump({"tests": tests, "files": files}, handle)
