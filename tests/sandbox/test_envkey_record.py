"""The env key's record of a checkout's dependency files (sandbox/envkey.py): the same key as reading the
files, and never a stale one when the checkout or a file it read is not the one the record was made from."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from repogym.sandbox.envkey import _pyproject_deps, _setup_cfg_deps, env_key
from repogym.sandbox.interpreters import pick_interpreter

_FILES = {
    "pyproject.toml": '[project]\nname = "x"\nversion = "1.0"\ndependencies = ["attrs"]\n',
    "setup.cfg": "[options]\ninstall_requires = six\n",
    "setup.py": "from setuptools import setup\nsetup()\n",
    "requirements/tests.txt": "pytest==7.0\n",
}


def _reference_key(task, pristine: Path, interpreter) -> str:
    """The key as repogym computed it before the record existed: environments already built keep their names."""
    from repogym.sandbox.envkey import environment_packages, exclude_newer_timestamp

    digest = hashlib.sha256()
    spec = {
        "repo": task.repo,
        "python": [interpreter.version, str(interpreter.executable)],
        "packages": environment_packages(task),
        "install": list(task.env.install),
        "exclude_newer": exclude_newer_timestamp(task.env.exclude_newer),
        "v": 4,
    }
    digest.update(json.dumps(spec, sort_keys=True).encode())
    for pattern in (
        "pyproject.toml",
        "setup.py",
        "setup.cfg",
        "requirements*.txt",
        "requirements/*.txt",
        "tox.ini",
    ):
        for path in sorted(pristine.glob(pattern)):
            if path.name == "pyproject.toml":
                content = _pyproject_deps(path)
            elif path.name == "setup.cfg":
                content = _setup_cfg_deps(path)
            else:
                content = path.read_bytes()
            digest.update(path.name.encode() + b"\0" + content + b"\0")
    return digest.hexdigest()[:20]


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A folder laid out as a pristine checkout is (its `.complete` marker beside it)."""
    pristine = tmp_path / "0123abcd"
    for name, text in _FILES.items():
        (pristine / name).parent.mkdir(parents=True, exist_ok=True)
        (pristine / name).write_text(text)
    pristine.with_name("0123abcd.complete").touch()
    return pristine


def test_env_key_from_the_record_is_the_key_from_the_files(toy_task, checkout):
    interpreter = pick_interpreter("")
    first = env_key(toy_task, checkout, interpreter)
    record = checkout.with_name("0123abcd.envdeps")
    assert record.exists()
    assert (
        env_key(toy_task, checkout, interpreter) == first == _reference_key(toy_task, checkout, interpreter)
    )


def test_env_key_record_is_not_used_after_a_dependency_file_changed(toy_task, checkout):
    interpreter = pick_interpreter("")
    first = env_key(toy_task, checkout, interpreter)
    (checkout / "requirements" / "tests.txt").write_text("pytest==8.0\n")
    changed = env_key(toy_task, checkout, interpreter)
    assert changed != first and changed == _reference_key(toy_task, checkout, interpreter)


def test_env_key_record_of_an_earlier_checkout_is_not_used(toy_task, checkout):
    """A checkout made again (a new `.complete` marker) never reads the record of the one before it."""
    interpreter = pick_interpreter("")
    env_key(toy_task, checkout, interpreter)
    record = checkout.with_name("0123abcd.envdeps")
    forged = json.loads(record.read_text())
    forged["content"] = "AAAA"  # what a stale record would say
    record.write_text(json.dumps(forged))
    marker = checkout.with_name("0123abcd.complete")
    marker.unlink()
    marker.touch()
    os.utime(marker, ns=(1, 1))
    assert env_key(toy_task, checkout, interpreter) == _reference_key(toy_task, checkout, interpreter)


def test_env_key_record_that_is_garbage_is_recomputed(toy_task, checkout):
    interpreter = pick_interpreter("")
    checkout.with_name("0123abcd.envdeps").write_text("{not json")
    assert env_key(toy_task, checkout, interpreter) == _reference_key(toy_task, checkout, interpreter)


def test_env_key_of_a_folder_that_is_no_checkout_keeps_no_record(toy_task, tmp_path):
    (tmp_path / "setup.py").write_text("setup()\n")
    env_key(toy_task, tmp_path, pick_interpreter(""))
    assert not tmp_path.with_name(f"{tmp_path.name}.envdeps").exists()
