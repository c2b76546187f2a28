"""`repogym tasks import FILE` on SWE-rebench's instances: each one's own install_config becomes its env,
graded in the real sandbox; a recipe that needs root or conda is refused naming the instance and the key.

The instances are written from SWE-rebench's documented schema (repogym.data.swerebench's sources) over a
real git repository made here: the toy calculator, with a requirements file committed on top.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pyarrow
import pyarrow.parquet
import pytest
from typer.testing import CliRunner

from repogym.cli import app, common
from repogym.data.swerebench import LEFT_OUT, NO_INSTALL, RULE_NAME
from repogym.dataset import load_tasks
from repogym.task import Task
from repogym.testing import TESTS_AFTER, make_toy_task

from ..support.git import commit_files, staged_diff

RUNNER = CliRunner()
#: SWE-rebench's usual test command (the paper's appendix); the grader appends the test files.
TEST_CMD = "pytest --no-header -rA --tb=line --color=no -p no:cacheprovider -W ignore::DeprecationWarning"
#: A Debian package no machine has.
ABSENT_PACKAGE = "repogym-absent-test-package"


@pytest.fixture(autouse=True)
def wide_console(monkeypatch):
    for console in (common.console, common.err_console):
        monkeypatch.setattr(console, "_width", 200)


def invoke(*args: str):
    return RUNNER.invoke(app, list(args))


def recipe(**keys: Any) -> dict[str, Any]:
    """An install_config as SWE-rebench's rows hold it: every key present, the unused ones null."""
    config: dict[str, Any] = {
        "env_vars": None,
        "env_yml_path": None,
        "install": "pip install -e .",
        "log_parser": "parse_log_pytest",
        "no_use_env": None,
        "packages": None,
        "pip_packages": ["pytest"],
        "pre_install": None,
        "python": "3.11",
        "reqs_path": None,
        "test_cmd": TEST_CMD,
    }
    return {**config, **keys}


