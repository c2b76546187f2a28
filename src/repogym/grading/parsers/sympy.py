"""sympy: per-test statuses from the log of sympy's own runner, ``bin/test -C --verbose``.

The reading is SWE-bench's ``parse_log_sympy`` (swebench/harness/log_parsers/python.py), reimplemented rule for
rule so that verdicts agree with SWE-bench's, quirks included:

- test ids are bare function names (``test_immutable``), as in SWE-bench's FAIL_TO_PASS lists;
- a stripped line that starts with ``test_`` and ends in `` ok`` / `` F`` / `` E`` gives PASSED / FAILED / ERROR
  (so a verbose line that ends in ``[OK]`` or ``[FAIL]``, the last test of a file, is not read at all);
- a failure header such as ``____ sympy/core/tests/test_basic.py:test_immutable ____`` adds the id
  ``sympy/core/tests/test_basic.py:test_immutable`` as FAILED.

Guarantees:

- Fail closed around SWE-bench's reading: a run that timed out or was killed, that never printed bin/test's
  ``tests finished:`` summary (it died, or sympy failed to import), or whose exit code disagrees with the log
  (bin/test exits 1 exactly when a test failed or raised: exit 0 with failures in the log, or exit 1 with none)
  gives ``collected=False`` and no results.

Not guaranteed:

- This is a log parser, like SWE-bench's: a test that prints ``test_other ok`` on a line of its own can change
  ``test_other``'s status. The exit-code check catches a log that claims success for a failing run only when
  no failure is visible at all; it cannot tell which lines are genuine.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from repogym.grading.parsers.common import FAILING, interrupted, shell_join, trusted, untrusted, with_args
from repogym.grading.report import TestReport, TestStatus

if TYPE_CHECKING:
    from repogym.grading.parsers import TestRun

# SWE-bench runs sympy with these warnings silenced, so that warnings do not split the verbose result lines.
DEFAULT_TEST_CMD = "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C --verbose"

# SWE-bench's pattern, unchanged: the centred failure header `____ path.py:test_name ____`.
_FAILURE_HEADER = re.compile(r"(_*) (.*)\.py:(.*) (_*)")
_LINE_SUFFIXES = ((" E", TestStatus.ERROR), (" F", TestStatus.FAILED), (" ok", TestStatus.PASSED))
_SUMMARY = "tests finished:"
# Printed by bin/test exactly when the run is not ok (a failure, an exception or a failed doctest).
_NOT_OK_BANNER = "DO *NOT* COMMIT!"


def parse_log_sympy(log: str) -> dict[str, TestStatus]:
    """SWE-bench's reading of a ``bin/test --verbose`` log: test name -> status.

    >>> log = '''sympy/core/tests/test_basic.py[3]
    ... test_a ok
    ... test_b F
    ... test_c ok                                                    [FAIL]
    ...
    ... _______ sympy/core/tests/test_basic.py:test_b ________'''
    >>> {name: status.value for name, status in parse_log_sympy(log).items()}
    {'sympy/core/tests/test_basic.py:test_b': 'FAILED', 'test_a': 'PASSED', 'test_b': 'FAILED'}
    """
    statuses: dict[str, TestStatus] = {}
    for _, path, name, _ in _FAILURE_HEADER.findall(log):
        statuses[f"{path}.py:{name}"] = TestStatus.FAILED
    for raw_line in log.split("\n"):
        line = raw_line.strip()
        if not line.startswith("test_"):
            continue
        for suffix, status in _LINE_SUFFIXES:
            if line.endswith(suffix):
                statuses[line.split()[0]] = status
    return statuses


@dataclass(frozen=True)
class SympyParser:
    """Runs sympy's ``bin/test`` and reads its verbose log."""

    name: str = field(default="sympy", init=False)
    plugin_dir: Path | None = None

    def command(self, test_cmd: str, test_ids: Sequence[str], report_file: str) -> str:
        """bin/test takes test files (or globs of them) as arguments; sympy's test ids are bare function names
        it cannot select, so graders pass the test files of the task's test patch, as SWE-bench does.
        No structured report: `report_file` is not written."""
        return with_args(test_cmd or DEFAULT_TEST_CMD, shell_join(test_ids))

    def parse(self, run: TestRun) -> TestReport:
        statuses = parse_log_sympy(run.log)
        seen = len(statuses)
        why = interrupted(run)
        if why:
            return untrusted(run, why, seen)
        if _SUMMARY not in run.log:
            why = f"no '{_SUMMARY}' summary in the log: bin/test did not finish (exit code {run.exit_code})"
            return untrusted(run, why, seen)
        log_says_failed = any(s in FAILING for s in statuses.values()) or _NOT_OK_BANNER in run.log
        if run.exit_code == 0 and log_says_failed:
            return untrusted(run, "exit code 0 but the log shows failures", seen)
        if run.exit_code != 0 and not log_says_failed:
            return untrusted(run, f"exit code {run.exit_code} but the log shows no failure", seen)
        if not statuses:
            return trusted(run, {}, collected=False, note="bin/test ran no test")
        return trusted(run, statuses)
