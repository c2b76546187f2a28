"""pytest: per-test statuses from the repogym_report plugin's JSON-lines report, never from printed lines.

Mapping (per test id, a pytest nodeid such as ``tests/test_x.py::TestC::test_y[1-2]``, as SWE-bench uses):
setup failed -> ERROR; call failed -> FAILED (a strict xpass fails its call); teardown failed -> ERROR;
call passed -> PASSED (a non-strict xpass too); skipped -> SKIPPED; an expected failure -> XFAIL when the test
carried an xfail mark when collection ended, FAILED when it came from ``pytest.xfail()`` at run time or from a
mark added while the test ran (code under test can do both); a file that fails to collect -> ERROR under the
file's id. (The grader counts an XFAIL only where its static reading of the trusted test sources finds a mark
that can apply: grading/judge.py, grading/xfail_marks.py.)

Guarantees:

- Statuses come only from the report file the plugin writes; nothing printed on stdout or stderr (fake
  ``PASSED tests/t.py::test_x`` lines, a forged short summary) can change them.
- Fail closed: a run that timed out or was killed, that died or left through os._exit before pytest's
  sessionfinish (no closing record), whose report is malformed, or whose exit code disagrees with its report
  (exit 0 with failures recorded; a recorded exit status other than the process's, as when an atexit handler
  or a hook rewrites it) gives ``collected=False`` and no results. So do exit codes 2 (interrupted, except by
  collection errors), 3 (internal error) and 4 (usage error).
- Exit code 5 (no tests collected) gives ``collected=False``, and so does a run stopped by collection errors.
- No stale report: the command deletes the report file first and the plugin refuses to write into a file
  that already exists.
- Nothing in the repository stands in for pytest or the plugin: a command that runs pytest as
  ``python -m pytest`` or ``pytest`` is started by the launcher (pytest_plugin/repogym_pytest.py), which
  imports both before any folder of the repository is on sys.path. (The one exception is a task whose
  repository is pytest itself.)

Not guaranteed:

- Code under test runs in the same process as the plugin: it can monkeypatch pytest or the plugin, rewrite
  the report, or write one of its own and os._exit with a matching status. This parser cannot tell; the
  grader's canary (grading/canary.py, judged in grading/judge.py) catches a forger that does not single it
  out. A command that starts pytest some other way (``coverage run -m pytest``, a script) gets no launcher:
  the plugin is then loaded with ``-p repogym_report`` from PYTHONPATH, and a same-named module of the
  repository could shadow it (the candidate filter drops ``repogym_*`` names).
- The repository's own test configuration applies. The command does not add ``-o addopts=""``: real
  repositories need their addopts (``--import-mode``, ``-p pytester``, doctest options) to collect the ids
  SWE-bench uses. A hostile configuration can deselect tests or block the plugin (``-p no:repogym_report``),
  which shows as missing tests or a missing report, never as passes; turning a failure into a pass takes a
  hook (conftest.py, a configured plugin), and the grader discards candidate changes to all of those.
- pytest exits 4 without running anything when one of the given ids does not exist; graders pass test files
  or ids known to exist.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repogym.grading.parsers.common import (
    SANDBOX_PLUGIN_DIR,
    interrupted,
    jsonl_problem,
    judge_exit,
    read_jsonl,
    report_command,
    shell_join,
    trusted,
    untrusted,
    with_args,
)
from repogym.grading.parsers.swebench_ids import read_printed
from repogym.grading.report import TestReport, TestStatus

if TYPE_CHECKING:
    from repogym.grading.parsers import TestRun

PLUGIN_DIR = Path(__file__).resolve().parent.parent / "pytest_plugin"
LAUNCHER = "repogym_pytest.py"
DEFAULT_TEST_CMD = "python -m pytest -rA -p no:cacheprovider"

# `python -m pytest` (any interpreter name or path, with interpreter options before -m) and a bare
# `pytest` / `py.test` word; the first one in the command is the run that gets the launcher.
_MODULE_RUN = re.compile(
    r"(?<!\S)(?P<python>\S*python[0-9.]*)(?P<options>(?:\s+(?!-m(?:\s|$))\S+)*?)\s+-m\s+(?:pytest|py\.test)(?=\s|$)"
)
_SCRIPT_RUN = re.compile(r"(?<!\S)(?<!-m )(?:pytest|py\.test)(?=\s|$)")

_EXIT_MEANINGS = {
    2: "pytest was interrupted",
    3: "pytest hit an internal error",
    4: "pytest rejected its command line (an unknown option, or a test id that does not exist)",
}


@dataclass(frozen=True)
class PytestParser:
    """Runs pytest with the repogym_report plugin and reads its report.

    Registered as ``pytest`` and as one name per SWE-bench pytest-family log parser (``pytest-options``,
    ``pytest-v2``, ...: see swebench_ids.py): they run and read tests alike and differ only in how they map
    SWE-bench's cut test ids onto node ids."""

    name: str = "pytest"
    reading: str = "pytest"
    """SWE-bench's reading of the printed log (a key of swebench_ids.READINGS), for ids that are not node ids."""
    framework: str = field(default="pytest", init=False)
    """The framework the grader's canary is written for."""
    plugin_dir: Path | None = PLUGIN_DIR
    plugin_mount: str = SANDBOX_PLUGIN_DIR
    """Where `plugin_dir` is seen by the command (the host folder itself for a sandbox without bind mounts)."""

    def command(self, test_cmd: str, test_ids: Sequence[str], report_file: str) -> str:
        """`test_cmd` with its pytest started by the launcher (see `launched`) and the ids added."""
        command = test_cmd or DEFAULT_TEST_CMD
        run = launched(command, f"{self.plugin_mount}/{LAUNCHER}")
        # The launcher registers the plugin itself; another way of running pytest loads it by name.
        plugin = "" if run != command else "-p repogym_report "
        return report_command(self.plugin_mount, report_file, with_args(run, plugin + shell_join(test_ids)))

    def parse(self, run: TestRun) -> TestReport:
        if run.report_text is None:
            why = interrupted(run) or (
                f"no structured report (exit code {run.exit_code}): pytest did not start "
                "or the repogym_report plugin was not loaded"
            )
            return untrusted(run, why)
        report = read_jsonl(run.report_text)
        phases = _phases_by_test(report.records)
        collect_errors = [
            _normal_id(r.get("nodeid", "")) for r in report.records if r["event"] == "collect_error"
        ]
        collect_skips = [r for r in report.records if r["event"] == "collect_skip"]
        skipped_modules = {
            _normal_id(str(r.get("nodeid", ""))): str(r.get("skipped_from") or "") for r in collect_skips
        }
        skip_reasons = {
            _normal_id(str(r.get("nodeid", ""))): str(r.get("skip_reason") or "") for r in collect_skips
        }
        statuses = {test_id: status for test_id, p in phases.items() if (status := _status(p)) is not None}
        statuses.update(dict.fromkeys(collect_errors, TestStatus.ERROR))
        why = jsonl_problem(run, report, "pytest")
        if why:
            return untrusted(run, why, len(statuses))
        if run.exit_code == 2 and collect_errors and not phases:
            # pytest stops before running anything when a file fails to collect: the errors are the result.
            note = f"collection failed in {', '.join(collect_errors)}; no test ran"
            return trusted(run, statuses, collected=False, note=note)
        # The exit code is checked against pytest's own view, in which a pytest.xfail() at run time is an
        # expected failure; the result keeps repogym's view of it, a failure.
        raised = {t for t, p in phases.items() if _xfail_raised_at_run_time(p)}
        judged = judge_exit(
            run,
            {t: TestStatus.XFAIL if t in raised else s for t, s in statuses.items()},
            _durations(phases),
            ran_tests=bool(phases),
            exit_meanings=_EXIT_MEANINGS,
            tool="pytest",
        )
        results = {
            t: dataclasses.replace(r, status=statuses[t], skipped_from=_skipped_from(phases.get(t, {})))
            for t, r in judged.results.items()
        }
        skip_reasons.update({t: why for t, p in phases.items() if (why := _skip_reason(p))})
        return dataclasses.replace(
            judged,
            results=results,
            skipped_modules=skipped_modules,
            skip_reasons={t: why for t, why in skip_reasons.items() if why},
            printed_statuses=read_printed(run.log, self.reading),
            printed_reading=self.reading,
        )


