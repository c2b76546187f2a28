"""More attacks on the grader: each is a candidate patch, or code the patch puts
under test, that tries to turn a wrong fix into a resolved grade, or to hang or crash the grader.

Every test is named after its attack. An attack that works is marked `xfail(strict=True, reason="HOLE: ...")`:
the suite stays green, the hole stays visible, and the mark must be removed (strict) the day the hole is
closed (none is left here).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from repogym.grading.grade import grade, grade_in_episode
from repogym.grading.report import Outcome, TestStatus
from repogym.grading.runner import run_tests
from repogym.testing import BUGGY_SOURCE, FIXED_SOURCE, toy_patch

ADD_TEST = "tests/test_calc.py::test_add"

# A conftest.py that turns every failure into a pass (what the grader must never run).
FORCE_PASS_CONFTEST = (
    "import pytest\n"
    "\n"
    "@pytest.hookimpl(hookwrapper=True)\n"
    "def pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n"
    "    report = outcome.get_result()\n"
    "    report.outcome = 'passed'\n"
    "\n"
    "def pytest_sessionfinish(session, exitstatus):\n"
    "    session.exitstatus = 0\n"
)


def _new_file(header_path: str, text: str) -> str:
    """A git new-file section; `header_path` is written as given (quoted or not)."""
    lines = text.splitlines()
    body = "".join(f"+{line}\n" for line in lines)
    a, b = _side("a", header_path), _side("b", header_path)
    return f"diff --git {a} {b}\nnew file mode 100644\n--- /dev/null\n+++ {b}\n@@ -0,0 +1,{len(lines)} @@\n{body}"


def _side(prefix: str, path: str) -> str:
    if path.startswith('"'):
        return f'"{prefix}/{path[1:]}'
    return f"{prefix}/{path}"


def _buggy_with(task, extra: str) -> str:
    """A candidate that leaves the bug in place and adds `extra` to the module the tests import."""
    return toy_patch(task, "src/calc/__init__.py", BUGGY_SOURCE + "\n" + extra)


# -- the candidate filter: paths git reads differently from unidiff ---------------------------------


def test_grading_quoted_conftest_path_forces_passes(toy_task, toy_runtime):
    """Was a hole at 4021a70: a git C-quoted header ("b/conftest.py") kept its quotes in unidiff's names, so
    the conftest rule missed it while git apply unquoted it and wrote conftest.py (fixed in 99a1bdf)."""
    patch = _new_file('"conftest.py"', FORCE_PASS_CONFTEST)
    result = grade(toy_task, patch, runtime=toy_runtime)
    assert not result.resolved, result.detail
    assert result.fail_to_pass[ADD_TEST] is TestStatus.FAILED


def test_grading_rename_header_into_conftest_is_refused(toy_task, episode):
    """Was a hole at 4021a70: git apply takes a rename's target from 'rename to', which the filter never
    read (unidiff names the section after its 'diff --git' line), so a file landed at conftest.py."""
    rename = "diff --git a/README.md b/README.md\nsimilarity index 100%\nrename from README.md\nrename to conftest.py\n"
    result = grade_in_episode(toy_task, toy_task.patch + rename, episode)
    landed = episode.run("test -e conftest.py && echo LANDED || echo absent").output
    assert "LANDED" not in landed, result
    assert result.outcome is Outcome.PATCH_APPLY_FAILED or any(
        "conftest.py" in p for p in result.ignored_paths
    )


def test_grading_octal_quoted_git_config_smudges_the_test_patch(toy_task, toy_runtime):
    """Was a hole at 4021a70: '\\056git/config' passes filter_candidate's .git rule; git apply refuses it
    but the `patch --fuzz=3` fallback wrote .git/config, whose smudge filter rewrote the task's test patch as git
    apply wrote it (the test became 'add(2, 3) == -1'). Grading episodes now see a read-only pristine .git."""
    attributes = _new_file(".gitattributes", "tests/*.py filter=evil\n")
    git_config = (
        '--- "a/\\056git/config"\n'
        '+++ "b/\\056git/config"\n'
        "@@ -5,0 +6,2 @@\n"
        '+[filter "evil"]\n'
        "+\tsmudge = sed s/5$/-1/\n"
    )
    result = grade(toy_task, attributes + git_config, runtime=toy_runtime)
    assert not result.resolved, result.detail
    assert result.outcome is Outcome.PATCH_APPLY_FAILED


def test_grading_odd_prefix_pyproject_addopts_loads_a_candidate_plugin(toy_task, toy_runtime):
    """Was a hole at 4021a70: git apply strips ANY first component (-p1), the filter only 'a/' and 'b/': with
    '--- x/pyproject.toml' the pytest-table check found no pristine text under 'x/pyproject.toml' and kept an
    addopts line loading the candidate's own plugin. The header filter still misses the prefix; since 99a1bdf
    the check of what really changed after the apply stops it."""
    plugin = _new_file("src/calc/hooks.py", FORCE_PASS_CONFTEST)
    addopts = (
        "--- x/pyproject.toml\n"
        "+++ y/pyproject.toml\n"
        "@@ -13,2 +13,3 @@\n"
        " [tool.pytest.ini_options]\n"
        ' testpaths = ["tests"]\n'
        '+addopts = "-p calc.hooks"\n'
    )
    result = grade(toy_task, plugin + addopts, runtime=toy_runtime)
    assert not result.resolved, result.detail
    assert result.fail_to_pass[ADD_TEST] is not TestStatus.PASSED


def test_grading_malformed_quoted_path_is_an_outcome_not_a_crash(toy_task, toy_runtime):
    """Was a hole at 99a1bdf: header names with escapes git would reject (\\189 is no octal byte,
    \\u20ac no escape at all) made grade() raise instead of returning an outcome."""
    for name in ('"x\\189.py"', '"x\\\u20ac.py"', '"x\\"', '"\\0"'):
        patch = toy_task.patch + _new_file(name, "x = 1\n")
        result = grade(toy_task, patch, runtime=toy_runtime)  # the attack: this raised
        assert result.outcome in (Outcome.PATCH_APPLY_FAILED, Outcome.RESOLVED), (name, result.detail)


def test_grading_file_names_with_shell_syntax_run_nothing(toy_task, episode):
    """Names with `$(...)`, quotes, spaces and newlines reach the compile check's command line quoted."""
    evil = ["calc_$(touch PWNED1).py", "x'; touch PWNED2; '.py", 'src/"$(touch PWNED3)".py']
    patch = toy_task.patch + "".join(_new_file(name, "x = 1\n") for name in evil)
    patch += _new_file('"src/new\\nline.py"', "y = 2\n")
    result = grade_in_episode(toy_task, patch, episode)
    planted = episode.run("find /testbed /tmp /opt/repogym/out -name 'PWNED[0-9]'").output
    assert planted.strip() == "", planted
    assert episode.run("test -e 'calc_$(touch PWNED1).py' && echo applied").output.strip() == "applied"
    assert result.outcome is not Outcome.INFRA_ERROR


