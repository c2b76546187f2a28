"""pytest plugin that writes each test result as a JSON line to a report file, for repogym's grader.

Registered inside the sandbox by the launcher beside it (repogym_pytest.py, which imports it before the
repository is on sys.path), or loaded with ``-p repogym_report`` by a command the launcher cannot start (this
folder is mounted at /opt/repogym/plugins and put on PYTHONPATH). The report file's path comes from the environment variable REPOGYM_REPORT_FILE, which the
plugin removes from os.environ at once so tests and their subprocesses do not inherit it.

Records, one JSON object per line, in this order:

- ``{"event": "start", "pytest": ..., "python": ..., "pid": ...}``
- ``{"event": "test", "nodeid": ..., "when": "setup"|"call"|"teardown", "outcome": "passed"|"failed"|"skipped",
  "wasxfail": bool, "xfail_marked": bool, "duration": float}`` per test phase; ``xfail_marked`` says whether
  the test carried an xfail mark (its own, its class's or its module's) when collection ended, so that an
  xfail raised at run time by ``pytest.xfail()``, or a mark added to the running test (through the stack,
  gc or ``request.node``), both of which code under test can do, is told apart from an expected failure; a
  skipped phase adds ``"skipped_from"`` (see below) and ``"skip_reason"`` (the skip's own words, the first
  500 characters: "could not import 'cdms2': No module named 'cdms2'")
- ``{"event": "collect_error", "nodeid": ...}`` per file (or directory) that failed to collect
- ``{"event": "collect_skip", "nodeid": ..., "skipped_from": ..., "skip_reason": ...}`` per file (or directory) skipped while it
  was collected (a module-level ``pytest.importorskip``, ``pytest.skip(allow_module_level=True)``, a SkipTest)
- ``{"event": "sessionfinish", "exitstatus": int, "records": int, "counts": {...}}`` last, where ``records`` is
  the number of test and collect_error records written before it

``skipped_from`` says where a skip came from, so that the grader can tell the tests' own skips from a skip
that code under test raised to hide a failure: ``"mark"`` when pytest's skipping plugin raised it for a skip
or skipif mark (or a unittest skip decorator), else the path (relative to the working directory) of the
innermost frame of the repository's code in the skip's traceback, pytest's own helpers (``pytest.skip``,
``pytest.importorskip``) left out whatever ``__tracebackhide__`` says (code under test could set it), else
``""`` (not known: a skip pytest raised on another exception's behalf, a unittest runtime skip under
Python < 3.11). The traceback is the exception's own, taken before pytest turns a ``unittest.SkipTest`` into
a skip of its own.

The parser (repogym.grading.parsers.pytest) trusts the report only when it ends with the sessionfinish record
and that record's exit status equals the process's exit code.

Marks are taken when collection ends (after every ``pytest_collection_modifyitems`` hook, conftest.py's
included), before any test runs: a mark added later, while tests run, is not an expected failure here.
Code under test imported during collection can still add marks then; the grader checks every XFAIL against
a static reading of the trusted test sources (grading/xfail_marks.py). Under pytest-xdist without this
plugin in the workers, the controller has no collection of its own and falls back to the report's keywords
(marks as they are when the report is made); the static reading still applies.

Written for every interpreter a task may use: Python 2.7 and 3.6+ syntax (no f-strings, no annotations), the
standard library only, pytest >= 2.8 (pytest.hookimpl). Under pytest-xdist only the controller writes; workers
forward their reports to it.
"""

# Runs under the task's interpreter, Python 2.7 included: keep (object) bases and __future__ imports.
# ruff: noqa: UP004, UP010

from __future__ import absolute_import, print_function

