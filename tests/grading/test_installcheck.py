"""The check of the grader's re-install (grading/installcheck.py) on real venv layers: each test applies a
packaging patch to the toy task in a real bwrap episode, re-runs its install step there (uv, without network,
as the grader does) and reads the venv layer that step left. The controls are re-installs a real fix makes;
the attacks are named after what they try. End to end through the grader: tests/sandbox/test_hostile_reinstall.py.
"""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path

import pytest

from repogym.grading.installcheck import JAIL_PATH_DIRS, check_reinstall
from repogym.sandbox.base import VENV_DIR, Mounts
from repogym.sandbox.bwrap import BwrapSandbox, jail_environment
from repogym.sandbox.runtime import TaskRuntime
from repogym.task import EnvSpec, Source, Task
from repogym.testing import toy_patch

from ..support.git import init_repo, staged_diff
from ..support.patches import new_file

pytestmark = pytest.mark.slow

SITE = f"{VENV_DIR}/lib/python3.11/site-packages"
# A setup.py beside the toy's pyproject.toml: setuptools runs it in the build, so its code runs in the re-install.
SETUP_PY = "from setuptools import setup\n{code}\nsetup({arguments})\n"


def _pyproject(task, extra: str = "", version: str = "0.1.0", name: str = "calc") -> str:
    text = (Path(task.repo_source) / "pyproject.toml").read_text()
    text = text.replace('version = "0.1.0"', f'version = "{version}"').replace(
        'name = "calc"', f'name = "{name}"'
    )
    return toy_patch(task, "pyproject.toml", text + extra)


def _setup_py(code: str = "", arguments: str = "") -> str:
    return new_file("setup.py", SETUP_PY.format(code=code, arguments=arguments))


@contextlib.contextmanager
def _reinstalled(runtime, patch: str):
    """An episode with `patch` applied and the install step re-run over its own venv layer."""
    with runtime.episode(readonly_git=True) as episode:
        applied = episode.run(f"git apply {episode.put_file('candidate.patch', patch)}")
        assert applied.ok, applied.output
        result = episode.reinstall()
        assert result is not None and result.ok, (
            result.output if result else "the toy task has no install step"
        )
        yield episode


def _found(runtime, patch: str) -> str:
    with _reinstalled(runtime, patch) as episode:
        return check_reinstall(episode)


# -- controls: what a real fix's re-install writes -------------------------------------------------------------


def test_a_reinstall_that_only_rewrites_the_install_is_clean(toy_task, toy_runtime):
    """A packaging edit that changes nothing the install writes (a comment): the same dist-info, rewritten."""
    assert _found(toy_runtime, _pyproject(toy_task, "\n# a comment\n")) == ""


def test_a_version_bump_renames_the_metadata_and_the_pth_and_is_clean(toy_task, toy_runtime):
    """The dist-info and the editable .pth get the new version in their names; the .pth's text is the base's."""
    with _reinstalled(toy_runtime, _pyproject(toy_task, version="0.2.0")) as episode:
        assert check_reinstall(episode) == ""
        listing = episode.run(f"ls {SITE}").output
    assert "calc-0.2.0.dist-info" in listing and "__editable__.calc-0.2.0.pth" in listing, listing


def test_a_new_console_script_of_the_project_is_clean(toy_task, toy_runtime):
    patch = _pyproject(toy_task, '\n[project.scripts]\ncalc-cli = "calc:mul"\n')
    with _reinstalled(toy_runtime, patch) as episode:
        assert check_reinstall(episode) == ""
        assert episode.run(f"test -f {VENV_DIR}/bin/calc-cli").ok


def test_an_episode_without_a_reinstall_has_nothing_to_check(episode):
    assert check_reinstall(episode) == ""


# -- attacks: what the candidate's packaging code makes the grader's install write -----------------------------


def test_reinstall_pth_written_by_setup_py_is_refused(toy_task, toy_runtime):
    code = f"open('{SITE}/calc_speedups.pth', 'w').write('import os\\n')"
    assert _found(toy_runtime, _setup_py(code)) == (
        f"{SITE}/calc_speedups.pth (a .pth file the base install did not write (its lines run at interpreter start))"
    )


def test_reinstall_pytest11_entry_point_from_pyproject_is_refused(toy_task, toy_runtime):
    patch = _pyproject(toy_task, '\n[project.entry-points.pytest11]\ncalc = "calc"\n')
    assert _found(toy_runtime, patch) == (
        f"{SITE}/calc-0.1.0.dist-info/entry_points.txt (entry points the base install did not register: [pytest11])"
    )