def test_grading_test_ids_with_shell_syntax_run_nothing(toy_task, episode):
    """Test ids come from mined repositories: parametrize ids may carry any text; they are quoted."""
    ids = [
        "tests/test_calc.py::test_add[$(touch /opt/repogym/out/PWNED1)]",
        "tests/$(touch /opt/repogym/out/PWNED2).py",
        "tests/test_calc.py;touch /opt/repogym/out/PWNED3;.py",
    ]
    run_tests(toy_task, episode, ids)
    assert not list(episode.layer.out.glob("PWNED*"))
    assert episode.run("find /testbed /tmp -name 'PWNED[0-9]'").output.strip() == ""


# -- the structured report: written by code the candidate controls ----------------------------------

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
    result = grade(toy_task, _buggy_with(toy_task, forge), runtime=toy_runtime)
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
    result = grade(toy_task, _buggy_with(toy_task, forge), runtime=toy_runtime)
    assert not result.resolved, result.detail
    assert result.outcome is Outcome.REPORT_FORGED and result.fail_to_pass[ADD_TEST] is None


def test_grading_report_swapped_for_fifo_does_not_hang_the_grader(toy_task, episode):
    """Was a hole at 4021a70: code under test swapped the report for a FIFO and run_directives blocked
    forever in read_text() on the host (a link to /dev/zero would have exhausted its memory)."""
    swap = _FIND_REPORT + (
        "for _path in _REPORTS:\n    _os.rename(_path, _path + '.real')\n    _os.mkfifo(_path)\n"
    )
    patch = _buggy_with(toy_task, swap)
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