import inspect
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
        record = {
            "event": "test",
            "nodeid": report.nodeid,
            "when": report.when,
            "outcome": outcome,
            "wasxfail": hasattr(report, "wasxfail"),
            "xfail_marked": _xfail_marked_at_collection(report),
            "duration": float(getattr(report, "duration", 0.0) or 0.0),
        }
        if outcome == "skipped":
            record["skipped_from"] = str(getattr(report, _SKIPPED_FROM, "") or "")
            record["skip_reason"] = _skip_reason(report)
        self._write(record)
        self._count(report.when + "." + outcome)

    def pytest_collectreport(self, report):
        if report.failed:
            self._write({"event": "collect_error", "nodeid": report.nodeid})
            self._count("collect_error")
        elif report.skipped:
            origin = str(getattr(report, _SKIPPED_FROM, "") or "")
            self._write(
                {
                    "event": "collect_skip",
                    "nodeid": report.nodeid,
                    "skipped_from": origin,
                    "skip_reason": _skip_reason(report),
                }
            )
            self._count("collect_skip")

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


_SKIPPED_FROM = "repogym_skipped_from"
#: The most of a skip's reason a record keeps: what was missing is said in its first words.
_REASON_CHARS = 500


def _skip_reason(report):
    """The reason a skip gave (pytest keeps a skipped report's longrepr as (path, line, reason)), cut short."""
    longrepr = getattr(report, "longrepr", None)
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        try:
            return str(longrepr[2])[:_REASON_CHARS]
        except Exception:  # a reason whose str() fails (Python 2: a non-ASCII unicode): no reason
            return ""
    return ""


_XFAIL_MARKED = "repogym_xfail_marked"
_ROOT = [os.path.realpath(os.getcwd())]
# nodeid -> whether the item carried an xfail mark when collection ended.
_MARKED_AT_COLLECTION = {}


# tryfirst on a hook wrapper: its code after the yield runs after every other implementation and wrapper,
# so the marks kept are those collection ends with (a conftest's modifyitems adding xfail marks included).
@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    yield
    for item in items:
        _MARKED_AT_COLLECTION[item.nodeid] = _has_xfail_mark(item)
    _tell_inspect_the_test_modules(items)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    raised = call.excinfo  # before the unittest plugin swaps a SkipTest for a skip of pytest's own
    outcome = yield
    report = outcome.get_result()
    # A test that was never collected as an item (none should be) carries no mark.
    setattr(report, _XFAIL_MARKED, bool(_MARKED_AT_COLLECTION.get(item.nodeid, False)))
    if getattr(report, "outcome", "") == "skipped" and not hasattr(report, "wasxfail"):
        try:
            origin = _test_skip_origin(item, raised, call.excinfo)
        except Exception:  # an unexpected pytest internals shape: the origin is not known
            origin = ""
        setattr(report, _SKIPPED_FROM, origin)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    # The collect report keeps only the crash location, which honours __tracebackhide__; the traceback is
    # taken here instead, by wrapping this collector's collect() for the one call pytest makes.
    seen = []
    collect = collector.collect

    def collect_and_keep_traceback():
        try:
            return collect()
        except BaseException:
            seen.append(sys.exc_info()[2])
            raise

    collector.collect = collect_and_keep_traceback
    try:
        outcome = yield
    finally:
        collector.__dict__.pop("collect", None)
    report = outcome.get_result()
    if getattr(report, "outcome", "") == "skipped":
        try:
            origin = _origin(seen[0]) if seen else ""
        except Exception:
            origin = ""
        setattr(report, _SKIPPED_FROM, origin)


def _test_skip_origin(item, raised, final):
    excinfo = raised if raised is not None and _is_skip(getattr(raised, "value", None)) else final
    error = getattr(excinfo, "value", None)
    if error is None:
        return ""
    origin = _origin(_traceback(excinfo, error))
    if origin != _UNITTEST:
        return origin
    # A unittest TestCase's skip: pytest's addSkip raised it. The SkipTest unittest caught is its context
    # under Python >= 3.11; a skip decorator is a mark.
    context = getattr(error, "__context__", None)
    if _is_skip(context) and getattr(context, "__traceback__", None) is not None:
        return _origin(context.__traceback__)
    test = getattr(item, "obj", None)
    owner = getattr(item, "cls", None)
    if getattr(test, "__unittest_skip__", False) or getattr(owner, "__unittest_skip__", False):
        return "mark"
    return ""


