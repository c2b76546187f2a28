"""Env files (repogym.toml / --env-file): rules that match tasks and set EnvSpec fields, read top to bottom."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from repogym.envfile import load_env_file, parse_env_file
from repogym.errors import ConfigError
from repogym.task import EnvSpec, Task

PATCH = "--- a/sympy/physics/units.py\n+++ b/sympy/physics/units.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"


def task(
    repo="sympy/sympy", version="1.1", created_at="2018-05-01T10:00:00Z", patch=PATCH, **changes
) -> Task:
    iid = f"{repo.replace('/', '__')}-1"
    return Task(iid, repo, "abc123", patch, version=version, created_at=created_at, **changes)


# A handful of SWE-bench's per-version specs (swebench/harness/constants/python.py), written as data.
SWEBENCH_LIKE = """
[[env.when]]
repo = "pallets/flask"
versions = ["2.0"]
python = "3.9"
packages = ["setuptools==70.0.0", "Werkzeug==2.3.7", "Jinja2==3.0.1", "itsdangerous==2.1.2", "click==8.0.1", "MarkupSafe==2.1.3"]
install = ["python -m pip install -r requirements.txt", "python -m pip install -e ."]
test_cmd = "pytest -rA"

[[env.when]]
repo = "sympy/sympy"
versions = [1.1, "1.10", "1.2"]
python = "3.9"
packages = ["mpmath==1.3.0", "flake8-comprehensions"]
install = ["python -m pip install -e ."]
test_cmd = "bin/test -C --verbose"
log_parser = "sympy"

[[env.when]]
repo = "pytest-dev/pytest"
versions = ["5.4"]
python = "3.9"
packages = ["py==1.11.0", "packaging==23.1", "attrs==23.1.0", "more-itertools==10.1.0", "pluggy==0.13.1"]
install = ["python -m pip install -e ."]
"""


def test_swebench_specs_are_expressible_per_repo_and_version():
    rules = parse_env_file(__import__("tomllib").loads(SWEBENCH_LIKE), "specs.toml")
    sympy, applied = rules.spec_for(task(version="1.1"))
    assert (sympy.python, sympy.log_parser, sympy.test_cmd) == ("3.9", "sympy", "bin/test -C --verbose")
    assert sympy.packages == ("mpmath==1.3.0", "flake8-comprehensions")
    assert applied == ("specs.toml [[env.when]] #2",)
    flask, _ = rules.spec_for(task(repo="pallets/flask", version="2.0"))
    assert flask.install[0] == "python -m pip install -r requirements.txt" and flask.log_parser == "pytest"
    assert rules.spec_for(task(version="1.7"))[1] == ()  # a version the table does not list: untouched
    assert rules.spec_for(task(version="1.10"))[0].log_parser == "sympy"  # "1.10" is not 1.1


def test_later_rules_replace_fields_whole_and_match_keys_all_hold(tmp_path):
    path = tmp_path / "repogym.toml"
    path.write_text(
        """
[env]
packages = ["pytest<8"]
test_cmd = "python -m pytest -rA"

[[env.when]]
until = "2019-12-31"
python = "3.7"

[[env.when]]
paths = ["sympy/physics/*"]
since = 2018-01-01
packages = ["pytest<5"]

[[env.when]]
repo = "other/*"
python = "3.12"
"""
    )
    rules = load_env_file(path)
    old, applied = rules.spec_for(task())
    assert (old.python, old.packages, old.test_cmd) == ("3.7", ("pytest<5",), "python -m pytest -rA")
    assert len(applied) == 3
    new, _ = rules.spec_for(
        task(created_at="2021-01-01T00:00:00Z", patch="--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n")
    )
    assert (new.python, new.packages) == ("", ("pytest<8",))
    assert rules.spec_for(task(repo="other/thing"))[0].python == "3.12"


def test_apply_records_the_rules_that_shaped_each_task(tmp_path):
    rules = parse_env_file({"env": {"when": [{"repo": "sympy/sympy", "python": "3.8"}]}}, "f.toml")
    (shaped,) = rules.apply([task(env=EnvSpec(test_cmd="bin/test"))])
    assert shaped.env.python == "3.8" and shaped.env.test_cmd == "bin/test"  # fields not set are kept
    assert shaped.metadata["env_rules"] == ["f.toml [[env.when]] #1"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("[env]\npyton = '3.9'\n", "f.toml [env]: unknown key(s) ['pyton']; allowed:"),
        ("[env]\nrepo = 'a/b'\n", "match keys ['repo'] belong in an [[env.when]] rule"),
        ("[[env.when]]\nsince = 'soon'\npython = '3.9'\n", "f.toml [[env.when]] #1: 'since' must be a date"),
        ("[envs]\n", "unknown top-level table(s) ['envs']"),
        ("[env]\npython = 'python3'\n", "f.toml [env]: 'env.python' is 'python3': give a version"),
        (
            "[[env.when]]\ninstall = 'pip install .'\nversions = {a = 1}\n",
            "'versions' must be a list of strings",
        ),
    ],
)
def test_errors_name_the_file_the_table_and_the_key(tmp_path, text, message):
    path = tmp_path / "f.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_env_file(path)
    assert message in str(caught.value)


def test_a_file_that_is_not_toml_names_the_file(tmp_path):
    path = tmp_path / "repogym.toml"
    path.write_text("[env\n")
    with pytest.raises(ConfigError, match=r"repogym.toml: not valid TOML"):
        load_env_file(path)


def test_the_offline_env_file_loads_and_its_install_lines_are_shell():
    """bench/swebench_offline.toml (the overrides `tasks import --env-file` takes on machines that reach only the
    package index) loads, and each install line parses as the build's shell reads it."""
    env_file = load_env_file(Path(__file__).resolve().parents[1] / "bench" / "swebench_offline.toml")
    lines = [line for rule in env_file.rules for line in rule.fields.get("install", ())]
    assert any("astropy-helpers" in line for line in lines) and len(lines) >= 4
    for line in lines:
        checked = subprocess.run(["sh", "-n", "-c", line], capture_output=True, text=True)
        assert checked.returncode == 0, (line, checked.stderr)