# -- the compile check: a script and an output name the candidate can predict -----------------------

_SITECUSTOMIZE_FORGE = (
    "import os\n"
    "_cmd = open('/proc/self/cmdline', 'rb').read().split(b'\\0')\n"
    "_script = [a.decode() for a in _cmd if a.endswith(b'compile_check.py')]\n"
    "if _script:\n"
    "    open(_script[0] + '.out', 'w').write({payload!r})\n"
    "    os._exit(0)\n"
)


def test_grading_sitecustomize_forges_the_compile_check(toy_task, toy_runtime):
    """Was a hole at 4021a70: the compile check ran with site enabled and /testbed/src on sys.path (the
    editable install), so a candidate src/sitecustomize.py wrote '[]' to compile_check.py.out and exited 0."""
    patch = (
        toy_task.patch
        + _new_file("src/calc/broken.py", "def oops(:\n")
        + _new_file("src/sitecustomize.py", _SITECUSTOMIZE_FORGE.format(payload="[]"))
    )
    result = grade(toy_task, patch, runtime=toy_runtime)
    assert any("broken.py" in error for error in result.compile_errors), result.compile_errors


def test_grading_garbage_compile_report_is_an_outcome_not_a_crash(toy_task, toy_runtime):
    """Was a hole at 4021a70: _compile_errors json.loads'ed the jail-written report unguarded, so garbage
    there made grade() raise instead of returning a GradeResult."""
    patch = toy_task.patch + _new_file(
        "src/sitecustomize.py", _SITECUSTOMIZE_FORGE.format(payload="{not json")
    )
    result = grade(toy_task, patch, runtime=toy_runtime)
    assert result.outcome in tuple(Outcome)


def test_grading_stale_compile_report_in_out_is_not_read(toy_task, episode):
    """A compile_check.py.out left in out/ by an earlier command does not stand in for the check's own."""
    episode.run("echo '[]' > /opt/repogym/out/compile_check.py.out")
    patch = toy_task.patch + _new_file("src/calc/broken.py", "def oops(:\n")
    result = grade_in_episode(toy_task, patch, episode)
    assert any("broken.py" in error for error in result.compile_errors), result.compile_errors


def test_grading_gold_still_resolves_after_hostile_runs(toy_task, toy_runtime):
    """Control: the runtime the attacks above used still grades the gold patch as resolved."""
    result = grade(toy_task, toy_patch(toy_task, "src/calc/__init__.py", FIXED_SOURCE), runtime=toy_runtime)
    assert result.resolved, result.detail


def test_grading_gitattributes_breaking_the_test_patch_is_the_candidates_fault(toy_task, toy_runtime):
    """Was a hole at 4021a70: a candidate .gitattributes with working-tree-encoding on the test files made
    the task's test patch fail in git apply, and the grade blamed the task (INFRA_ERROR, an 'error' instance)."""
    from repogym.grading.batch import ERROR_OUTCOMES

    patch = _new_file(".gitattributes", "tests/*.py working-tree-encoding=UTF-16LE\n")
    result = grade(toy_task, patch, runtime=toy_runtime)
    assert not result.resolved
    assert result.outcome not in ERROR_OUTCOMES, result.detail
