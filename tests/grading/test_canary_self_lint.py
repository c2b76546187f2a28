"""The canary in a test file whose own tests lint that file: pylint's suite runs pylint on its test modules
and expects no message, and SWE-bench Verified's pylint-6903 gold came out UNRESOLVED because the canary's
failing ``assert 437 == 518`` is a comparison of constants (R0133), which made pylint exit 8. The canary's
assertion is now one no default checker flags; the gold patch of a task shaped like that one resolves."""

from __future__ import annotations

import pytest

from repogym.grading.grade import grade
from repogym.grading.report import Outcome
from repogym.task import EnvSpec, Task

from ..support.git import init_repo, staged_diff

_CALC = "def double(x):\n    return x * 3\n"
_TESTS = '''"""Tests that also lint this file."""
import subprocess
import sys

from calc import double


def test_double():
    """The bug."""
    assert double(3) == 6


def test_this_file_lints_clean():
    """As pylint's own tests do with their modules."""
    checks = ["--disable=all", "--enable=comparison-of-constants,assert-on-string-literal", "--score=n"]
    done = subprocess.run([sys.executable, "-m", "pylint", *checks, __file__], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
'''


@pytest.mark.slow
def test_a_test_that_lints_its_own_file_passes_beside_the_canary(tmp_path, toy_task) -> None:
    repo = tmp_path / "selflint"
    base = init_repo(repo, {"pytest.ini": "[pytest]\n", "calc.py": _CALC, "tests/test_calc.py": _TESTS})
    gold = staged_diff(repo, {"calc.py": _CALC.replace("x * 3", "x * 2")})
    task = Task(
        "t__selflint", "t/selflint", base, gold,
        FAIL_TO_PASS=["tests/test_calc.py::test_double"],
        PASS_TO_PASS=["tests/test_calc.py::test_this_file_lints_clean"],
        repo_source=str(repo),
        env=EnvSpec(packages=("pylint",), test_cmd="python -m pytest -rA"),
    )  # fmt: skip
    result = grade(task, gold)
    assert result.outcome is Outcome.RESOLVED, (result.outcome, result.detail)
    assert grade(task, "").outcome is Outcome.UNRESOLVED