def test_reinstall_pytest11_entry_point_from_setup_py_is_refused(toy_task, toy_runtime):
    found = _found(toy_runtime, _setup_py(arguments="entry_points={'pytest11': ['calc = calc']}"))
    assert "entry_points.txt (entry points the base install did not register: [pytest11])" in found


def test_reinstall_pytest11_hidden_beside_a_console_script_is_refused(toy_task, toy_runtime):
    """Scripts may change; a plugin group in the same file may not, whatever else changed with it."""
    extra = '\n[project.scripts]\ncalc-cli = "calc:mul"\n\n[project.entry-points.pytest11]\ncalc = "calc"\n'
    assert "[pytest11]" in _found(toy_runtime, _pyproject(toy_task, extra, version="0.3.0"))


def test_reinstall_changing_a_pytest_module_is_refused(toy_task, toy_runtime):
    code = f"open('{SITE}/_pytest/python.py', 'a').write('# changed\\n')"
    assert _found(toy_runtime, _setup_py(code)) == (
        f"{SITE}/_pytest/python.py (changes an installed package other than the project)"
    )


def test_reinstall_new_top_level_module_is_refused(toy_task, toy_runtime):
    code = f"open('{SITE}/pytest_calc.py', 'w').write('x = 1\\n')"
    assert _found(toy_runtime, _setup_py(code)) == (
        f"{SITE}/pytest_calc.py (a new top-level module or package in site-packages)"
    )


def test_reinstall_sitecustomize_package_in_site_packages_is_refused(toy_task, toy_runtime):
    code = f"import os; os.makedirs('{SITE}/sitecustomize'); open('{SITE}/sitecustomize/__init__.py', 'w')"
    assert _found(toy_runtime, _setup_py(code)) == (
        f"{SITE}/sitecustomize/__init__.py (a module run at interpreter start)"
    )


def test_reinstall_forged_pyc_is_refused(toy_task, toy_runtime):
    """A cached module Python would run in place of its source: pytest's own, other code under the header
    that makes it match the source (mtime and size)."""
    code = (
        "import importlib.util, marshal\n"
        f"cache = importlib.util.cache_from_source('{SITE}/_pytest/__init__.py')\n"
        "header = open(cache, 'rb').read()[:16]\n"
        "open(cache, 'wb').write(header + marshal.dumps(compile('import os', 'x', 'exec')))\n"
    )
    assert _found(toy_runtime, _setup_py(code)) == (
        f"{SITE}/_pytest/__pycache__/__init__.cpython-311.pyc (changes an installed package other than the project)"
    )


def test_reinstall_console_script_named_pytest_is_refused(toy_task, toy_runtime):
    patch = _pyproject(toy_task, '\n[project.scripts]\npytest = "calc:mul"\n')
    assert (
        _found(toy_runtime, patch)
        == f"{VENV_DIR}/bin/pytest (a console script in place of another package's bin/pytest)"
    )


def test_reinstall_console_script_shadowing_a_program_on_path_is_refused(toy_task, toy_runtime):
    patch = _pyproject(toy_task, '\n[project.scripts]\ngit = "calc:mul"\n')
    assert (
        _found(toy_runtime, patch)
        == f"{VENV_DIR}/bin/git (a console script that shadows /usr/bin/git on the jail's PATH)"
    )


def test_reinstall_under_another_distribution_name_is_refused(toy_task, toy_runtime):
    """Renamed, the project's metadata would be another distribution's, free of the base's entry points."""
    found = _found(toy_runtime, _pyproject(toy_task, name="pytest-calc"))
    assert f"{SITE}/pytest_calc-0.1.0.dist-info/METADATA (package metadata of a distribution" in found
    assert f"{SITE}/__editable__.pytest_calc-0.1.0.pth (a .pth file the base install did not write" in found


def test_reinstall_link_planted_in_site_packages_is_refused_and_not_followed(toy_task, toy_runtime):
    """A link where the project's metadata was, to a folder holding a plugin registration: refused as a link
    and not read through (the check runs on the host, where a link could point anywhere)."""
    code = (
        "import os, shutil\n"
        f"dist = '{SITE}/calc-0.1.0.dist-info'\n"
        "os.makedirs('/tmp/fake'); open('/tmp/fake/entry_points.txt', 'w').write('[pytest11]\\nx = calc\\n')\n"
        "shutil.rmtree(dist); os.symlink('/tmp/fake', dist)\n"
    )
    found = _found(toy_runtime, _setup_py(code))
    assert f"{SITE}/calc-0.1.0.dist-info (a link)" in found


