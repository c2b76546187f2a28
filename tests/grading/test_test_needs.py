"""What a run lacked from its environment, named on the grade (grading/test_needs.py, issue 28): a required test
skipped for want of a module no install provided or of a program the machine lacks, as Verified's xarray
(cdms2, conda-forge only) and sphinx (graphviz's `dot`) instances skip. Real repositories, the real sandbox;
the hostile tests are named after what a candidate could do with a cause-reader over a log it writes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from repogym.grading.controls import ControlGrade
from repogym.grading.report import Outcome
from repogym.grading.test_needs import MAX_NAMED, environment_lacks
from repogym.task import EnvSpec

from ..support.sandbox import RUNS
from ..support.tasks import git_task

SKIPS = {
    "conftest.py": "",  # puts the root on sys.path
    "geo.py": "def area(w, h):\n    return w * h\n",
    "tests/test_geo.py": (
        "import pytest\n\nfrom geo import area\n\n\n"
        "def test_projected_area():\n"
        "    pytest.importorskip('repogym_absent_projection')\n"
        "    assert area(2, 3) == 6\n\n\n"
        "def test_unrelated():\n"
        "    pytest.importorskip('repogym_absent_unrelated')\n\n\n"
        "def test_plot():\n"
        "    pytest.skip('graphviz \"dot\" is not available')\n\n\n"
        "def test_area():\n"
        "    assert area(2, 3) == 6\n"
    ),
    "tests/test_module_skip.py": (
        "import pytest\n\npytest.importorskip('repogym_absent_whole_file')\n\n\ndef test_x():\n    pass\n"
    ),
    "tests/test_tool.py": (
        "import subprocess\n\n\ndef test_tool():\n"
        "    assert subprocess.run('repogym-absent-tool --version', shell=True).returncode == 0\n"
    ),
}


@pytest.fixture(scope="module")
def skips_task(tmp_path_factory):
    root = tmp_path_factory.mktemp("needs")
    return git_task(root, SKIPS, RUNS["pytest-now"], "t__needs", "tests/test_geo.py::test_area")


@pytest.mark.slow
def test_a_required_test_skipped_for_want_of_a_module_names_the_module(skips_task) -> None:
    from repogym.grading.grade import grade

    task = skips_task.replace(FAIL_TO_PASS=["tests/test_geo.py::test_projected_area"])
    result = grade(task, "")
    assert result.outcome is Outcome.UNRESOLVED, (result.outcome, result.detail)  # a cause, never a verdict
    # Per test, from the structured report: not the skips of the other tests in the same file.
    assert result.lacks == ("module repogym_absent_projection",)
    assert "the environment lacks module repogym_absent_projection" in result.detail
    assert result.to_dict()["lacks"] == ["module repogym_absent_projection"]


@pytest.mark.slow
def test_a_required_test_in_a_file_skipped_whole_names_what_the_file_wanted(skips_task) -> None:
    from repogym.grading.grade import grade

    result = grade(skips_task.replace(FAIL_TO_PASS=["tests/test_module_skip.py::test_x"]), "")
    assert result.outcome is not Outcome.RESOLVED
    assert result.lacks == ("module repogym_absent_whole_file",), (result.outcome, result.detail)


@pytest.mark.slow
def test_a_required_test_that_wants_a_program_names_it_and_its_debian_package(skips_task) -> None:
    from repogym.grading.grade import grade

    skipped = grade(skips_task.replace(FAIL_TO_PASS=["tests/test_geo.py::test_plot"]), "")
    assert skipped.lacks == ("program dot (Debian package graphviz)",), skipped.detail
    failed = grade(skips_task.replace(FAIL_TO_PASS=["tests/test_tool.py::test_tool"]), "")
    assert failed.outcome is Outcome.UNRESOLVED
    assert failed.lacks == ("program repogym-absent-tool",), failed.detail  # the shell's words, any program


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="needs dpkg to tell what is installed")
def test_a_debian_package_the_task_names_and_the_machine_lacks_is_named_on_a_failing_run(skips_task) -> None:
    from repogym.grading.grade import grade

    spec = EnvSpec(**{**vars(skips_task.env), "system_packages": ("git", "repogym-absent-debian-pkg")})
    failing = skips_task.replace(env=spec, FAIL_TO_PASS=["tests/test_tool.py::test_tool"])
    assert grade(failing, "").lacks == (
        "program repogym-absent-tool",
        "Debian package repogym-absent-debian-pkg not installed",
    )
    assert grade(skips_task.replace(env=spec), "").lacks == ()  # a run that passes names nothing


@pytest.mark.slow
def test_a_candidate_that_deletes_a_repository_module_is_not_excused_as_a_missing_package(skips_task) -> None:
    """A candidate that removes the repository's own module fails the tests with "No module named 'geo'"; that
    is the candidate's doing, so the grade must not name it as something the environment lacks."""
    from repogym.grading.grade import grade

    patch = (
        "diff --git a/geo.py b/geo.py\ndeleted file mode 100644\n"
        "--- a/geo.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-def area(w, h):\n-    return w * h\n"
    )
    result = grade(skips_task, patch)
    assert result.outcome is not Outcome.RESOLVED
    assert "No module named 'geo'" in Path(result.report.log_path).read_text(encoding="utf-8")
    assert not any("geo" in lack for lack in result.lacks), result.lacks


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_candidate_that_prints_a_log_made_to_be_slow_to_read_is_still_graded(skips_task) -> None:
    """The causes are read from a log the candidate writes. A regex that reads on over every blank line at
    every line (`^\\s*`), or starts a match at each character of "a-a-a-...", is quadratic: 40 KB of newlines
    took 18 s, and one print of a few megabytes would hold the grader (and, under the GIL, its other threads)
    for hours. The same print now costs its grade a fraction of a second."""
    from repogym.grading.grade import grade

    patch = (
        "diff --git a/geo.py b/geo.py\n--- a/geo.py\n+++ b/geo.py\n@@ -1,2 +1,3 @@\n def area(w, h):\n"
        "-    return w * h\n"
        "+    print('\\n' * 2_000_000 + 'a-' * 200_000 + ' found\\nE' + ' ' * 200_000 + 'x')\n"
        "+    return w + h\n"
    )
    result = grade(skips_task, patch)
    assert result.outcome is Outcome.UNRESOLVED, (result.outcome, result.detail)
    assert Path(result.report.log_path).stat().st_size > 2_000_000  # the print reached the log read


