"""Pure rules of validation: which files to run, and FAIL_TO_PASS / PASS_TO_PASS / flaky from repeated runs.

A test's outcome in one run is one of three categories: it passed (PASSED or
XFAIL, as SWE-bench counts them), it was skipped, or it did not pass (FAILED,
ERROR, or missing from the run: a file that fails to import before the fix
reports none of its tests). A test is flaky when its category changes
between the runs of one phase (before or after the gold patch).
"""

from __future__ import annotations

import enum
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from repogym.grading.report import TestStatus
from repogym.patches import parse_patch
from repogym.testpaths import is_test_module

#: Python files of a test patch that are support code, never run directly.
_SUPPORT_FILES = ("conftest.py", "__init__.py")

Statuses = Mapping[str, TestStatus]


class Category(enum.StrEnum):
    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"


def category(status: TestStatus | None) -> Category:
    """The category of one test's status in one run (None: the run did not report it).

    >>> [category(s).value for s in (TestStatus.XFAIL, TestStatus.ERROR, None, TestStatus.SKIPPED)]
    ['pass', 'fail', 'fail', 'skip']
    """
    if status is None:
        return Category.FAIL
    if status.ok:
        return Category.PASS
    return Category.SKIP if status is TestStatus.SKIPPED else Category.FAIL


@dataclass(frozen=True)
class SuiteClassification:
    """How each test of a suite behaved before and after the gold patch, over every run."""

    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    flaky: tuple[str, ...]
    flaky_fail_to_pass: tuple[str, ...]
    """Flaky tests that failed in some run before the gold patch and passed in some run after it."""


def classify(before: Sequence[Statuses], after: Sequence[Statuses]) -> SuiteClassification:
    """FAIL_TO_PASS, PASS_TO_PASS and flaky tests from K runs before and K runs after the gold patch.

    Tests keep the order in which the after-runs reported them.

    >>> P, F = TestStatus.PASSED, TestStatus.FAILED
    >>> c = classify([{"t::a": F, "t::b": P}] * 2, [{"t::a": P, "t::b": P, "t::new": P}] * 2)
    >>> c.fail_to_pass, c.pass_to_pass
    (('t::a', 't::new'), ('t::b',))
    >>> c = classify([{"t::a": F}, {"t::a": F}], [{"t::a": P}, {"t::a": F}])
    >>> c.fail_to_pass, c.flaky, c.flaky_fail_to_pass
    ((), ('t::a',), ('t::a',))
    """
    names: dict[str, None] = {}
    for run in (*after, *before):
        names.update(dict.fromkeys(run))
    f2p: list[str] = []
    p2p: list[str] = []
    flaky: list[str] = []
    flaky_f2p: list[str] = []
    for name in names:
        seen_before = {category(run.get(name)) for run in before}
        seen_after = {category(run.get(name)) for run in after}
        if len(seen_before) > 1 or len(seen_after) > 1:
            flaky.append(name)
            if Category.FAIL in seen_before and Category.PASS in seen_after:
                flaky_f2p.append(name)
        elif seen_after == {Category.PASS} and seen_before == {Category.FAIL}:
            f2p.append(name)
        elif seen_after == {Category.PASS} and seen_before == {Category.PASS}:
            p2p.append(name)
    return SuiteClassification(tuple(f2p), tuple(p2p), tuple(flaky), tuple(flaky_f2p))


def test_files(test_patch: str) -> list[str]:
    """The test modules a test patch adds or changes: what validation runs before and after the fix.

    Deleted files and support modules (conftest.py, __init__.py) are left out; when no file has a
    test module's name, every other changed Python file is run (some projects name tests freely).

    >>> patch = (
    ...     "--- a/tests/conftest.py\\n+++ b/tests/conftest.py\\n@@ -1 +1 @@\\n-a\\n+b\\n"
    ...     "--- a/tests/test_x.py\\n+++ b/tests/test_x.py\\n@@ -1 +1 @@\\n-a\\n+b\\n"
    ...     "--- a/tests/test_old.py\\n+++ /dev/null\\n@@ -1 +0,0 @@\\n-a\\n"
    ...     "--- a/tests/data.json\\n+++ b/tests/data.json\\n@@ -1 +1 @@\\n-a\\n+b\\n"
    ... )
    >>> test_files(patch)
    ['tests/test_x.py']
    >>> test_files("--- a/tests/checks.py\\n+++ b/tests/checks.py\\n@@ -1 +1 @@\\n-a\\n+b\\n")
    ['tests/checks.py']
    """
    parsed = parse_patch(test_patch)
    if parsed is None:
        return []
    python: list[str] = []
    for patched in parsed:
        target = patched.target_file or ""
        if target == "/dev/null" or patched.is_removed_file:
            continue
        path = target[2:] if target.startswith("b/") else target
        if path.endswith(".py") and path not in python:
            python.append(path)
    runnable = [p for p in python if posixpath.basename(p) not in _SUPPORT_FILES]
    named = [p for p in runnable if is_test_module(p)]
    return named or runnable


test_files.__test__ = False  # type: ignore[attr-defined]  # not a pytest test
