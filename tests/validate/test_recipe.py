"""Environment recipes read from real git repositories built in tmp dirs: each commit's own files decide."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from repogym.envfile import repo_env_file
from repogym.errors import EnvBuildError
from repogym.task import EnvSpec, Task
from repogym.validate.envresolve import (
    plan_recipe,
    read_recipe_files,
    resolve_task_env,
    scm_version,
    subprojects_holding,
)
from repogym.validate.overrides import apply_overrides
from repogym.validate.recipe import Python2OnlyError, choose_python

from ..support.git import clone, commit_files, git

INSTALLED = ["2.7.18", "3.6.15", "3.7.16", "3.8.18", "3.9.18", "3.10.13", "3.11.7", "3.12.1", "3.13.0"]

SETUP_PY_2019 = """from setuptools import setup
setup(
    name="shop",
    python_requires=">=3.6",
    install_requires=["attrs"],
    extras_require={"docs": ["sphinx"], "tests": ["pytest", "hypothesis"]},
    classifiers=[
        "Programming Language :: Python :: 3.6",
        "Programming Language :: Python :: 3.7",
    ],
)
"""
TESTS_TXT = """# pip-compile output
-r base.txt
pytest==4.6.3 \\
    --hash=sha256:0123
git+https://github.com/example/pytest-private.git#egg=pytest-private
"""
PYPROJECT_2025 = """[build-system]
requires = ["hatchling", "hatch-vcs"]
build-backend = "hatchling.build"

[project]
name = "shop"
dynamic = ["version"]
requires-python = ">=3.10"
dependencies = ["attrs>=23"]
classifiers = ["Programming Language :: Python :: 3.12"]

[dependency-groups]
lint = ["ruff"]
tests = ["pytest", "colorama ; sys_platform == 'win32'", {include-group = "lint"}]
"""
UV_LOCK = """version = 1
[[package]]
name = "attrs"
version = "24.2.0"
[[package]]
name = "pytest"
version = "8.3.3"
[[package]]
name = "ruff"
version = "0.6.9"
[[package]]
name = "colorama"
version = "0.4.6"
"""


def pins(install_line: str) -> tuple[str, ...]:
    """The exact pins of a recipe's pins line (its --exclude-newer-package exemptions dropped)."""
    words = shlex.split(install_line.split(" || ")[0])  # the fallback after || repeats the pins
    return tuple(w for i, w in enumerate(words) if "==" in w and words[i - 1] != "--exclude-newer-package")


def files_at(repo: Path, sha: str, into: Path) -> dict[str, str]:
    into.mkdir()
    subprocess.run(f"git archive {sha} | tar -x -C {into}", shell=True, cwd=repo, check=True)
    return read_recipe_files(into)


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """A project that moved from setup.py + pinned requirements (2019) to pyproject + uv.lock (2025)."""
    repo = tmp_path_factory.mktemp("shop") / "shop"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    old = commit_files(
        repo,
        {"setup.py": SETUP_PY_2019, "requirements/tests.txt": TESTS_TXT, "requirements/base.txt": "attrs==19.1.0\n",
         "shop/__init__.py": "", "tests/test_shop.py": "def test_x():\n    pass\n"},
        "first", "2019-06-12T10:00:00+00:00",
    )  # fmt: skip
    git(repo, "tag", "v1.4.0")
    new = commit_files(
        repo,
        {"setup.py": None, "requirements/tests.txt": None, "requirements/base.txt": None,
         "pyproject.toml": PYPROJECT_2025, "uv.lock": UV_LOCK},
        "move to pyproject and uv", "2025-03-02T10:00:00+00:00",
    )  # fmt: skip
    return repo, old, new


def test_a_2019_commit_gets_its_pins_its_python_and_its_date(history, tmp_path):
    repo, old, _ = history
    recipe = plan_recipe(files_at(repo, old, tmp_path / "old"), "2019-06-12T10:00:00+00:00", INSTALLED)
    assert recipe.python == "3.7.16"  # the newest classified version, released before the commit
    assert recipe.exclude_newer == "2019-06-12"
    assert pins(recipe.install[0]) == ("attrs==19.1.0", "pytest==4.6.3")  # -r followed, hashes stripped
    assert "--exclude-newer-package pytest=2099-12-31" in recipe.install[0]  # the pin file's word wins
    assert (
        " || UV_EXCLUDE_NEWER=2019-06-12T23:59:59Z " in recipe.install[0]
    )  # what the pins need, if the day cannot
    assert recipe.packages == ()
    assert recipe.install[1:] == (
        "/opt/repogym/bin/uv pip install --python /opt/repogym/venv/bin/python "
        "--exclude-newer-package setuptools=2025-06-01 -e '.[tests]'",  # setuptools 64 came in 2022
    )
    assert recipe.warnings == (
        "requirements/tests.txt: dropped URL requirement git+https://github.com/example/pytest-private.git"
        "#egg=pytest-private (only the package index is reachable)",
    )
    assert "test dependencies: 2 from requirements/tests.txt" in recipe.steps


