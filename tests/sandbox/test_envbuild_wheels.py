"""Environment builds from a folder of wheels alone (`$REPOGYM_WHEELS`), as on a machine with no network.

The folder holds a package that is on no index (`repogym-offline-probe`, built here): an environment that
imports it can only have been built from the folder.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from repogym.errors import EnvBuildError
from repogym.sandbox.envbuild import build_environment
from repogym.sandbox.runtime import TaskRuntime
from repogym.task import EnvSpec

_PROBE = "repogym_offline_probe"


def _probe_wheel(folder: Path, origin: str = "the wheel folder") -> None:
    """A one-module wheel of a distribution that no package index has; its module says `origin`."""
    dist_info = f"{_PROBE}-1.0.dist-info"
    with zipfile.ZipFile(folder / f"{_PROBE}-1.0-py3-none-any.whl", "w") as wheel:
        wheel.writestr(f"{_PROBE}.py", f"FROM = {origin!r}\n")
        wheel.writestr(
            f"{dist_info}/METADATA", "Metadata-Version: 2.1\nName: repogym-offline-probe\nVersion: 1.0\n"
        )
        wheel.writestr(
            f"{dist_info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        wheel.writestr(f"{dist_info}/RECORD", "")


@pytest.fixture(scope="module")
def wheel_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the toy's environment installs (pip, the build backend, pytest and its needs) plus the probe.
    Filled from the index once; the build then reads the folder alone."""
    folder = tmp_path_factory.mktemp("wheels")
    needs = ["pip", "setuptools", "wheel", "pytest"]  # with their dependencies: the build sees nothing else
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "-d", str(folder), *needs],
        check=True,
    )  # fmt: skip
    _probe_wheel(folder)
    folder.chmod(0o755)  # the jail's unprivileged uid reads it (pytest makes its folders 0700)
    return folder


@pytest.mark.slow
def test_a_build_installs_what_only_the_wheel_folder_holds(toy_task, wheel_folder, monkeypatch):
    monkeypatch.setenv("REPOGYM_WHEELS", str(wheel_folder))
    task = toy_task.replace(instance_id="toy__calc-wheels", env=EnvSpec(packages=("repogym-offline-probe",)))
    runtime = TaskRuntime.create(task).prepare()
    with runtime.episode() as episode:
        found = episode.run(f"python -c 'import {_PROBE}; print({_PROBE}.FROM)' && python -m pytest -q tests")
    assert found.ok, found.output
    assert "the wheel folder" in found.output and "2 passed" in found.output


def test_a_wheel_folder_replaces_the_hosts_index(toy_task, wheel_folder, monkeypatch):
    """A host index (a corporate mirror) is not handed to the build: installers read the folder, offline."""
    monkeypatch.setenv("PIP_INDEX_URL", "https://mirror.example.invalid/simple")
    monkeypatch.setenv("REPOGYM_WHEELS", str(wheel_folder))
    env = build_environment(toy_task.replace(env=EnvSpec(exclude_newer="2024-06-27")))
    assert "PIP_INDEX_URL" not in env and "PIP_UPLOADED_PRIOR_TO" not in env
    assert env["UV_OFFLINE"] == env["PIP_NO_INDEX"] == "1"
    assert env["UV_FIND_LINKS"] == env["PIP_FIND_LINKS"] == "/opt/repogym/wheels"


def test_a_wheel_folder_that_is_not_there_is_named(toy_task, tmp_path, monkeypatch):
    monkeypatch.setenv("REPOGYM_WHEELS", str(tmp_path / "missing"))
    with pytest.raises(EnvBuildError, match=r"REPOGYM_WHEELS=.*missing: no such folder"):
        build_environment(toy_task)


@pytest.mark.slow
def test_a_wheel_rebuilt_in_place_gets_a_new_environment(toy_task, wheel_folder, tmp_path, monkeypatch):
    """The folder is keyed by what it holds, not by its path: a wheel rebuilt under its old name (same version,
    new code) must not be served from the environment built from the old one."""
    folder = tmp_path / "wheels"
    shutil.copytree(wheel_folder, folder)
    folder.chmod(0o755)
    monkeypatch.setenv("REPOGYM_WHEELS", str(folder))
    task = toy_task.replace(instance_id="toy__calc-rebuilt", env=EnvSpec(packages=("repogym-offline-probe",)))

    def probe() -> str:
        with TaskRuntime.create(task).prepare().episode() as episode:
            found = episode.run(f"python -c 'import {_PROBE}; print({_PROBE}.FROM)'")
        assert found.ok, found.output
        return found.output

    assert "the wheel folder" in probe()
    _probe_wheel(folder, "the rebuilt wheel")
    assert "the rebuilt wheel" in probe()
