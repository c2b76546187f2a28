"""Django: per-test statuses from the verbose log of Django's ``tests/runtests.py`` (unittest's text runner).

The reading is SWE-bench's ``parse_log_django`` (swebench/harness/log_parsers/python.py), reimplemented rule for
rule so verdicts agree with SWE-bench's. Test ids are what the runner prints before `` ... ``: ``test_x
(module.Class)`` (Python < 3.11) or ``test_x (module.Class.test_x)`` (3.11+), or the test's docstring line.

Guarantees:

- Fail closed around SWE-bench's reading: a run that timed out or was killed, that never printed unittest's
  ``Ran N tests`` line, or whose exit code disagrees with the log (the runner exits non-zero exactly when a
  test failed or errored: exit 0 with failures in the log, or non-zero with none) gives ``collected=False``
  and no results. ``Ran 0 tests`` gives ``collected=False``.

Not guaranteed:

- This is a log parser, like SWE-bench's: a test that prints ``test_other (mod.C) ... ok`` on a line of its own
  can change ``test_other``'s status, and output printed between a test's name and its verdict can hide the
  verdict (SWE-bench's rule for a line starting with ``ok`` recovers some of those). Use the ``unittest`` parser
  (a structured report) for repositories that do not need SWE-bench's Django ids.
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

DEFAULT_TEST_CMD = "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1"

_PASS_SUFFIXES = (" ... ok", " ... OK", " ...  OK")
# A django__django-7188 quirk SWE-bench special-cases: a migration message printed on the test's line.
_MIGRATION_PREFIX = "Applying sites.0002_alter_domain_unique...test_no_migrations"
# SWE-bench's patterns for verdicts split from their test by a long multi-line print (a Django logger bug).
_SPLIT_VERDICTS = (
    r"^(.*?)\s\.\.\.\sTesting\ against\ Django\ installed\ in\ ((?s:.*?))\ silenced\)\.\nok$",
    r"^(.*?)\s\.\.\.\sInternal\ Server\ Error:\ \/(.*)\/\nok$",
    r"^(.*?)\s\.\.\.\sSystem check identified no issues \(0 silenced\)\nok$",
)
_RAN = re.compile(r"^Ran (\d+) tests? in ", re.MULTILINE)
_FAILED_SUMMARY = re.compile(r"^FAILED \(", re.MULTILINE)
# `test_x (mod.Class)` or `test_x (mod.Class.test_x)` -> the dotted label runtests.py accepts.
_UNITTEST_ID = re.compile(r"^(\w+) \(([\w.]+)\)$")


def parse_log_django(log: str) -> dict[str, TestStatus]:
    """SWE-bench's reading of a Django (unittest verbosity 2) log: test description -> status.

    >>> log = '''test_a (m.T) ... ok
    ... test_b (m.T) ... FAIL
    ... test_c (m.T) ... skipped 'no db'
    ... test_d (m.T) ... noise
    ... ok
    ... ERROR: test_e (m.T)'''
    >>> {name: status.value for name, status in parse_log_django(log).items()}
    {'test_a (m.T)': 'PASSED', 'test_b (m.T)': 'FAILED', 'test_c (m.T)': 'SKIPPED', 'test_d (m.T)': 'PASSED', 'test_e': 'ERROR'}
    """
    statuses: dict[str, TestStatus] = {}
    previous_test = None
    for raw_line in log.split("\n"):
        line = raw_line.strip()
        if "--version is equivalent to version" in line:
            statuses["--version is equivalent to version"] = TestStatus.PASSED
        if " ... " in line:
            previous_test = line.split(" ... ")[0]
        for suffix in _PASS_SUFFIXES:
            if line.endswith(suffix):
                if line.startswith(_MIGRATION_PREFIX):
                    line = line.split("...", 1)[-1].strip()
                statuses[line.rsplit(suffix, 1)[0]] = TestStatus.PASSED
                break
        if " ... skipped" in line:
            statuses[line.split(" ... skipped")[0]] = TestStatus.SKIPPED
        if line.endswith(" ... FAIL"):
            statuses[line.split(" ... FAIL")[0]] = TestStatus.FAILED
        if line.startswith("FAIL:"):
            statuses[line.split()[1].strip()] = TestStatus.FAILED
        if line.endswith(" ... ERROR"):
            statuses[line.split(" ... ERROR")[0]] = TestStatus.ERROR
        if line.startswith("ERROR:"):
            statuses[line.split()[1].strip()] = TestStatus.ERROR
        if line.lstrip().startswith("ok") and previous_test is not None:
            # The test passed but printed something (newlines included) between " ... " and "ok".
            statuses[previous_test] = TestStatus.PASSED
    for pattern in _SPLIT_VERDICTS:
        for match in re.finditer(pattern, log, re.MULTILINE):
            statuses[match.group(1)] = TestStatus.PASSED
    return statuses


def runtests_label(test_id: str) -> str:
    """The dotted label ``runtests.py`` accepts for a Django-style test id or a test file (SWE-bench's
    transformation: ``tests/`` and ``.py`` dropped, slashes to dots); dotted labels pass as they are.

    >>> runtests_label("test_x (admin_views.tests.AdminViewTest)")
    'admin_views.tests.AdminViewTest.test_x'
    >>> runtests_label("test_x (admin_views.tests.AdminViewTest.test_x)")
    'admin_views.tests.AdminViewTest.test_x'
    >>> runtests_label("tests/admin_views/test_forms.py")
    'admin_views.test_forms'
    >>> runtests_label("admin_views.tests")
    'admin_views.tests'
    """
    if test_id.endswith(".py") or "/" in test_id:
        path = test_id.removesuffix(".py")
        return path.removeprefix("tests/").replace("/", ".")
    match = _UNITTEST_ID.match(test_id)
    if not match:
        return test_id
    name, owner = match.groups()
    return owner if owner.endswith("." + name) else f"{owner}.{name}"


@dataclass(frozen=True)
class DjangoParser:
    """Runs Django's test runner (or any unittest runner at verbosity 2) and reads its log."""

    name: str = field(default="django", init=False)
    plugin_dir: Path | None = None

    def command(self, test_cmd: str, test_ids: Sequence[str], report_file: str) -> str:
        """Test ids and test files are turned into dotted labels (see `runtests_label`).
        No structured report: `report_file` is not written."""
        return with_args(test_cmd or DEFAULT_TEST_CMD, shell_join([runtests_label(t) for t in test_ids]))

    def parse(self, run: TestRun) -> TestReport:
        statuses = parse_log_django(run.log)
        seen = len(statuses)
        why = interrupted(run)
        if why:
            return untrusted(run, why, seen)
        ran = _RAN.findall(run.log)
        if not ran:
            why = f"no 'Ran N tests' line in the log: the runner did not finish (exit code {run.exit_code})"
            return untrusted(run, why, seen)
        log_says_failed = any(s in FAILING for s in statuses.values()) or bool(
            _FAILED_SUMMARY.search(run.log)
        )
        if run.exit_code == 0 and log_says_failed:
            return untrusted(run, "exit code 0 but the log shows failures", seen)
        if run.exit_code != 0 and not log_says_failed:
            return untrusted(run, f"exit code {run.exit_code} but the log shows no failure", seen)
        if all(int(n) == 0 for n in ran):
            return trusted(run, {}, collected=False, note="the runner ran 0 tests")
        return trusted(run, statuses)