def test_a_2025_commit_pins_its_test_group_from_uv_lock_and_versions_itself_from_the_tags(history, tmp_path):
    repo, _, new = history
    files = files_at(repo, new, tmp_path / "new")
    recipe = plan_recipe(files, "2025-03-02T10:00:00+00:00", INSTALLED, scm_version(repo, new))
    assert recipe.python == "3.12.1"  # >=3.10, classified 3.12; 3.13 exists but is not classified
    assert pins(recipe.install[0]) == (
        "pytest==8.3.3",
        'colorama==0.4.6; sys_platform == "win32"',
        "ruff==0.6.9",
        "attrs==24.2.0",
    )
    assert recipe.install[1].startswith("SETUPTOOLS_SCM_PRETEND_VERSION=1.4.0 ")
    assert any("from uv.lock" in step for step in recipe.steps)


def test_python_2_only_code_is_named_and_a_missing_python_says_which_are_installed():
    py2 = {"setup.py": "classifiers=['Programming Language :: Python :: 2.7']"}
    with pytest.raises(Python2OnlyError, match=r"Python 2\.7 only"):
        choose_python(py2, "2015-01-01", INSTALLED)
    with pytest.raises(EnvBuildError, match=r"needs Python >=3.14 \(requires-python\), none installed"):
        choose_python({"pyproject.toml": '[project]\nrequires-python = ">=3.14"\n'}, "2026-01-01", INSTALLED)


def test_a_commit_before_a_python_release_never_gets_that_python():
    python, why = choose_python({}, "2020-03-01", INSTALLED)
    assert python == "3.8.18" and "released before 2020-03-01" in why


def test_a_pipfile_lock_is_installed_whole_with_its_markers():
    lock = {"default": {"attrs": {"version": "==21.2.0"}},
            "develop": {"pytest": {"version": "==6.2.4"}, "pywin32": {"version": "==301", "markers": "sys_platform == 'win32'"}}}  # fmt: skip
    recipe = plan_recipe({"Pipfile.lock": json.dumps(lock)}, "2021-06-01", INSTALLED)
    assert pins(recipe.install[0]) == (
        "attrs==21.2.0",
        "pytest==6.2.4",
        "pywin32==301; sys_platform == 'win32'",
    )
    assert len(recipe.install) == 1  # nothing to install of the repo itself


def test_fields_a_task_sets_are_kept_and_the_rest_filled_and_recorded(history, tmp_path):
    repo, old, _ = history
    checkout = tmp_path / "co"
    files_at(repo, old, checkout)
    task = Task("shop-1", "o/shop", old, "", created_at="2019-06-12T10:00:00Z", env=EnvSpec(python="3.9"))
    resolved = resolve_task_env(task, checkout, repo)
    assert resolved.env.python == "3.9"  # the task's word wins
    assert resolved.env.exclude_newer == "2019-06-12"
    assert pins(resolved.env.install[0]) == ("attrs==19.1.0", "pytest==4.6.3")
    assert resolved.metadata["env_recipe"]["filled"] == ["exclude_newer", "install", "packages"]
    assert resolve_task_env(resolved, checkout, repo) == resolved  # a validated task resolves to itself


def test_a_repositorys_own_repogym_toml_applies_before_the_command_lines_env_file(history, tmp_path):
    repo, old, _ = history
    (repo / "repogym.toml").write_text('[env]\npython = "3.8"\npackages = ["attrs"]\n')
    cli_file = tmp_path / "override.toml"
    cli_file.write_text('[[env.when]]\nuntil = "2020-01-01"\npython = "3.9"\n')
    try:
        task = Task("shop-1", "o/shop", old, "", created_at="2019-06-12T10:00:00Z", repo_source=str(repo))
        (applied,), used = apply_overrides([task], cli_file)
        assert (applied.env.python, applied.env.packages) == ("3.9", ("attrs",))
        assert [u.source for u in used] == [str(repo / "repogym.toml"), str(cli_file)]
        assert applied.metadata["env_rules"] == [f"{repo}/repogym.toml [env]", f"{cli_file} [[env.when]] #1"]
    finally:
        (repo / "repogym.toml").unlink()


