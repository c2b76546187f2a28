"""Which candidate changes are test changes: test directories and test file names, the test patch's files,
and not a source package that happens to be named ``testing`` (sympy/testing/ since sympy 1.6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repogym.grading.candidate import filter_candidate, is_test_path
from repogym.grading.grade import grade
from repogym.grading.report import Outcome

from ..support.patches import edit
from ..support.tasks import git_task

LITE_PATHS = Path(__file__).parent / "data" / "swebench_lite_paths.json"


@pytest.mark.parametrize(
    ("path", "kept"),
    [
        ("sympy/testing/runtests.py", True),  # sympy's test runner is code under test
        ("numpy/testing/_private/utils.py", True),
        ("sympy/testing/tests/test_runtests.py", False),
        ("testing/python/fixtures.py", False),  # pytest's own tests, not named test_*
        ("tests/helpers.py", False),
        ("src/pkg/test_io.py", False),
    ],
)
def test_a_package_named_testing_is_code_but_test_directories_are_tests(path: str, kept: bool) -> None:
    result = filter_candidate(edit(path, "a = 1\n", "a = 2\n"), [], lambda p: "a = 1\n")
    assert (result.patch != "") is kept, result.ignored


def test_every_swebench_lite_gold_patch_is_kept_whole() -> None:
    """SWE-bench's split put every path with 'test' in it into the test patch, so no gold patch of the 300
    Lite instances touches a test path by SWE-bench's rule; repogym's narrower rule must keep them all."""
    instances = json.loads(LITE_PATHS.read_text())
    assert len(instances) == 300
    dropped = [(i, p) for i, paths in instances.items() for p in paths["patch"] if is_test_path(p)]
    assert dropped == []
    # And every file of their test patches is a test by name, but one that is protected as a test patch file.
    unnamed = [p for paths in instances.values() for p in paths["test_patch"] if not is_test_path(p)]
    assert unnamed == ["sympy/testing/quality_unicode.py"]


SOURCE = "def double(x):\n    return x + x\n"
HELPER = "from calc.core import double\n\n\ndef check_double(x):\n    return double(x) == 2 * x + 1\n"
FIXED_HELPER = HELPER.replace("2 * x + 1", "2 * x")
TESTS = "from calc.testing.checks import check_double\n\n\ndef test_double():\n    assert check_double(3)\n"


@pytest.mark.slow
def test_a_real_fix_under_a_testing_package_is_graded(tmp_path: Path, toy_task) -> None:
    """The fix lives in calc/testing/checks.py (a source package, like sympy.testing): it must be applied."""
    files = {"calc/__init__.py": "", "calc/core.py": SOURCE, "calc/testing/__init__.py": "",
             "calc/testing/checks.py": HELPER, "tests/test_double.py": TESTS}  # fmt: skip
    task = git_task(tmp_path, files, toy_task.env, "t__testing-pkg", "tests/test_double.py::test_double")
    task = task.replace(
        patch=edit("calc/testing/checks.py", HELPER, FIXED_HELPER),
        env=task.env.__class__(test_cmd="python -m pytest -rA"),
    )
    gold = grade(task, task.patch)
    assert gold.outcome is Outcome.RESOLVED, gold.detail
    assert gold.ignored_paths == ()
    assert grade(task, "").outcome is Outcome.UNRESOLVED
