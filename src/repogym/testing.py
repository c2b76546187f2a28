"""A one-bug repository and its task, for smoke tests, docs and the sandbox's own tests.

`make_toy_task(root)` builds a real git repo (a tiny `calc` package with a
pytest suite), whose `add` is wrong; the task's gold patch fixes it and its
test patch adds the regression test. For richer histories see
`repogym.samples`.
"""

from __future__ import annotations

import os
from pathlib import Path

from repogym.hostgit import git
from repogym.task import Source, Task

_PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "calc"
version = "0.1.0"
requires-python = ">=3.8"

[project.optional-dependencies]
test = ["pytest"]

[tool.pytest.ini_options]
testpaths = ["tests"]
"""
_BUGGY = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
_FIXED = _BUGGY.replace("a - b", "a + b")
_TESTS = "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n\n\ndef test_mul_zero():\n    assert mul(0, 7) == 0\n"
_TESTS_AFTER = _TESTS.replace("from calc import mul", "from calc import add, mul") + (
    "\n\ndef test_add():\n    assert add(2, 3) == 5\n"
)

FAIL_TO_PASS = ["tests/test_calc.py::test_add"]
PASS_TO_PASS = ["tests/test_calc.py::test_mul", "tests/test_calc.py::test_mul_zero"]


#: The toy commit's identity and date, and no user configuration: the same repository, the same shas, every time.
_TOY_GIT = {
    "GIT_AUTHOR_NAME": "Toy",
    "GIT_AUTHOR_EMAIL": "toy@example.invalid",
    "GIT_COMMITTER_NAME": "Toy",
    "GIT_COMMITTER_EMAIL": "toy@example.invalid",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def _git(repo: Path, *args: str) -> str:
    return git(repo, *args, env=_TOY_GIT)


def _diff(repo: Path, path: str, new_text: str) -> str:
    target = repo / path
    old_text = target.read_text()
    target.write_text(new_text)
    patch = _git(repo, "diff", "--", path)
    target.write_text(old_text)
    return patch


def make_toy_task(root: str | os.PathLike[str], instance_id: str = "toy__calc-1") -> Task:
    """Create the toy repo under `root/calc` and return its task (repo_source set)."""
    repo = Path(root) / "calc"
    (repo / "src" / "calc").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "pyproject.toml").write_text(_PYPROJECT)
    (repo / "src" / "calc" / "__init__.py").write_text(_BUGGY)
    (repo / "tests" / "test_calc.py").write_text(_TESTS)
    (repo / "README.md").write_text("# calc\n\nA tiny calculator.\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "calc: add and mul")
    base = _git(repo, "rev-parse", "HEAD").strip()
    return Task(
        instance_id=instance_id,
        repo="toy/calc",
        base_commit=base,
        patch=_diff(repo, "src/calc/__init__.py", _FIXED),
        test_patch=_diff(repo, "tests/test_calc.py", _TESTS_AFTER),
        problem_statement="add(2, 3) returns -1 instead of 5.",
        FAIL_TO_PASS=list(FAIL_TO_PASS),
        PASS_TO_PASS=list(PASS_TO_PASS),
        source=Source.SYNTHETIC,
        repo_source=str(repo),
        license="MIT",
    )


def toy_patch(task: Task, path: str, new_text: str) -> str:
    """A patch that sets `path` (in the toy repo at its base commit) to `new_text`."""
    return _diff(Path(task.repo_source), path, new_text)


BUGGY_SOURCE = _BUGGY
FIXED_SOURCE = _FIXED
TESTS_AFTER = _TESTS_AFTER