def launched(test_cmd: str, launcher: str) -> str:
    """`test_cmd` with its pytest run started by `launcher` (repogym_pytest.py), which imports pytest and the
    report plugin before the repository is on sys.path; a command that runs pytest some other way
    (a script, `coverage run -m pytest`) is left as it is.

    >>> launched("python -m pytest -rA", "/p/repogym_pytest.py")
    'python /p/repogym_pytest.py --cwd-first -rA'
    >>> launched("PYTHONPATH=. python3.9 -W ignore -m pytest tests", "/p/l.py")
    'PYTHONPATH=. python3.9 -W ignore /p/l.py --cwd-first tests'
    >>> launched("pytest -rA -p pytest_cov", "/p/l.py"), launched("coverage run -m pytest", "/p/l.py")
    ('python /p/l.py -rA -p pytest_cov', 'coverage run -m pytest')
    """
    module_run = _MODULE_RUN.search(test_cmd)
    script_run = _SCRIPT_RUN.search(test_cmd)
    if module_run and (script_run is None or module_run.start() <= script_run.start()):
        start, end = module_run.span()
        replacement = f"{module_run['python']}{module_run['options']} {launcher} --cwd-first"
    elif script_run:
        start, end = script_run.span()
        replacement = f"python {launcher}"
    else:
        return test_cmd
    return test_cmd[:start] + replacement + test_cmd[end:]


