"""Environment builds: detected from the repo, built once per key (even when asked concurrently), failures named."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from repogym.errors import EnvBuildError
from repogym.grading.grade import grade
from repogym.grading.report import Outcome
from repogym.sandbox.envbuild import EnvBuilder, env_key, find_interpreters, install_script, pick_interpreter
from repogym.sandbox.runtime import TaskRuntime
from repogym.task import EnvSpec


def test_install_script_detects_test_extras_and_requirements(tmp_path: Path, toy_task):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\nversion = "1"\n[project.optional-dependencies]\n'
        'test = ["pytest"]\ndev = ["ruff"]\ndocs = ["sphinx"]\n'
    )
    (tmp_path / "requirements-dev.txt").write_text("attrs\n")
    script = install_script(toy_task, tmp_path, pick_interpreter(""))
    assert "-r requirements-dev.txt" in script
    assert "-e '.[test,dev]'" in script  # docs is not a test extra
    assert "venv" in script.splitlines()[1]


def test_task_install_commands_replace_detection(tmp_path: Path, toy_task):
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    task = toy_task.replace(env=EnvSpec(install=("pip install -e .",), packages=("pytest<9",)))
    script = install_script(task, tmp_path, pick_interpreter(""))
    assert "pip install -e ." in script and "'pytest<9'" in script
    assert "uv pip install --python /opt/repogym/venv/bin/python -e" not in script


def test_env_key_ignores_a_version_bump_but_not_a_new_dependency(tmp_path: Path, toy_task):
    interpreter = pick_interpreter("")
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\nversion = "1.0"\ndependencies = []\n')
    first = env_key(toy_task, tmp_path, interpreter)
    pyproject.write_text('[project]\nname = "x"\nversion = "1.1"\ndependencies = []\n')
    assert env_key(toy_task, tmp_path, interpreter) == first
    pyproject.write_text('[project]\nname = "x"\nversion = "1.1"\ndependencies = ["attrs"]\n')
    assert env_key(toy_task, tmp_path, interpreter) != first


def test_missing_python_names_what_is_installed():
    with pytest.raises(EnvBuildError, match=r"Python 3\.4 is not installed on this machine \(found: .*3\.11"):
        pick_interpreter("3.4")
    assert any(i.version.startswith("3.11") for i in find_interpreters())


def test_concurrent_builds_of_one_key_build_once(toy_task, toy_runtime):
    # Another key than the toy's own env (an extra package), asked for by two threads at once.
    task = toy_task.replace(instance_id="toy__calc-concurrent", env=EnvSpec(packages=("iniconfig",)))
    builder = EnvBuilder(toy_runtime.sandbox)
    handles, errors = [], []

    def build() -> None:
        try:
            handles.append(builder.ensure(task, toy_runtime.pristine))
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=build) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert handles[0].venv == handles[1].venv != toy_runtime.env.venv
    assert sorted(h.build_s > 0 for h in handles) == [False, True]  # one built, the other waited and reused
    assert "iniconfig" in handles[0].log_path.read_text()


def test_failed_build_is_an_outcome_with_the_log_tail(toy_task):
    task = toy_task.replace(
        instance_id="toy__calc-badenv", env=EnvSpec(install=("echo build-went-wrong-marker >&2; exit 3",))
    )
    result = grade(task, task.patch)
    assert result.outcome is Outcome.ENV_BUILD_FAILED
    assert "build-went-wrong-marker" in result.detail and "exit code 3" in result.detail
    with pytest.raises(EnvBuildError, match="build-went-wrong-marker"):
        TaskRuntime.create(task).prepare()


@pytest.mark.slow
def test_a_spec_pinning_a_setuptools_older_than_isolated_builds_builds_what_needs_it(toy_task):
    """astropy 0.1-1.3's SWE-bench rule pins setuptools==38.2.4 and MarkupSafe==1.0, whose setup.py imports
    setuptools' `Feature` (removed in 46). The era's pip built it with the environment's setuptools; uv builds
    every sdist in isolation with the newest, and every such environment failed to build. Its sdists are now
    built with the oldest setuptools an isolated build can run."""
    task = toy_task.replace(
        instance_id="toy__calc-oldsetuptools",
        env=EnvSpec(python="3.6", packages=("setuptools==38.2.4", "MarkupSafe==1.0"), install=("true",),
                    exclude_newer="2024-06-27"),
    )  # fmt: skip
    runtime = TaskRuntime.create(task).prepare()
    with runtime.episode() as episode:
        found = episode.run(
            "python -c 'import markupsafe, setuptools; print(markupsafe.__version__, setuptools.__version__)'"
        )
    assert found.output.split() == ["1.0", "38.2.4"], found.output
