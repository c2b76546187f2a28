"""Typed results of a test run and of a grade (the contracts grading hands on).

Grading is kept apart from rewarding: these records say what happened; a
reward function turns them into a number elsewhere (`repogym.rewards`).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


class TestStatus(enum.StrEnum):
    """Status of one test, SWE-bench's vocabulary plus xfail."""

    __test__ = False  # not a pytest test class

    PASSED = "PASSED"
    FAILED = "FAILED"
    ERROR = "ERROR"
    SKIPPED = "SKIPPED"
    XFAIL = "XFAIL"

    @property
    def ok(self) -> bool:
        """Counts as passing for FAIL_TO_PASS / PASS_TO_PASS (SWE-bench counts XFAIL as passing)."""
        return self in (TestStatus.PASSED, TestStatus.XFAIL)


@dataclass(frozen=True)
class TestResult:
    __test__ = False

    test_id: str
    status: TestStatus
    duration_s: float = 0.0
    skipped_from: str = ""
    """For a SKIPPED result, where the skip came from: "mark" (a skip or skipif mark, a unittest skip
    decorator), the repository path of the innermost frame of the repository's code that raised it, or ""
    when that is not known (a log parser, a skip pytest raised on code's behalf). judge.py decides which of
    these are the tests' own skips."""


@dataclass(frozen=True)
class TestReport:
    """What one test run produced, read from a structured report or a log by a LogParser."""

    __test__ = False

    results: dict[str, TestResult] = field(default_factory=dict)
    exit_code: int | None = None
    timed_out: bool = False
    log_path: str = ""
    duration_s: float = 0.0
    collected: bool = True
    """False when the runner never got to run tests (import error at collection, crash, missing runner)."""
    note: str = ""
    """Why the report is partial or empty, in words (e.g. 'structured report missing')."""
    skipped_modules: dict[str, str] = field(default_factory=dict)
    """Test files (or directories) skipped while they were collected (`pytest.importorskip` or
    `pytest.skip(allow_module_level=True)` at module level, a SkipTest raised on import): id -> where the
    skip came from, as in `TestResult.skipped_from`. Their tests never ran and have no result."""
    skip_reasons: dict[str, str] = field(default_factory=dict)
    """Skipped test ids, and the files of `skipped_modules`, -> the reason the skip gave (pytest's structured
    report: "could not import 'cdms2': No module named 'cdms2'"); what a test lacked is read from it
    (grading/test_needs.py). Empty for runners that report no reasons."""
    printed_statuses: dict[str, str] | None = None
    """Test id -> status word as SWE-bench's log parser for this framework reads the printed log (pytest's
    -rA summary, whose ids it cuts at the first space). Never results: judge.py uses them only to map
    SWE-bench's cut ids onto `results` (parsers/swebench_ids.py). None when the parser has no such reading."""
    printed_reading: str = ""
    """Which of SWE-bench's readings gave `printed_statuses` (a key of parsers/swebench_ids.READINGS)."""

    def status(self, test_id: str) -> TestStatus | None:
        result = self.results.get(test_id)
        return result.status if result else None

    def statuses(self) -> dict[str, TestStatus]:
        return {test_id: result.status for test_id, result in self.results.items()}

    def passed(self, test_id: str) -> bool:
        status = self.status(test_id)
        return status is not None and status.ok

    @classmethod
    def from_statuses(cls, statuses: Mapping[str, TestStatus], **kwargs: Any) -> TestReport:
        return cls(results={t: TestResult(t, s) for t, s in statuses.items()}, **kwargs)

    def merged(self, other: TestReport) -> TestReport:
        """Results of two runs together (later wins on a clash)."""
        printed = (
            None
            if self.printed_statuses is None and other.printed_statuses is None
            else {**(self.printed_statuses or {}), **(other.printed_statuses or {})}
        )
        return TestReport(
            results={**self.results, **other.results},
            skipped_modules={**self.skipped_modules, **other.skipped_modules},
            skip_reasons={**self.skip_reasons, **other.skip_reasons},
            printed_statuses=printed,
            printed_reading=other.printed_reading or self.printed_reading,
            exit_code=other.exit_code if other.exit_code is not None else self.exit_code,
            timed_out=self.timed_out or other.timed_out,
            log_path=other.log_path or self.log_path,
            duration_s=self.duration_s + other.duration_s,
            collected=self.collected and other.collected,
            note="; ".join(n for n in (self.note, other.note) if n),
        )