def test_a_bare_repository_s_repogym_toml_is_read_from_head(history, tmp_path):
    repo, _, _ = history
    (repo / "repogym.toml").write_text('[env]\ntest_cmd = "pytest -x"\n')
    commit_files(repo, {}, "add repogym.toml", "2025-04-01T00:00:00+00:00")
    bare = tmp_path / "bare.git"
    clone(repo, bare, "--bare")
    found = repo_env_file(bare)
    assert found is not None and found.rules[0].fields == {"test_cmd": "pytest -x"}
    assert found.source == f"{bare}/repogym.toml (HEAD)"


def test_tests_of_a_subproject_with_its_own_packaging_install_it(tmp_path):
    (tmp_path / "examples" / "js" / "tests").mkdir(parents=True)
    (tmp_path / "examples" / "js" / "pyproject.toml").write_text('[project]\nname = "js-example"\n')
    found = subprojects_holding(tmp_path, ["examples/js/tests/test_js.py", "tests/test_app.py"])
    assert found == ("examples/js",)
    recipe = plan_recipe({"setup.py": ""}, "2024-11-13", INSTALLED, subprojects=found)
    assert recipe.install[-1].endswith("-e examples/js")


def test_a_commit_dated_before_its_python_existed_resolves_as_of_the_recipes_day():
    recipe = plan_recipe({"setup.py": ""}, "2000-01-01T00:00:00Z", INSTALLED, made_on="2026-12-01")
    assert recipe.exclude_newer == "2026-12-01"
    assert recipe.python == "3.13.0"  # no Python existed then: the newest allowed, not the oldest
    assert "the commit's date 2000-01-01 predates Python 3.13: not a credible cutoff" in recipe.steps


POETRY_2019 = """[tool.poetry]
name = "tomlish"
version = "0.5.3"
classifiers = ["Programming Language :: Python :: 3.7"]

[tool.poetry.dependencies]
python = "~2.7 || ^3.5"

[tool.poetry.dev-dependencies]
pytest = "^4.0"
pytest-cov = "^2.6"
black = { version = "^19.3b0", python = "^3.6" }
codecov = "^2.0"
pre-commit = "^1.10"

[build-system]
requires = ["poetry>=0.12a3"]
build-backend = "poetry.masonry.api"
"""
POETRY_LOCK_2019 = """[[package]]
name = "pytest"
version = "4.6.3"
[[package]]
name = "codecov"
version = "2.0.15"
"""


def test_a_poetry_project_gets_its_python_its_dev_pins_without_tools_and_a_wheel_of_poetry_masonry():
    files = {"pyproject.toml": POETRY_2019, "poetry.lock": POETRY_LOCK_2019}
    recipe = plan_recipe(files, "2019-07-01T10:00:00+00:00", INSTALLED)
    assert recipe.python == "3.7.16"  # "~2.7 || ^3.5": the Python 3 alternative, classified 3.7
    assert pins(recipe.install[0]) == ("pytest==4.6.3",)  # pinned from poetry.lock
    assert recipe.packages == ("pytest-cov",)  # not in the lock: resolved as of the commit's day
    assert any("dev tools left out" in s and "black, codecov, pre-commit" in s for s in recipe.steps)
    # poetry itself as the backend has no editable hook: a wheel, with the checkout first on sys.path
    assert recipe.install[1] == "/opt/repogym/bin/uv pip install --python /opt/repogym/venv/bin/python ."


def test_a_2021_poetry_core_project_builds_editable_with_a_later_poetry_core():
    pyproject = POETRY_2019.replace(
        'requires = ["poetry>=0.12a3"]', 'requires = ["poetry-core>=1.0.0"]'
    ).replace('"poetry.masonry.api"', '"poetry.core.masonry.api"')
    old = plan_recipe({"pyproject.toml": pyproject}, "2021-06-01T10:00:00+00:00", INSTALLED)
    assert "--exclude-newer-package poetry-core=2025-06-01 -e ." in old.install[-1]
    new = plan_recipe({"pyproject.toml": pyproject}, "2023-06-01T10:00:00+00:00", INSTALLED)
    assert new.install[-1].endswith(" -e .") and "poetry-core=" not in new.install[-1]


