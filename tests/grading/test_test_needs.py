"""What a run lacked from its environment, named on the grade (grading/test_needs.py, issue 28): a required test
skipped for want of a module no install provided or of a program the machine lacks, as Verified's xarray
(cdms2, conda-forge only) and sphinx (graphviz's `dot`) instances skip. Real repositories, the real sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from repogym.grading.controls import ControlGrade
from repogym.grading.report import Outcome
from repogym.grading.test_needs import environment_lacks

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
        "def test_area():\n"
        "    assert area(2, 3) == 6\n"
    ),
    "tests/test_plot.py": "import pytest\n\n\ndef test_plot():\n    pytest.skip('graphviz \"dot\" is not available')\n",
    "tests/test_other.py": (
        "import pytest\n\n\ndef test_unrelated():\n    pytest.importorskip('repogym_absent_unrelated')\n"
    ),
    "tests/test_tool.py": (
        "import subprocess\n\n\ndef test_tool():\n"
        "    assert subprocess.run('repogym-absent-tool --version', shell=True).returncode == 0\n"
    ),
}


@pytest.fixture(scope="module")
def skips_task(tmp_path_factory):
    return git_task(
        tmp_path_factory.mktemp("needs"),
        SKIPS,
        RUNS["pytest-now"],
        "t__needs",
        "tests/test_geo.py::test_area",
    )


@pytest.mark.slow
def test_a_required_test_skipped_for_want_of_a_module_names_the_module(skips_task) -> None:
    from repogym.grading.grade import grade

    task = skips_task.replace(FAIL_TO_PASS=["tests/test_geo.py::test_projected_area"])
    result = grade(task, "")
    assert result.outcome is Outcome.UNRESOLVED, (result.outcome, result.detail)  # a cause, never a verdict
    assert result.lacks == ("module repogym_absent_projection",)  # not the other file's unrelated skip
    assert "the environment lacks module repogym_absent_projection" in result.detail
    assert result.to_dict()["lacks"] == ["module repogym_absent_projection"]


@pytest.mark.slow
def test_a_required_test_that_wants_a_program_names_it_and_its_debian_package(skips_task) -> None:
    from repogym.grading.grade import grade

    skipped = grade(skips_task.replace(FAIL_TO_PASS=["tests/test_plot.py::test_plot"]), "")
    assert skipped.lacks == ("program dot (Debian package graphviz)",), skipped.detail
    failed = grade(skips_task.replace(FAIL_TO_PASS=["tests/test_tool.py::test_tool"]), "")
    assert failed.outcome is Outcome.UNRESOLVED
    assert failed.lacks == ("program repogym-absent-tool",), failed.detail  # the shell's words, any program


@pytest.mark.slow
def test_a_run_that_passes_names_nothing_though_other_tests_skip(skips_task) -> None:
    from repogym.grading.grade import grade

    result = grade(skips_task, "")
    assert result.outcome is Outcome.RESOLVED, (result.outcome, result.detail)
    assert result.lacks == ()


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


def test_coloured_summary_lines_are_read_and_other_files_skips_are_not(tmp_path) -> None:
    """tox prints pytest's summary in colour (sphinx's runs): the escapes do not hide the reason."""
    log = (
        '\x1b[33mSKIPPED\x1b[0m [1] tests/test_ext_inheritance_diagram.py:18: graphviz "dot" is not available\n'
        "\x1b[33mSKIPPED\x1b[0m [1] tests/test_build.py:3: could not import 'docutils_extra': No module named 'x'\n"
    )
    assert environment_lacks(log, ["tests/test_ext_inheritance_diagram.py::test_svg"], tmp_path) == (
        "program dot (Debian package graphviz)",
    )
    assert environment_lacks(log, [], tmp_path) == ()


def test_the_check_table_names_what_a_control_lacked() -> None:
    grade = ControlGrade("x-1", "o/x", "gold", Outcome.UNRESOLVED, lacks=("module cdms2",))
    assert grade.cause == "gold UNRESOLVED, lacks module cdms2"
    assert ControlGrade.from_dict(grade.to_dict()) == grade
    assert ControlGrade("x-1", "o/x", "gold", Outcome.UNRESOLVED).cause == "gold UNRESOLVED"
