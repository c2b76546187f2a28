"""Attacks on the structured report file the grader's pytest plugin writes in the jail-writable output folder:
code under test rewrites it after the session, monkeypatches the plugin that writes it, or swaps it for a
FIFO to hang the grader. Each is a toy-task candidate that keeps the bug, graded in the real bwrap sandbox
and named after its attack; none may resolve.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from repogym.grading.grade import grade, grade_in_episode
from repogym.grading.report import Outcome, TestStatus

from ..support.patches import buggy_with

ADD_TEST = "tests/test_calc.py::test_add"


# Finds the plugin's report file (its name is unpredictable, but the folder lists it) from code under test.
_FIND_REPORT = (
    "import os as _os\n"
    "_OUT = '/opt/repogym/out'\n"
    "_REPORTS = [_os.path.join(_OUT, n) for n in _os.listdir(_OUT) if n.startswith('report-')]\n"
)


def test_grading_code_under_test_rewrites_the_report_after_sessionfinish(toy_task, toy_runtime):
    """Was a hole at e556d02: the report lives in the jail-writable /opt/repogym/out, so code under test
    rewrote it after pytest's sessionfinish (atexit): failures flipped to passes, one invented failure kept
    exit code 1 consistent. The flip turns the grader's canary into a pass too (REPORT_FORGED)."""
    forge = _FIND_REPORT + (
        "import atexit as _atexit, json as _json\n"
        "def _forge():\n"
        "    for path in _REPORTS:\n"
        "        records = [_json.loads(l) for l in open(path)]\n"
        "        body = [r for r in records if r['event'] in ('test', 'collect_error')]\n"
        "        for r in body:\n"
        "            r['outcome'] = 'passed'\n"
        "        body.append({'event': 'test', 'nodeid': 'tests/test_calc.py::test_zz', 'when': 'call',\n"
        "                     'outcome': 'failed', 'wasxfail': False, 'duration': 0.0})\n"
        "        out = [records[0]] + body + [{'event': 'sessionfinish', 'exitstatus': 1,\n"
        "               'records': len(body), 'counts': {}}]\n"
        "        open(path, 'w').write(''.join(_json.dumps(r) + '\\n' for r in out))\n"
        "_atexit.register(_forge)\n"
    )
    result = grade(toy_task, buggy_with(toy_task, forge), runtime=toy_runtime)
    assert not result.resolved, result.detail
    assert result.outcome is Outcome.REPORT_FORGED
    assert result.fail_to_pass[ADD_TEST] is not TestStatus.PASSED


def test_grading_code_under_test_monkeypatches_the_report_plugin(toy_task, toy_runtime):
    """Was a hole at e556d02: code under test monkeypatched repogym_report._Reporter._write (looked up on the
    class at each call) to flip outcomes and exited 0 from atexit; the parser saw a consistent report. The
    canary is flipped with the rest (REPORT_FORGED)."""
    forge = (
        "import sys as _sys\n"
        "_plugin = _sys.modules.get('repogym_report')\n"
        "if _plugin is not None:\n"
        "    _write = _plugin._Reporter._write\n"
        "    def _forged(self, record):\n"
        "        if record.get('event') == 'test':\n"
        "            record['outcome'] = 'passed'\n"
        "        if record.get('event') == 'sessionfinish':\n"
        "            record['exitstatus'] = 0\n"
        "        _write(self, record)\n"
        "    _plugin._Reporter._write = _forged\n"
        "    import atexit as _atexit, os as _os\n"
        "    _atexit.register(lambda: _os._exit(0))\n"
    )
    result = grade(toy_task, buggy_with(toy_task, forge), runtime=toy_runtime)
    assert not result.resolved, result.detail
    assert result.outcome is Outcome.REPORT_FORGED and result.fail_to_pass[ADD_TEST] is None


def test_grading_report_swapped_for_fifo_does_not_hang_the_grader(toy_task, episode):
    """Was a hole at 4021a70: code under test swapped the report for a FIFO and run_directives blocked
    forever in read_text() on the host (a link to /dev/zero would have exhausted its memory)."""
    swap = _FIND_REPORT + (
        "for _path in _REPORTS:\n    _os.rename(_path, _path + '.real')\n    _os.mkfifo(_path)\n"
    )
    patch = buggy_with(toy_task, swap)
    results: list[object] = []
    worker = threading.Thread(target=lambda: results.append(grade_in_episode(toy_task, patch, episode)))
    worker.start()
    try:
        worker.join(timeout=8)
        hung = worker.is_alive()
    finally:
        _unblock_fifos(episode.layer.out, worker)
    assert not hung, "the grader blocked reading a FIFO the jail planted"
    assert results and not results[0].resolved  # type: ignore[union-attr]


def _unblock_fifos(folder: Path, worker: threading.Thread) -> None:
    """Open every FIFO in `folder` for writing and close it, so a reader blocked in open() gets EOF."""
    deadline = time.monotonic() + 10
    while worker.is_alive() and time.monotonic() < deadline:
        for path in folder.glob("*"):
            if path.is_fifo():
                try:
                    fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
                except OSError:
                    continue  # no reader yet
                os.close(fd)
        worker.join(timeout=0.2)