def _normal_id(nodeid: str) -> str:
    """pytest < 4 wrote class instances into nodeids (``t.py::TestC::()::test_y``); SWE-bench ids do not.

    >>> _normal_id("t.py::TestC::()::test_y[a::()]")
    't.py::TestC::test_y[a::()]'
    """
    head, bracket, params = nodeid.partition("[")
    return head.replace("::()", "") + bracket + params


def _phases_by_test(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Mapping[str, Any]]]:
    """nodeid -> {when: record}; a later record of the same phase wins, 'rerun' records are skipped."""
    phases: dict[str, dict[str, Mapping[str, Any]]] = {}
    for record in records:
        if record["event"] != "test" or record.get("outcome") not in ("passed", "failed", "skipped"):
            continue
        phases.setdefault(_normal_id(str(record.get("nodeid", ""))), {})[str(record.get("when"))] = record
    return phases


def _status(phases: Mapping[str, Mapping[str, Any]]) -> TestStatus | None:
    """One test's status from its phases; None when it never reached a verdict."""
    setup, call, teardown = (phases.get(when) for when in ("setup", "call", "teardown"))
    if setup is not None and setup["outcome"] == "failed":
        return TestStatus.ERROR
    if call is not None and call["outcome"] == "failed":
        return TestStatus.FAILED
    if teardown is not None and teardown["outcome"] == "failed":
        return TestStatus.ERROR
    decisive = call if call is not None else setup  # a skip during setup has no call phase
    if decisive is None:
        return None
    if decisive["outcome"] == "skipped":
        if decisive.get("wasxfail") is not True:
            return TestStatus.SKIPPED
        # An expected failure only when the test is marked so: pytest.xfail() at run time (which code under
        # test can call) means the test stopped before it passed.
        return TestStatus.FAILED if _xfail_raised_at_run_time(phases) else TestStatus.XFAIL
    if decisive is call:  # passed, a non-strict xpass included
        return TestStatus.PASSED
    return None  # setup passed but the call never reported


def _skipped_from(phases: Mapping[str, Mapping[str, Any]]) -> str:
    """Where a skipped test's skip came from (the plugin's record; '' for any other status)."""
    decisive = phases.get("call") or phases.get("setup")
    if decisive is None or decisive.get("outcome") != "skipped" or decisive.get("wasxfail") is True:
        return ""
    return str(decisive.get("skipped_from") or "")


def _skip_reason(phases: Mapping[str, Mapping[str, Any]]) -> str:
    """The reason a skipped test's skip gave (the plugin's record; '' for any other status)."""
    decisive = phases.get("call") or phases.get("setup")
    if decisive is None or decisive.get("outcome") != "skipped" or decisive.get("wasxfail") is True:
        return ""
    return str(decisive.get("skip_reason") or "")


def _xfail_raised_at_run_time(phases: Mapping[str, Mapping[str, Any]]) -> bool:
    """An expected failure of a test that had no xfail mark when collection ended: pytest.xfail() called, or
    a mark added, while it ran."""
    decisive = phases.get("call") or phases.get("setup")
    if decisive is None or decisive.get("outcome") != "skipped" or decisive.get("wasxfail") is not True:
        return False
    return decisive.get("xfail_marked") is not True


def _durations(phases: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> dict[str, float]:
    return {
        test_id: sum(float(record.get("duration") or 0.0) for record in by_when.values())
        for test_id, by_when in phases.items()
    }