def test_reinstall_change_of_pyvenv_cfg_is_refused(toy_task, toy_runtime):
    code = f"open('{VENV_DIR}/pyvenv.cfg', 'a').write('include-system-site-packages = true\\n')"
    assert _found(toy_runtime, _setup_py(code)).startswith(f"{VENV_DIR}/pyvenv.cfg (outside site-packages")


def test_reinstall_removing_another_package_file_is_refused(toy_task, toy_runtime):
    code = f"import os; os.remove('{SITE}/distutils-precedence.pth')"
    assert _found(toy_runtime, _setup_py(code)) == (
        f"{SITE}/distutils-precedence.pth (removes a file the project's install did not write)"
    )


def test_the_jail_path_the_check_knows_is_the_jails():
    """A console script may not shadow a program of the jail's PATH: the check must know that PATH."""
    path = jail_environment(Mounts(workspace=Path("/nonexistent"), tmp=Path("/nonexistent")))["PATH"]
    assert tuple(path.split(":")) == JAIL_PATH_DIRS


# -- without overlayfs: the venv is a full copy, compared file by file -----------------------------------------


@pytest.fixture(scope="module")
def copied_runtime(toy_task):
    with pytest.MonkeyPatch.context() as patcher:
        patcher.setenv("REPOGYM_NO_OVERLAY", "1")  # read once, when the sandbox is made
        sandbox = BwrapSandbox()
    assert not sandbox.supports_overlay
    return TaskRuntime.create(toy_task, sandbox).prepare()


def test_copied_venv_version_bump_is_clean_and_a_pth_is_refused(toy_task, copied_runtime):
    with _reinstalled(copied_runtime, _pyproject(toy_task, version="0.2.0")) as episode:
        assert episode.layer.venv_view()[1] is None  # a copy, not an overlay
        assert check_reinstall(episode) == ""
    code = f"open('{SITE}/calc_speedups.pth', 'w').write('import os\\n')"
    assert _found(copied_runtime, _setup_py(code)).startswith(f"{SITE}/calc_speedups.pth (a .pth file")


# -- an install without -e (SWE-bench's `python -m pip install .`): the project's files live in site-packages ----


@pytest.fixture(scope="module")
def installed_runtime(toy_task):
    task = dataclasses.replace(toy_task, env=EnvSpec(install=("python -m pip install .",)))
    return TaskRuntime.create(task).prepare()


def test_a_non_editable_reinstall_rewrites_the_package_and_is_clean(toy_task, installed_runtime):
    """The fix and a new console script, installed: site-packages/calc/ and its cached .pyc change with them."""
    pyproject = (Path(toy_task.repo_source) / "pyproject.toml").read_text()
    patch = toy_task.patch + toy_patch(
        toy_task, "pyproject.toml", pyproject + '\n[project.scripts]\nc = "calc:mul"\n'
    )
    with _reinstalled(installed_runtime, patch) as episode:
        assert check_reinstall(episode) == ""
        assert "a + b" in episode.run(f"cat {SITE}/calc/__init__.py").output


def test_a_non_editable_reinstall_cannot_add_a_module_beside_the_package(toy_task, installed_runtime):
    code = f"import os; open('{SITE}/calc_plugin.py', 'w').write('x = 1\\n')"
    assert _found(installed_runtime, _setup_py(code)) == (
        f"{SITE}/calc_plugin.py (a new top-level module or package in site-packages)"
    )


# -- what the re-install should not write: a cached finder module (pip's default) ------------------------------

_FLAT_SETUP = 'from setuptools import setup\n\nsetup(name="flat", version="{version}", py_modules=["flat"])\n'


def test_a_pip_editable_reinstall_of_a_flat_layout_is_clean(tmp_path):
    """SWE-bench installs with `python -m pip install -e .`; for a flat layout setuptools writes a finder module
    (imported by its .pth at start), which pip compiles unless told not to."""
    repo = tmp_path / "flat"
    files = {
        "setup.py": _FLAT_SETUP.format(version="1.0"),
        "flat.py": "def one():\n    return 1\n",
        "tests/test_flat.py": "import flat\n\n\ndef test_one():\n    assert flat.one() == 1\n",
    }
    task = Task(
        instance_id="local__flat-pip",
        repo="local/flat",
        base_commit=init_repo(repo, files, "flat"),
        patch="",
        source=Source.SYNTHETIC,
        repo_source=str(repo),
        env=EnvSpec(install=("python -m pip install -e .",)),
        FAIL_TO_PASS=["tests/test_flat.py::test_one"],
    )
    runtime = TaskRuntime.create(task).prepare()
    patch = staged_diff(repo, {"setup.py": _FLAT_SETUP.format(version="1.1")})
    assert _found(runtime, patch) == ""