@pytest.mark.timeout(60)
def test_a_log_made_to_be_slow_to_read_is_read_in_linear_time() -> None:
    hostile = "\n" * 1_000_000 + "a-" * 100_000 + " found\n" + "E   " + " " * 100_000 + "x\n"
    assert environment_lacks(hostile, ["a" * 100_000 + " not available"], lambda name: False) == ()


def test_a_log_that_names_many_missing_modules_names_a_few_and_counts_the_rest() -> None:
    log = "".join(f"E   ModuleNotFoundError: No module named 'absent{n}'\n" for n in range(20))
    lacks = environment_lacks(log, [], lambda name: False)
    assert lacks == (*(f"module absent{n}" for n in range(MAX_NAMED)), f"and {20 - MAX_NAMED} more")


def test_a_broken_import_inside_an_installed_package_is_not_called_absent() -> None:
    log = "E   ModuleNotFoundError: No module named 'numpy.core._multiarray_umath'\n"
    assert environment_lacks(log, [], lambda name: name == "numpy") == ()
    assert environment_lacks(log, [], lambda name: False) == ("module numpy.core._multiarray_umath",)


def test_a_python_name_ending_in_config_is_not_taken_for_a_missing_program() -> None:
    assert environment_lacks("AssertionError: app_config not found", [], lambda name: False) == ()
    # a wide character before the words does not shift the line they are read from
    assert environment_lacks("İ" * 40 + "\n/bin/sh: 1: dot: not found\n", [], lambda name: False) == (
        "program dot (Debian package graphviz)",
    )


def test_the_check_table_names_what_a_control_lacked() -> None:
    grade = ControlGrade("x-1", "o/x", "gold", Outcome.UNRESOLVED, lacks=("module cdms2",))
    assert grade.cause == "gold UNRESOLVED, lacks module cdms2"
    assert ControlGrade.from_dict(grade.to_dict()) == grade
    assert ControlGrade("x-1", "o/x", "gold", Outcome.UNRESOLVED).cause == "gold UNRESOLVED"
