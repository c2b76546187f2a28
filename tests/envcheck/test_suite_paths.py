"""The suite env check runs is the project's own: the paths its CI workflow or tox.ini hands pytest.

Read from real files in a folder laid out as a project would lay them out; each case is a shape of test command
seen in real projects (jmespath's `cd tests/ && py.test --cov jmespath`), or one that must not be taken for one.
"""

from __future__ import annotations

from pathlib import Path

from repogym.validate.suitepaths import SuitePaths, suite_paths


def project(root: Path, files: dict[str, str]) -> Path:
    for name, text in {"tests/test_a.py": "", "extra/test_b.py": "", "pkg/__init__.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def workflow(run: str, working_directory: str = "") -> str:
    cwd = f"      working-directory: {working_directory}\n" if working_directory else ""
    body = "\n".join(f"        {line}" for line in run.splitlines())
    head = "name: ci\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n    - uses: actions/checkout@v4\n"
    return f"{head}    - run: |\n{body}\n{cwd}"


def test_a_cd_into_the_tests_folder_names_that_folder_and_an_option_value_is_not_a_path(tmp_path):
    root = project(tmp_path, {".github/workflows/run-tests.yml": workflow(
        "pip install -r requirements.txt\ncd tests/ && py.test --cov pkg --cov-report term-missing"
    )})  # fmt: skip
    assert suite_paths(root) == SuitePaths(("tests",), ".github/workflows/run-tests.yml")


def test_positional_paths_of_python_m_pytest_are_taken_relative_to_the_steps_working_directory(tmp_path):
    root = project(tmp_path, {"sub/tests/test_c.py": "", ".github/workflows/ci.yaml": workflow(
        "python -m pytest -x -k 'not slow' tests/test_c.py::test_one tests", working_directory="sub"
    )})  # fmt: skip
    assert suite_paths(root) == SuitePaths(("sub/tests/test_c.py", "sub/tests"), ".github/workflows/ci.yaml")


def test_tox_commands_are_read_when_no_workflow_names_paths(tmp_path):
    root = project(tmp_path, {
        ".github/workflows/lint.yml": workflow("ruff check ."),
        "tox.ini": "[tox]\nenvlist = py311\n\n[testenv]\ndeps = pytest\ncommands =\n    pytest {posargs} tests\n",
    })  # fmt: skip
    assert suite_paths(root) == SuitePaths(("tests",), "tox.ini")


def test_pytests_own_testpaths_are_left_to_pytest(tmp_path):
    root = project(tmp_path, {
        "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
        ".github/workflows/ci.yml": workflow("cd extra && pytest"),
    })  # fmt: skip
    assert suite_paths(root) is None


def test_a_testpaths_outside_pytests_section_is_not_pytests(tmp_path):
    """Another tool's `testpaths` (here a tox section, and a pyproject table of a test runner that is not pytest)
    chooses nothing pytest collects: the CI command still names the suite."""
    root = project(tmp_path, {
        "tox.ini": "[testenv]\ncommands = pytest tests\n\n[flake8]\ntestpaths = extra\n",
        "pyproject.toml": '[tool.ward]\ntestpaths = ["extra"]\n',
    })  # fmt: skip
    assert suite_paths(root) == SuitePaths(("tests",), "tox.ini")
    (root / "setup.cfg").write_text("[tool:pytest]\ntestpaths =\n    tests\n")
    assert suite_paths(root) is None  # pytest's own section chooses


def test_nothing_is_taken_from_a_command_naming_a_missing_path_a_path_outside_the_checkout_or_no_path(
    tmp_path,
):
    outside = tmp_path / "elsewhere"
    (outside / "tests").mkdir(parents=True)
    for run in (
        "pytest tests/missing",
        "pytest ../elsewhere/tests",
        "pytest -q",
        "cd .. && pytest",
        "pytest .",
    ):
        root = project(tmp_path / "p", {".github/workflows/ci.yml": workflow(run)})
        assert suite_paths(root) is None, run


def test_a_workflow_that_is_not_yaml_or_not_a_mapping_is_skipped_not_an_error(tmp_path):
    root = project(tmp_path, {
        ".github/workflows/a.yml": "jobs: [unclosed",
        ".github/workflows/b.yml": "- just\n- a list\n",
        ".github/workflows/c.yml": workflow("pytest tests"),
    })  # fmt: skip
    assert suite_paths(root) == SuitePaths(("tests",), ".github/workflows/c.yml")


def test_a_nose_command_names_its_suite_too_since_pytest_collects_nose_style_tests(tmp_path):
    """jmespath before 2023: `cd tests/ && nosetests --with-coverage --cover-package jmespath .`."""
    root = project(tmp_path, {".github/workflows/run-tests.yml": workflow(
        "cd tests/ && nosetests --with-coverage --cover-package pkg ."
    )})  # fmt: skip
    assert suite_paths(root) == SuitePaths(("tests",), ".github/workflows/run-tests.yml")
