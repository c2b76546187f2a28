"""The rules that build an environment as its spec describes (SWE-bench's conda environments), each shown on a
small repository shaped like the one that needed it (sandbox/envbuild.py's module docstring lists them).

The repository is pylint 2.15's shape: a pyproject.toml whose build system pins a setuptools older than
editable installs by PEP 660 (setuptools~=62.6), a setup.cfg, the code in a flat layout; SWE-bench installs
it with `python -m pip install -e .`, which the pip of 2024 does with `setup.py develop`, /testbed put on
sys.path; today's pip cannot install it editable at all.
"""

from __future__ import annotations

import pytest

from repogym.errors import EnvBuildError
from repogym.sandbox.runtime import TaskRuntime
from repogym.task import EnvSpec

_LEGACY_FILES = {
    "pyproject.toml": (
        '[build-system]\nrequires = ["setuptools~=62.6", "wheel", "iniconfig==1.1.1"]\n'
        'build-backend = "setuptools.build_meta"\n'
    ),
    "setup.cfg": "[metadata]\nname = legacy\nversion = 1.0\n\n[options]\npackages = find:\n",
    "legacy/__init__.py": "def answer():\n    return 41\n",
    "tests/test_answer.py": "import legacy\n\n\ndef test_answer():\n    assert legacy.answer() == 41\n",
}
#: SWE-bench's images were built with the packages of mid-2024: pip 24.1.1 (2024-06-26) was the newest
#: then, tomli 2.0.1 (2022-02) too; both have later releases (tomli 2.0.2 came in 2024-10).
_ERA = "2024-06-27"
_ERA_SPEC = EnvSpec(
    python="3.11",
    packages=("pip", "setuptools", "wheel", "iniconfig==2.0.0"),
    install=("python -m pip install -e .", "python -m pip install tomli"),
    exclude_newer=_ERA,
)


@pytest.fixture(scope="module")
def legacy_task(git_repo):
    repo = git_repo("legacy")
    commit = repo.commit(_LEGACY_FILES, "legacy")
    return repo.task("local__legacy-1", commit, FAIL_TO_PASS=["tests/test_answer.py::test_answer"])


@pytest.fixture(scope="module")
def era_runtime(legacy_task):
    return TaskRuntime.create(legacy_task.replace(env=_ERA_SPEC)).prepare()


def _run(runtime: TaskRuntime, command: str) -> str:
    with runtime.episode() as episode:
        result = episode.run(command)
    assert result.ok, result.output
    return result.output


@pytest.mark.slow
def test_era_pip_installs_a_project_whose_backend_predates_pep660_editable(era_runtime):
    """The task names pip: it is the pip of exclude_newer's day, which falls back to `setup.py develop`
    (the checkout on sys.path, wherever python starts)."""
    assert _run(era_runtime, "python -m pip --version").startswith("pip 24.1.1 ")
    assert "True" in _run(era_runtime, "cd / && python -c 'import sys; print(\"/testbed\" in sys.path)'")
    assert "Running setup.py develop for legacy" in era_runtime.env.log_path.read_text()


@pytest.mark.slow
def test_today_pip_cannot_install_that_project_editable(legacy_task):
    """The contrast: a task that names no pip gets the newest, which has no `setup.py develop` to fall back
    on, and the build fails."""
    spec = EnvSpec(**{**_ERA_SPEC.to_dict(), "packages": ["setuptools", "wheel", "iniconfig==2.0.0"]})
    with pytest.raises(EnvBuildError, match="build_editable"):
        TaskRuntime.create(legacy_task.replace(env=spec)).prepare()


@pytest.mark.slow
def test_era_pip_resolves_as_of_exclude_newer(era_runtime):
    """pip before 26 cannot filter by date; the build's dated view of the index hides what came after it."""
    shown = _run(era_runtime, "python -c 'import importlib.metadata as m; print(m.version(\"tomli\"))'")
    assert shown.strip().splitlines()[-1] == "2.0.1"
    assert "Looking in indexes: http://127.0.0.1:" in era_runtime.env.log_path.read_text()


@pytest.mark.slow
def test_build_requirements_step_changes_no_version_the_spec_set(era_runtime):
    """repogym installs the build system's requirements for an offline re-install; the build system pins
    iniconfig 1.1.1 where the spec pins 2.0.0: the spec's pin stays, and the log says what was left out."""
    shown = _run(
        era_runtime, "python -c 'import iniconfig, importlib.metadata as m; print(m.version(\"iniconfig\"))'"
    )
    assert shown.strip().splitlines()[-1] == "2.0.0"
    log = era_runtime.env.log_path.read_text()
    assert "build requirement not installed" in log and "iniconfig==1.1.1" in log


@pytest.mark.slow
def test_a_link_to_sys_executable_still_sees_the_environment(era_runtime):
    """tox-current-env links `.tox/<env>/bin/python` to sys.executable; started by that link, the interpreter
    imports the environment's packages (a venv's python found the base interpreter's alone)."""
    command = (
        "mkdir -p /tmp/elsewhere/bin && ln -s \"$(python -c 'import sys; print(sys.executable)')\" "
        "/tmp/elsewhere/bin/python && /tmp/elsewhere/bin/python -c 'import iniconfig, legacy; print(legacy.answer())'"
    )
    assert _run(era_runtime, command).strip().splitlines()[-1] == "41"
    # Started as itself, it is still the venv it was (pip and uv see a virtual environment).
    shown = _run(era_runtime, "python -c 'import sys; print(sys.prefix != sys.base_prefix, sys.prefix)'")
    assert shown.strip().splitlines()[-1] == "True /opt/repogym/venv"