_UNITTEST = "<unittest>"


def _is_skip(error):
    if error is None:
        return False
    skip_types = [getattr(pytest.skip, "Exception", None)]
    unittest = sys.modules.get("unittest")
    if unittest is not None:
        skip_types.append(unittest.SkipTest)
    return isinstance(error, tuple(t for t in skip_types if isinstance(t, type)))


def _traceback(excinfo, error):
    return getattr(excinfo, "tb", None) or getattr(error, "__traceback__", None)


def _origin(tb):
    """'mark', the innermost repository frame's path, '<unittest>' (pytest's addSkip), or ''."""
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame.f_code)
        tb = tb.tb_next
    helpers = _helper_codes()
    frames = [code for code in frames if code not in helpers]
    if not frames:
        return ""
    innermost = _real(frames[-1].co_filename)
    if innermost == _module_file("_pytest.skipping") and not any(_in_repo_code(c) for c in frames):
        return "mark"
    if innermost == _module_file("_pytest.unittest"):
        return _UNITTEST  # TestCaseFunction.addSkip (or a helper of it) raised it for unittest
    for code in reversed(frames):
        path = _real(code.co_filename)
        if _inside(path, _ROOT[0]):
            return os.path.relpath(path, _ROOT[0]).replace(os.sep, "/")
    return ""


def _in_repo_code(code):
    """A frame of the repository's own code (pytest's package counts as pytest when it is the repository)."""
    path = _real(code.co_filename)
    pytest_dir = os.path.dirname(_module_file("_pytest.skipping") or "") or "//"
    return _inside(path, _ROOT[0]) and not _inside(path, pytest_dir)


def _helper_codes():
    codes = set()
    for name in ("skip", "importorskip", "fail", "xfail", "exit"):
        function = getattr(pytest, name, None)
        code = getattr(function, "__code__", None)
        if code is not None:
            codes.add(code)
    return codes


def _module_file(name):
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    if not path:
        return None
    if path.endswith((".pyc", ".pyo")):
        path = path[:-1]
    return _real(path)


def _real(path):
    return os.path.realpath(os.path.join(_ROOT[0], path))


def _inside(path, folder):
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _tell_inspect_the_test_modules(items):
    """Put each collected test module in `inspect`'s file -> module cache, as its own scan would.

    The first failure of a run costs pytest a source lookup (`inspect.findsource`), and `inspect.getmodule`
    finds the module of a code object by scanning every module in sys.modules for its file (a stat of each:
    10-20 ms in a jail, paid by every run with a failing test, the grader's canary included). With the test
    modules in the cache, the lookup finds them at once; what it finds is what the scan would have found.
    """
    cache = getattr(inspect, "modulesbyfile", None)
    if not isinstance(cache, dict):
        return
    seen = set()
    for item in items:
        module = getattr(item, "module", None)
        name = getattr(module, "__name__", None)
        path = getattr(module, "__file__", None)
        if not name or not path or name in seen or sys.modules.get(name) is not module:
            continue
        seen.add(name)
        if path.endswith((".pyc", ".pyo")):
            path = path[:-1]
        for key in (path, os.path.normcase(os.path.abspath(path))):
            cache.setdefault(key, name)


def _has_xfail_mark(item):
    """True when the item carries an xfail mark (its own, its class's, its module's): marks are keywords."""
    try:
        return "xfail" in item.keywords
    except Exception:  # a keywords object of an unexpected kind: no mark seen
        return False


def _xfail_marked_at_collection(report):
    """Whether the test carried an xfail mark when collection ended; a report from a process without this
    plugin (an xdist worker) falls back to its keywords, the marks when the report was made."""
    marked = getattr(report, _XFAIL_MARKED, None)
    if marked is not None:
        return bool(marked)
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
    _ROOT[0] = os.path.realpath(os.getcwd())
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