class ResolvedStatus(enum.StrEnum):
    """SWE-bench's resolution levels."""

    FULL = "FULL"
    PARTIAL = "PARTIAL"
    NO = "NO"


class SkipRule(enum.StrEnum):
    """How a skipped FAIL_TO_PASS / PASS_TO_PASS test counts (grading/judge.py states both rules)."""

    STRICT = "strict"
    """A skipped required test never passed: what rewards use."""
    SWEBENCH = "swebench"
    """SWE-bench's verdict (v5.0.0+), for SWE-bench-format evaluation of SWE-bench instances."""


class Outcome(enum.StrEnum):
    """How a grade ended. Only RESOLVED is a success; every other way has its own name."""

    RESOLVED = "RESOLVED"
    UNRESOLVED = "UNRESOLVED"
    """Tests ran; some FAIL_TO_PASS or PASS_TO_PASS test did not pass."""
    REPORT_FORGED = "REPORT_FORGED"
    """Tests ran, but the report says what no honest run says (the grader's canary test did not fail):
    something in the patch rewrote or replaced the results. The candidate's fault, not an error."""
    PATCH_APPLY_FAILED = "PATCH_APPLY_FAILED"
    TESTS_DID_NOT_RUN = "TESTS_DID_NOT_RUN"
    TESTS_NEED_NETWORK = "TESTS_NEED_NETWORK"
    """Tests ran (or failed to collect), some FAIL_TO_PASS or PASS_TO_PASS test did not pass, and the log shows
    a test trying to reach the network, which the jail closes (`repogym.sandbox.network_attempts.needs_network`): no
    offline grader can resolve the task as it stands. Not resolved in every count (it is never a grader
    error: printing a resolver's error cannot take a patch out of a count). `repogym grade --allow-network`
    opens the network to the test run, for imported tasks whose tests need it."""
    TIMEOUT = "TIMEOUT"
    ENV_BUILD_FAILED = "ENV_BUILD_FAILED"
    INFRA_ERROR = "INFRA_ERROR"


def resolved_status(
    statuses: Mapping[str, TestStatus],
    fail_to_pass: Iterable[str],
    pass_to_pass: Iterable[str],
    not_counted: Iterable[str] = (),
) -> ResolvedStatus:
    """SWE-bench's get_resolution_status: FULL when every F2P and P2P test passed,
    PARTIAL when some F2P passed and every P2P passed, NO otherwise. No F2P tests is NO.

    PASS_TO_PASS tests in `not_counted` count neither as passed nor as failed (judge.py decides which:
    ids that name no test, and skips under SWE-bench's rule); a FAIL_TO_PASS test always counts.

    >>> P, F, S = TestStatus.PASSED, TestStatus.FAILED, TestStatus.SKIPPED
    >>> resolved_status({"a": P, "b": P}, ["a"], ["b"]).value
    'FULL'
    >>> resolved_status({"a": P, "c": F, "b": P}, ["a", "c"], ["b"]).value
    'PARTIAL'
    >>> resolved_status({"a": P, "b": F}, ["a"], ["b"]).value
    'NO'
    >>> resolved_status({"a": P, "b": S}, ["a"], ["b"]).value, resolved_status({"a": P, "b": S}, ["a"], ["b"], ["b"]).value
    ('NO', 'FULL')
    >>> resolved_status({"a": S}, ["a"], [], ["a"]).value  # a skipped FAIL_TO_PASS test never passes
    'NO'
    >>> resolved_status({}, [], []).value
    'NO'
    """
    f2p, skipped = list(fail_to_pass), set(not_counted)
    p2p = [t for t in pass_to_pass if t not in skipped]
    if not f2p:
        return ResolvedStatus.NO
    f2p_ok = sum(1 for t in f2p if t in statuses and statuses[t].ok)
    p2p_ok = all(t in statuses and statuses[t].ok for t in p2p)
    if f2p_ok == len(f2p) and p2p_ok:
        return ResolvedStatus.FULL
    if f2p_ok > 0 and p2p_ok:
        return ResolvedStatus.PARTIAL
    return ResolvedStatus.NO


