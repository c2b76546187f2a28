"""`repogym tasks import FILE --specs swebench`: SWE-bench instances get SWE-bench's per-version env."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repogym.cli import app, common
from repogym.data import builtin_specs, data_path
from repogym.dataset import load_tasks

RUNNER = CliRunner()


@pytest.fixture(autouse=True)
def wide_console(monkeypatch):
    for console in (common.console, common.err_console):
        monkeypatch.setattr(console, "_width", 200)


def _import(*args: str):
    return RUNNER.invoke(app, ["tasks", "import", *args])


def _row(rows: list[dict], repo: str, version: str) -> dict:
    template = dict(rows[0])
    return {
        **template,
        "repo": repo,
        "version": version,
        "instance_id": f"{repo.replace('/', '__')}-{version}",
    }


@pytest.fixture
def instances(tmp_path: Path, swebench_rows) -> Path:
    """The sample's four instances and three more: an old django (Python 3.5, not installed here), pytest's
    own repo, and a repo SWE-bench has no spec for."""
    rows = list(swebench_rows)
    rows += [
        _row(rows, "django/django", "2.2"),
        _row(rows, "pytest-dev/pytest", "5.4"),
        _row(rows, "acme/calc", "1.0"),
    ]
    rows += [_row(rows, "sympy/sympy", "1.13"), _row(rows, "sympy/sympy", "1.14")]
    rows += [_row(rows, "sphinx-doc/sphinx", "7.2"), _row(rows, "sphinx-doc/sphinx", "5.0")]
    path = tmp_path / "instances.json"
    path.write_text(json.dumps(rows))
    return path


def test_each_instance_gets_its_repo_and_version_spec(tmp_path: Path, instances: Path) -> None:
    out = tmp_path / "tasks.jsonl"
    result = _import(str(instances), "--specs", "swebench", "--out", str(out))
    assert result.exit_code == 0, result.output
    tasks = {t.instance_id: t for t in load_tasks(out)}
    flask = tasks["pallets__flask-4992"].env
    assert (flask.python, flask.log_parser, flask.test_cmd) == ("3.11", "pytest", "pytest -rA")
    assert flask.install[0] == "python -m pip install -r requirements/dev.txt"  # then SWE-bench's pins win
    assert flask.install[1].startswith("python -m pip install setuptools==70.0.0 click==8.1.3")
    assert flask.install[-1] == "python -m pip install -e ."
    sympy = tasks["sympy__sympy-24562"].env
    assert sympy.log_parser == "sympy" and sympy.test_cmd.endswith("bin/test -C --verbose")
    assert "mpmath==1.3.0" in sympy.packages and sympy.install == ("python -m pip install -e .",)
    assert tasks["django__django-11099"].env.log_parser == "django"
    assert tasks["psf__requests-2931"].env.log_parser == "pytest-options"
    pytest_repo = tasks["pytest-dev__pytest-5.4"].env
    assert "pluggy==0.13.1" in pytest_repo.packages and pytest_repo.install == ("python -m pip install -e .",)
    # sympy 1.13's base commits predate requirements-dev.txt: SWE-bench reads it at the environment_setup_commit,
    # so its packages are in the rule, not read from the checkout (which would fail the build).
    sympy_113, sympy_114 = tasks["sympy__sympy-1.13"].env, tasks["sympy__sympy-1.14"].env
    assert "-r" not in sympy_113.install[0].split() and "pytest-doctestplus" in sympy_113.install[0].split()
    assert sympy_113.install[1:] == ("python -m pip install mpmath==1.3.0", "python -m pip install -e .")
    assert "requirements-dev.txt" in sympy_114.install[0]
    # What SWE-bench's images apt-get is carried, to be named by `repogym doctor` (sphinx 7.2+ only).
    assert tasks["sphinx-doc__sphinx-7.2"].env.system_packages == ("graphviz",)
    assert tasks["sphinx-doc__sphinx-5.0"].env.system_packages == ()
    assert flask.system_packages == ()
    assert tasks["pallets__flask-4992"].metadata["env_rules"] == [
        "swebench specs (swebench.toml) [[env.when]] #23"
    ]


def test_the_summary_names_unmatched_repos_and_missing_interpreters(tmp_path: Path, instances: Path) -> None:
    result = _import(str(instances), "--specs", "swebench", "--out", str(tmp_path / "t.jsonl"))
    assert "env from swebench: 10 of 11 tasks" in result.stdout
    assert "no spec for acme/calc@1.0 (1): those tasks keep their own env" in result.stdout
    assert "1 task(s) need Python 3.5, which is not installed here (installed: " in result.stdout
    assert load_tasks(tmp_path / "t.jsonl").get("acme__calc-1.0").env.python == ""


def test_an_env_file_of_ones_own_is_applied_after_the_specs(tmp_path: Path, instances: Path) -> None:
    mine = tmp_path / "mine.toml"
    mine.write_text('[[env.when]]\nrepo = "sympy/*"\npython = "3.10"\n')
    out = tmp_path / "t.jsonl"
    result = _import(str(instances), "--specs", "swebench", "--env-file", str(mine), "--out", str(out))
    assert result.exit_code == 0, result.output
    env = load_tasks(out).get("sympy__sympy-24562").env
    assert env.python == "3.10" and env.log_parser == "sympy"  # the rest still from the specs


def test_unknown_specs_name_lists_the_known_ones(tmp_path: Path, instances: Path) -> None:
    result = _import(str(instances), "--specs", "swe-bench", "--out", str(tmp_path / "t.jsonl"))
    assert result.exit_code == 2
    assert "no such built-in specs; known: swebench" in result.output


def test_swebench_export_of_imported_tasks_is_unchanged(tmp_path: Path, instances: Path) -> None:
    out, back = tmp_path / "t.jsonl", tmp_path / "back.json"
    assert _import(str(instances), "--specs", "swebench", "--out", str(out)).exit_code == 0
    result = RUNNER.invoke(app, ["tasks", "export", str(out), "--format", "swebench", "--out", str(back)])
    assert result.exit_code == 0, result.output
    assert json.loads(back.read_text()) == json.loads(instances.read_text())


def test_the_table_ships_in_the_package_and_every_rule_is_valid() -> None:
    """Every rule parses into an EnvSpec; the file is a package data file (the wheel includes src/repogym)."""
    specs = builtin_specs("swebench")
    assert data_path("swebench.toml").is_file()
    repos = {rule.repo for rule in specs.rules}
    assert {"sympy/sympy", "pallets/flask", "pytest-dev/pytest", "django/django"} <= repos
    assert (
        len(repos) == 19
    )  # SWE-bench's Python repositories, swe-bench/humaneval (not a repository) left out
    assert all(rule.versions for rule in specs.rules)
    # Unpinned packages resolve as when SWE-bench built its images (today's setuptools lacks pkg_resources).
    assert {rule.fields.get("exclude_newer") for rule in specs.rules} == {"2024-06-27"}
