"""Pieces every log parser shares: building trusted and untrusted reports, reading JSON-lines reports, quoting.

The rule they enforce: a report is either trusted (complete and consistent with the process's exit code) or
it carries no results at all, only a note saying what was seen and why it was not believed.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from repogym.grading.report import TestReport, TestResult, TestStatus

if TYPE_CHECKING:
    from repogym.grading.parsers import TestRun

#: Where the sandbox binds a parser's `plugin_dir` (read-only); commands put it first on PYTHONPATH.
SANDBOX_PLUGIN_DIR = "/opt/repogym/plugins"

#: Statuses that mean a test ran and did not pass (SKIPPED is neither).
FAILING = frozenset({TestStatus.FAILED, TestStatus.ERROR})

#: The environment variable naming the structured report file (read by repogym_report and repogym_unittest).
REPORT_ENV = "REPOGYM_REPORT_FILE"


def untrusted(run: TestRun, why: str, seen: int = 0) -> TestReport:
    """A report with no results: the run cannot be believed; `seen` per-test results are dropped.

    >>> from repogym.grading.parsers import TestRun
    >>> report = untrusted(TestRun("", None, 0), "no report", seen=3)
    >>> report.collected, report.results, report.note
    (False, {}, 'no report; 3 per-test results seen, not trusted')
    """
    note = f"{why}; {seen} per-test results seen, not trusted" if seen else why
    return TestReport(
        results={},
        exit_code=run.exit_code,
        timed_out=run.timed_out,
        log_path=run.log_path,
        duration_s=run.duration_s,
        collected=False,
        note=note,
    )


def trusted(
    run: TestRun,
    statuses: Mapping[str, TestStatus],
    durations: Mapping[str, float] | None = None,
    *,
    collected: bool = True,
    note: str = "",
) -> TestReport:
    """A report whose per-test statuses are believed."""
    durations = durations or {}
    return TestReport(
        results={t: TestResult(t, s, durations.get(t, 0.0)) for t, s in statuses.items()},
        exit_code=run.exit_code,
        timed_out=run.timed_out,
        log_path=run.log_path,
        duration_s=run.duration_s,
        collected=collected,
        note=note,
    )


def interrupted(run: TestRun) -> str:
    """Why an ended run cannot be trusted whatever its report says ('' when it ended by itself).

    >>> from repogym.grading.parsers import TestRun
    >>> interrupted(TestRun("", None, None, timed_out=True, duration_s=30.0))
    'timed out after 30.0 s'
    >>> interrupted(TestRun("", None, None))
    'killed (no exit code)'
    >>> interrupted(TestRun("", None, 1))
    ''
    """
    if run.timed_out:
        return f"timed out after {run.duration_s:.1f} s"
    if run.exit_code is None:
        return "killed (no exit code)"
    return ""


@dataclass(frozen=True)
class JsonlReport:
    """The records of a JSON-lines report, split into the body and the closing sessionfinish record."""

    records: tuple[dict[str, Any], ...] = ()
    """The records between 'start' and 'sessionfinish' (or to the end when it is missing)."""
    finish: dict[str, Any] | None = None
    """The sessionfinish record, None when the run never wrote one (died, os._exit, killed)."""
    problem: str = ""
    """Why the file is malformed ('' when it is well formed); a malformed file is never trusted."""


def read_jsonl(report_text: str) -> JsonlReport:
    """Split a report into records; anything off (bad JSON, no start record, lines after sessionfinish, a
    record count that does not match) is named in `problem`.

    >>> read_jsonl('{"event": "start"}\\n{"event": "sessionfinish", "records": 0, "exitstatus": 0}\\n').problem
    ''
    >>> read_jsonl('{"event": "start"}\\nPASSED\\n').problem
    'report line 2 is not a JSON object'
    >>> read_jsonl('{"event": "start"}\\n{"event": "sessionfinish", "records": 2}\\n').problem
    'sessionfinish counts 2 records but the report holds 0'
    """
    lines = report_text.splitlines()
    parsed: list[dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict) or not isinstance(record.get("event"), str):
            # A line cut short by a kill is expected at the very end; anywhere else it is tampering.
            if number == len(lines) and not report_text.endswith("\n"):
                break
            return JsonlReport(problem=f"report line {number} is not a JSON object")
        parsed.append(record)
    if not parsed or parsed[0]["event"] != "start":
        return JsonlReport(problem="report does not open with a start record")
    body = parsed[1:]
    finishes = [i for i, record in enumerate(body) if record["event"] == "sessionfinish"]
    if not finishes:
        return JsonlReport(records=tuple(body))
    if finishes != [len(body) - 1]:
        return JsonlReport(records=tuple(body), problem="records follow the sessionfinish record")
    finish, body = body[-1], body[:-1]
    if finish.get("records") != len(body):
        problem = f"sessionfinish counts {finish.get('records')} records but the report holds {len(body)}"
        return JsonlReport(records=tuple(body), problem=problem)
    return JsonlReport(records=tuple(body), finish=finish)


def shell_join(words: Sequence[str]) -> str:
    """Quote each word for `sh -c` (test ids carry brackets, spaces and quotes).

    >>> shell_join(["tests/t.py::test_p[a b]", "x"])
    "'tests/t.py::test_p[a b]' x"
    """
    return " ".join(shlex.quote(word) for word in words)


def with_args(test_cmd: str, args: str) -> str:
    """`test_cmd` followed by `args` (either may be empty)."""
    return f"{test_cmd} {args}".strip()


def export_plugin_path(plugin_mount: str) -> str:
    """Shell that puts `plugin_mount` first on PYTHONPATH, keeping what was there.

    >>> export_plugin_path("/opt/repogym/plugins")
    'export PYTHONPATH=/opt/repogym/plugins"${PYTHONPATH:+:$PYTHONPATH}"'
    """
    return f'export PYTHONPATH={shlex.quote(plugin_mount)}"${{PYTHONPATH:+:$PYTHONPATH}}"'


def jsonl_problem(run: TestRun, report: JsonlReport, tool: str) -> str:
    """Why a JSON-lines report of a finished run cannot be believed ('' when it can): the run was cut short,
    the file is malformed, the closing record is missing, or it records another exit status than the process's.
    """
    why = interrupted(run) or report.problem
    if why:
        return why
    if report.finish is None:
        return f"no sessionfinish record: {tool} died or called os._exit (exit code {run.exit_code})"
    recorded = report.finish.get("exitstatus")
    if recorded != run.exit_code:
        return f"the report records exit status {recorded} but the process exited {run.exit_code}"
    return ""


def judge_exit(
    run: TestRun,
    statuses: Mapping[str, TestStatus],
    durations: Mapping[str, float],
    *,
    ran_tests: bool,
    exit_meanings: Mapping[int, str],
    tool: str,
) -> TestReport:
    """Cross-check a complete report with its runner's exit code: 0 means nothing failed, 1 means something
    did, 5 means no test was found (pytest's and repogym_unittest's convention); any other code, or a code the
    statuses contradict, makes the report untrusted."""
    code = run.exit_code
    failing = sorted(test_id for test_id, status in statuses.items() if status in FAILING)
    seen = len(statuses)
    if code == 5 and not statuses:
        return trusted(run, {}, collected=False, note=f"{tool} found no tests (exit code 5)")
    if code in exit_meanings:
        return untrusted(run, f"{exit_meanings[code]} (exit code {code})", seen)
    if code == 0 and failing:
        return untrusted(run, f"exit code 0 but the report records failures ({', '.join(failing[:3])})", seen)
    if code == 1 and not failing:
        return untrusted(run, "exit code 1 but the report records no failure", seen)
    if code not in (0, 1):
        return untrusted(run, f"unexpected {tool} exit code {code}", seen)
    return trusted(run, statuses, durations, collected=ran_tests)


def report_command(plugin_mount: str, report_file: str, run: str) -> str:
    """`run` with the plugin folder on PYTHONPATH and the report path exported; a stale report is removed first.

    >>> report_command("/opt/p", "/out/r.jsonl", "python -m pytest")  # doctest: +ELLIPSIS
    'rm -f /out/r.jsonl; ...; export REPOGYM_REPORT_FILE=/out/r.jsonl; python -m pytest'
    """
    report = shlex.quote(report_file)
    return f"rm -f {report}; {export_plugin_path(plugin_mount)}; export {REPORT_ENV}={report}; {run}"