@dataclass(frozen=True)
class GradeResult:
    """The verdict on one patch for one task."""

    instance_id: str
    outcome: Outcome
    status: ResolvedStatus
    fail_to_pass: dict[str, TestStatus | None] = field(default_factory=dict)
    """Each FAIL_TO_PASS test's status after the patch (None: not seen in the run)."""
    pass_to_pass: dict[str, TestStatus | None] = field(default_factory=dict)
    patch_applied_with: str = ""
    """'git apply', 'git apply --3way'/'patch --fuzz' (fuzzier fallbacks), or '' when nothing applied."""
    ignored_paths: tuple[str, ...] = ()
    """Candidate changes that were discarded (test files overwritten by the test patch, test configuration)."""
    detail: str = ""
    """Human-readable reason for a non-resolved outcome (log tail, apply error)."""
    report: TestReport | None = None
    compile_errors: tuple[str, ...] | None = None
    """Changed Python files that do not compile, or the import error of the package; None = not checked."""
    timings: dict[str, float] = field(default_factory=dict)
    not_counted: dict[str, str] = field(default_factory=dict)
    """PASS_TO_PASS tests that did not count as failures, with why (an id that names no test; under the
    swebench skip rule, a skip SWE-bench counts as maintained); see grading/judge.py."""
    skip_rule: SkipRule = SkipRule.STRICT
    """The rule skipped tests were judged by."""
    network_open: bool = False
    """The test run could reach the network (the grader's opt-in, `grade(allow_network=True)`); False, the
    default: its network namespace was closed, as for every command of an episode."""
    lacks: tuple[str, ...] = ()
    """For a run whose required tests did not pass: what its log shows the environment lacked ("module cdms2",
    "program dot (Debian package graphviz)"; grading/test_needs.py). A cause named, never a verdict."""

    @property
    def resolved(self) -> bool:
        return self.outcome is Outcome.RESOLVED

    def tests(self) -> dict[str, str]:
        """Test id -> status name for every graded test ('MISSING' when the run never reported it)."""
        merged = {**self.pass_to_pass, **self.fail_to_pass}
        return {test: (status.value if status else "MISSING") for test, status in merged.items()}

    def to_dict(self) -> dict[str, Any]:
        return {
            "instance_id": self.instance_id,
            "resolved": self.resolved,
            "status": self.status.value,
            "outcome": self.outcome.value,
            "tests": self.tests(),
            "FAIL_TO_PASS": {t: (s.value if s else None) for t, s in self.fail_to_pass.items()},
            "PASS_TO_PASS": {t: (s.value if s else None) for t, s in self.pass_to_pass.items()},
            "patch_applied_with": self.patch_applied_with,
            "ignored_paths": list(self.ignored_paths),
            "detail": self.detail,
            "exit_code": self.report.exit_code if self.report else None,
            "timed_out": self.report.timed_out if self.report else False,
            "log_path": self.report.log_path if self.report else "",
            "compile_errors": list(self.compile_errors) if self.compile_errors is not None else None,
            "timings": self.timings,
            "not_counted": self.not_counted,
            "skip_rule": self.skip_rule.value,
            "network_open": self.network_open,
            "lacks": list(self.lacks),
        }

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> GradeResult:
        def statuses(mapping: Mapping[str, Any]) -> dict[str, TestStatus | None]:
            return {t: (TestStatus(s) if s else None) for t, s in mapping.items()}

        return cls(
            instance_id=row["instance_id"],
            outcome=Outcome(row["outcome"]),
            status=ResolvedStatus(row["status"]),
            fail_to_pass=statuses(row.get("FAIL_TO_PASS", {})),
            pass_to_pass=statuses(row.get("PASS_TO_PASS", {})),
            patch_applied_with=row.get("patch_applied_with", ""),
            ignored_paths=tuple(row.get("ignored_paths", ())),
            detail=row.get("detail", ""),
            compile_errors=tuple(row["compile_errors"]) if row.get("compile_errors") is not None else None,
            timings=dict(row.get("timings", {})),
            not_counted=dict(row.get("not_counted", {})),
            skip_rule=SkipRule(row.get("skip_rule", SkipRule.STRICT.value)),
            network_open=bool(row.get("network_open", False)),
            lacks=tuple(row.get("lacks", ())),
        )