def instance(task: Task, instance_id: str, config: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A SWE-rebench row for `task`'s bug: SWE-bench's fields, the recipe, and SWE-rebench's own extras (no
    repo_source: the repository is found under --repos-dir, as for the real dataset)."""
    return {
        "instance_id": instance_id,
        "repo": task.repo,
        "base_commit": task.base_commit,
        "patch": task.patch,
        "test_patch": task.test_patch,
        "problem_statement": task.problem_statement,
        "hints_text": "",
        "created_at": "2024-01-01T00:00:00+00:00",
        "version": "0.1",
        "FAIL_TO_PASS": task.FAIL_TO_PASS,
        "PASS_TO_PASS": task.PASS_TO_PASS,
        "environment_setup_commit": task.base_commit,
        "meta": {
            "commit_name": "head_commit",
            "has_test_patch": True,
            "is_lite": False,
            "num_modified_files": 1,
        },
        "install_config": config,
        "license_name": "MIT License",
        **fields,
    }


@pytest.fixture(scope="module")
def world(toy_task, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Task, Task]:
    """(repos folder, the plain toy bug, the same bug whose tests import what only a recipe installs): a
    toy repository with requirements-test.txt committed on top (toy_task points REPOGYM_CACHE at the run's
    shared cache, so each environment is built once per run)."""
    repos = tmp_path_factory.mktemp("swerebench-repos")
    toy = make_toy_task(repos, instance_id="toy__calc-1")
    repo = Path(toy.repo_source)
    base = commit_files(repo, {"requirements-test.txt": "six\n"}, "test requirements")
    plain = toy.replace(base_commit=base)
    imports = "import six\nimport tabulate\nimport termcolor\n"
    demanding = plain.replace(test_patch=staged_diff(repo, {"tests/test_calc.py": imports + TESTS_AFTER}))
    return repos, plain, demanding


def write(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / "swe-rebench.json"
    path.write_text(json.dumps(rows))
    return path


def grade(tasks: Path, repos: Path, instance_id: str, how: str) -> dict[str, Any]:
    result = invoke("grade", str(tasks), "--instance", instance_id, how, "--repos-dir", str(repos), "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# -- the recipe becomes the env, and the sandbox honours it ---------------------------------------------


def test_gold_resolves_and_empty_does_not_with_the_env_from_install_config(world, tmp_path: Path) -> None:
    repos, plain, _ = world
    out = tmp_path / "tasks.jsonl"
    result = invoke(
        "tasks", "import", str(write(tmp_path, [instance(plain, "toy__calc-7", recipe())])), "--out", str(out)
    )
    assert result.exit_code == 0, result.output
    assert "env from install_config (SWE-rebench): 1 of 1 instances" in result.stdout
    task = load_tasks(out).get("toy__calc-7")
    assert (task.env.python, task.env.packages, task.env.install) == (
        "3.11",
        ("pytest",),
        ("pip install -e .",),
    )
    assert (task.env.test_cmd, task.env.log_parser) == (TEST_CMD, "pytest")
    assert task.metadata["env_rules"] == [RULE_NAME]
    assert grade(out, repos, "toy__calc-7", "--gold")["outcome"] == "RESOLVED"
    assert grade(out, repos, "toy__calc-7", "--empty")["outcome"] != "RESOLVED"


def test_requirements_pip_packages_and_a_pre_install_pip_line_are_all_installed(
    world, tmp_path: Path
) -> None:
    """The test file imports six (requirements-test.txt), termcolor (pip_packages) and tabulate (a pip line
    of pre_install): gold resolves only in an environment that has all three; the apt-get lines ask for what
    every Debian machine has, so they are left out and said so."""
    repos, _, demanding = world
    config = recipe(
        packages="requirements.txt",
        reqs_path=["requirements-test.txt", "requirements-missing.txt"],
        pip_packages=["pytest", "termcolor"],
        pre_install=["apt-get update && apt-get install -y bash", "pip install tabulate"],
    )
    out = tmp_path / "tasks.jsonl"
    source = write(tmp_path, [instance(demanding, "toy__calc-8", config)])
    result = invoke("tasks", "import", str(source), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "1 instance(s) ask apt-get for packages this machine has" in result.stdout
    task = load_tasks(out).get("toy__calc-8")
    assert (
        task.env.packages == ()
    )  # after requirements, pip_packages is a pip line, as the harness orders them
    assert task.env.install == (
        "if [ -f requirements-test.txt ]; then python -m pip install -r requirements-test.txt; fi",
        "if [ -f requirements-missing.txt ]; then python -m pip install -r requirements-missing.txt; fi",
        "python -m pip install pytest termcolor",
        "pip install tabulate",
        "pip install -e .",
    )
    assert task.metadata[LEFT_OUT] == [
        "pre_install[0] `apt-get update`: installs nothing a build here lacks",
        "pre_install[0] `apt-get install -y bash`: this machine has bash",
    ]
    assert grade(out, repos, "toy__calc-8", "--gold")["outcome"] == "RESOLVED"


def test_a_recipe_without_an_install_command_runs_none(world, tmp_path: Path) -> None:
    """An empty install would have repogym detect one; SWE-rebench's harness ran none."""
    _, plain, _ = world
    out = tmp_path / "tasks.jsonl"
    rows = [instance(plain, "toy__calc-9", recipe(install=None, pip_packages=["pytest==8.3.5"], python=3.5))]
    assert invoke("tasks", "import", str(write(tmp_path, rows)), "--out", str(out)).exit_code == 0
    env = load_tasks(out).get("toy__calc-9").env
    assert (env.install, env.packages) == ((NO_INSTALL,), ("pytest==8.3.5",))
    assert env.python == "3.6"  # the harness raises what conda cannot build to 3.6


def test_a_step_left_out_keeps_the_shell_operators_of_the_rest(world, tmp_path: Path) -> None:
    """`sudo x || echo skipped` tolerates x's failure in the harness; dropping sudo (or an apt-get line the
    machine has) must not turn the `||` into `&&`, which would fail the build where the harness went on."""
    _, plain, _ = world
    config = recipe(
        pre_install=["apt-get update && sudo pip install tabulate || echo 'tabulate is optional'"],
        install="pip install -e . && apt-get install -y bash",
    )
    out = tmp_path / "tasks.jsonl"
    result = invoke(
        "tasks", "import", str(write(tmp_path, [instance(plain, "toy__calc-12", config)])), "--out", str(out)
    )
    assert result.exit_code == 0, result.output
    assert load_tasks(out).get("toy__calc-12").env.install == (
        "pip install tabulate || echo 'tabulate is optional'",
        "pip install -e . && :",
    )


