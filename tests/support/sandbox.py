"""Runs in the real bwrap sandbox for the tests: small repositories run by repogym under the interpreters
and pytest versions SWE-bench's tasks use, a setup.py project, and jailed code that leaves a hard tree to
delete.

Guarantees: `run_all` builds the task's environment for real and fails (never skips) when it cannot: an
environment-build regression is a failure of the test that needed it.
"""

from __future__ import annotations

from pathlib import Path

from repogym.grading.report import TestReport
from repogym.grading.runner import run_tests
from repogym.sandbox.base import Limits
from repogym.sandbox.runtime import TaskRuntime
from repogym.task import EnvSpec, Task

#: Today's pytest on the host's Python, and SWE-bench's pytest 5.4-era pins on Python 3.9.
RUNS = {
    "pytest-now": EnvSpec(test_cmd="pytest -rA"),
    "pytest-5.4": EnvSpec(python="3.9", packages=("pytest==5.4.3", "py==1.11.0"), test_cmd="pytest -rA"),
}


def run_all(task: Task, log_dir: Path) -> tuple[TestReport, str]:
    """Every test of the task's repo run once in a fresh episode: (report, the printed log)."""
    runtime = TaskRuntime.create(task, "bwrap").prepare()
    with runtime.episode() as episode:
        report = run_tests(task, episode, [], log_dir=log_dir)
    return report, Path(report.log_path).read_text()


#: A setup.py project with a flat module: its editable install maps `hello` to /testbed/hello.py.
HELLO_FILES = {
    "setup.py": 'from setuptools import setup\n\nsetup(name="hello", version="1.0", py_modules=["hello"])\n',
    "hello.py": 'def greet():\n    return "hi"\n',
    "tests/test_hello.py": 'import hello\n\n\ndef test_greet():\n    assert hello.greet() == "hi"\n',
}


def plant_undeletable_tree(episode, files_per_folder: int) -> None:  # type: ignore[no-untyped-def]
    """Run jailed code in `episode` that leaves what its deletion must still remove: many files in /tmp,
    /testbed and the output folder, and folders it has made unreadable (chmod 000) in each."""
    result = episode.run(
        'python -c "import os\n'
        "for d in ('/tmp/many', '/testbed/many', '/opt/repogym/out/many'):\n"
        "    os.makedirs(d)\n"
        f"    for i in range({files_per_folder}): open(os.path.join(d, str(i)), 'w').close()\n\"; "
        "mkdir -p /tmp/locked/inner /testbed/locked/inner && "
        "touch /tmp/locked/inner/f /testbed/locked/inner/f && "
        "chmod 000 /tmp/locked/inner /tmp/locked /testbed/locked/inner /testbed/locked /opt/repogym/out && "
        "echo ok",
        limits=Limits(wall_s=60),
    )
    assert "ok" in result.output, result.output