def test_test_data_in_a_git_submodule_reaches_the_checkout_from_a_recursive_clone(tmp_path):
    from repogym.sandbox.repos import mirror
    from repogym.sandbox.workspace import pristine_checkout

    data = tmp_path / "spec-tests"
    data.mkdir()
    git(data, "init", "-q", "-b", "main")
    (data / "cases").mkdir()
    (data / "cases" / "one.toml").write_text("a = 1\n")
    git(data, "add", "-A")
    git(data, "commit", "-q", "-m", "cases")
    main = tmp_path / "lib"
    main.mkdir()
    git(main, "init", "-q", "-b", "main")
    (main / "lib.py").write_text("X = 1\n")
    git(main, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(data), "tests/spec")
    git(main, "add", "-A")
    git(main, "commit", "-q", "-m", "spec tests as a submodule")
    head = git(main, "rev-parse", "HEAD").strip()
    plain = tmp_path / "plain"  # cloned without --recurse-submodules: nothing to copy, left empty
    git(tmp_path, "clone", "-q", str(main), str(plain))
    recursive = tmp_path / "recursive"
    git(
        tmp_path,
        "-c",
        "protocol.file.allow=always",
        "clone",
        "-q",
        "--recurse-submodules",
        str(main),
        str(recursive),
    )

    empty = pristine_checkout(mirror(str(plain), (head,)), head)
    assert (empty / "tests" / "spec").is_dir() and not any((empty / "tests" / "spec").iterdir())
    full = pristine_checkout(mirror(str(recursive), (head,)), head)
    assert (full / "tests" / "spec" / "cases" / "one.toml").read_text() == "a = 1\n"
    assert (full / "lib.py").read_text() == "X = 1\n"


NOXFILE = """import nox


@nox.session(python=["3.10", "3.11"])
def lint(session):
    session.install("-r", "requirements/lint.txt")


@nox.session(python=["3.10", "3.11"])
def tests(session):
    session.install("-r", "requirements/ci-tests.txt")
    session.install(".")
    session.run("python", "-m", "pytest")
"""
FLIT = """[build-system]
requires = ["flit_core >=3.2,<4"]
build-backend = "flit_core.buildapi"

[project]
name = "pkging"
version = "21.0"
"""


def test_a_nox_test_sessions_requirement_file_is_installed_and_the_lint_sessions_is_not():
    """packaging's shape: `session.install("-r", ...)` in noxfile.py is where its tests' requirements live."""
    files = {"pyproject.toml": FLIT, "noxfile.py": NOXFILE, "requirements/lint.txt": "black\nflake8-bugbear\n",
             "requirements/ci-tests.txt": "pretend\npytest>=6.2.0\n"}  # fmt: skip
    recipe = plan_recipe(files, "2023-09-02T10:00:00+00:00", INSTALLED)
    assert "pretend" in recipe.packages
    assert not any("bugbear" in p for p in (*recipe.packages, *recipe.install))
    assert any("noxfile.py session tests" in step for step in recipe.steps)


def test_a_tests_folders_requirements_file_is_a_test_requirements_file():
    files = {"pyproject.toml": FLIT, "tests/requirements.txt": "pretend\npytest>=6.2.0\n"}
    recipe = plan_recipe(files, "2023-09-02T10:00:00+00:00", INSTALLED)
    assert "pretend" in recipe.packages
    assert any("tests/requirements.txt" in step for step in recipe.steps)


MARSHMALLOW_SETUP_PY = """from setuptools import setup, find_packages

EXTRAS_REQUIRE = {
    "tests": ["pytest", "pytz", "simplejson"],
    "lint": ["flake8==4.0.1"],
}
EXTRAS_REQUIRE["dev"] = EXTRAS_REQUIRE["tests"] + EXTRAS_REQUIRE["lint"] + ["tox"]

setup(name="marsh", version="3.14.0", packages=find_packages("src"), package_dir={"": "src"},
      extras_require=EXTRAS_REQUIRE, python_requires=">=3.6")
"""


def test_a_setup_py_whose_extras_sit_in_a_module_level_dict_installs_the_extra_tox_names():
    """marshmallow 2021-2023: `extras_require=EXTRAS_REQUIRE`, and tox.ini's `[testenv] extras = tests`."""
    files = {
        "setup.py": MARSHMALLOW_SETUP_PY,
        "tox.ini": "[testenv]\nextras = tests\ncommands = pytest {posargs}\n",
    }
    recipe = plan_recipe(files, "2021-10-29T10:00:00+00:00", INSTALLED)
    assert recipe.install[-1].endswith("-e '.[tests]'"), recipe.install
    without_tox = plan_recipe({"setup.py": MARSHMALLOW_SETUP_PY}, "2021-10-29T10:00:00+00:00", INSTALLED)
    assert without_tox.install[-1].endswith("-e '.[tests]'")  # the first of tests, test, testing, dev