def test_a_parquet_file_as_the_dataset_ships_it_imports_and_exports_back(world, tmp_path: Path) -> None:
    """A timestamp created_at and the recipe as a struct column, as in SWE-rebench's parquet files; the
    fields repogym does not know (install_config, meta, license_name) round-trip to SWE-bench's form."""
    _, plain, _ = world
    row = instance(plain, "toy__calc-10", recipe(packages="six=1.16 python=3.11", pip_packages="pytest"))
    row["created_at"] = datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    source, out, back = tmp_path / "rebench.parquet", tmp_path / "tasks.jsonl", tmp_path / "back.json"
    pyarrow.parquet.write_table(pyarrow.Table.from_pylist([row]), source)
    result = invoke("tasks", "import", str(source), "--out", str(out))
    assert result.exit_code == 0, result.output
    task = load_tasks(out).get("toy__calc-10")
    assert task.created_at == "2024-01-02T03:04:05+00:00"
    assert task.env.packages == ("six==1.16.*", "pytest")  # conda's pin as pip's; python left to its key
    assert invoke("tasks", "import", str(out), "--out", str(tmp_path / "again.jsonl")).exit_code == 0
    assert load_tasks(tmp_path / "again.jsonl").get("toy__calc-10").env == task.env  # not made twice
    assert invoke("tasks", "export", str(out), "--format", "swebench", "--out", str(back)).exit_code == 0
    exported = json.loads(back.read_text())[0]
    assert exported["install_config"]["packages"] == "six=1.16 python=3.11"
    assert exported["meta"]["commit_name"] == "head_commit" and exported["license_name"] == "MIT License"


def test_an_env_file_of_ones_own_is_applied_after_the_recipe(world, tmp_path: Path) -> None:
    _, plain, _ = world
    mine = tmp_path / "mine.toml"
    mine.write_text('[env]\nexclude_newer = "2025-04-01"\n')
    out = tmp_path / "tasks.jsonl"
    source = write(tmp_path, [instance(plain, "toy__calc-11", recipe())])
    assert invoke("tasks", "import", str(source), "--env-file", str(mine), "--out", str(out)).exit_code == 0
    task = load_tasks(out).get("toy__calc-11")
    assert (task.env.exclude_newer, task.env.install) == ("2025-04-01", ("pip install -e .",))
    assert task.metadata["env_rules"] == [RULE_NAME, f"{mine} [env]"]


# -- what cannot be honoured without docker or root is refused, by instance and key ---------------------


@pytest.mark.parametrize(
    ("keys", "key", "words"),
    [
        ({"test_cmd": None}, "install_config.test_cmd", "missing: the harness reads it with no default"),
        ({"python": None}, "install_config.python", "missing"),
        ({"log_parser": "parse_log_gotest"}, "install_config.log_parser", "no repogym parser reads"),
        (
            {
                "pre_install": [
                    "apt-get update",
                    f"apt-get install -y --no-install-recommends {ABSENT_PACKAGE}",
                ]
            },
            "install_config.pre_install[1]",
            f"installs Debian package(s) this machine lacks: {ABSENT_PACKAGE}; repogym builds without root, "
            f"so install them first (apt-get install {ABSENT_PACKAGE})",
        ),
        (
            {"install": "locale-gen en_US.UTF-8 && pip install -e ."},
            "install_config.install",
            "needs root or conda",
        ),
        (
            {"packages": "environment.yml", "env_yml_path": ["environment.yml"]},
            "install_config.packages",
            "'environment.yml' is a conda environment file",
        ),
    ],
)
def test_a_recipe_that_cannot_be_honoured_refuses_the_file_naming_instance_and_key(
    world, tmp_path: Path, keys: dict[str, Any], key: str, words: str
) -> None:
    _, plain, _ = world
    rows = [instance(plain, "toy__calc-good", recipe()), instance(plain, "toy__calc-bad", recipe(**keys))]
    out = tmp_path / "tasks.jsonl"
    result = invoke("tasks", "import", str(write(tmp_path, rows)), "--out", str(out))
    assert result.exit_code == 2, result.output
    assert f"instance 'toy__calc-bad': {key}: " in result.output and words in result.output
    assert "1 SWE-rebench instance(s) ask for what cannot be done here" in result.output
    assert "--skip-refused imports the others" in result.output
    assert not out.exists()


def test_skip_refused_imports_the_others_and_lists_the_refused(world, tmp_path: Path) -> None:
    _, plain, _ = world
    lacking = recipe(pre_install=[f"sudo apt-get install -y {ABSENT_PACKAGE}"])
    rows = [instance(plain, "toy__calc-good", recipe()), instance(plain, "toy__calc-bad", lacking)]
    out = tmp_path / "tasks.jsonl"
    result = invoke(
        "tasks", "import", str(write(tmp_path, rows)), "--out", str(out), "--skip-refused", "--json"
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["tasks"] == 1 and load_tasks(out).ids() == ["toy__calc-good"]
    (refused,) = summary["install_config"]["refused"]
    assert (refused["instance_id"], refused["key"]) == ("toy__calc-bad", "pre_install[0]")
    assert ABSENT_PACKAGE in refused["why"]
