"""`repogym doctor TASKS_OR_REPO` on task files and clones built to need a system package this machine lacks.

The dry check reads each commit's C sources without building (a header the repository ships itself needs
nothing); a recorded build failure (validation's partial file) names what a setup.py probed for, which no
source shows; a task file that needs nothing passes.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from repogym.cli import app
from repogym.dataset import save_tasks
from repogym.task import Task
from repogym.validate import ValidateConfig, validate_candidates

from ..support.git import commit_files, head, staged_diff
from .conftest import PROBING_SETUP_PY, c_extension_repo

RUNNER = CliRunner()


def doctor(*args: str):
    return RUNNER.invoke(app, ["doctor", *args], env={"COLUMNS": "200"})


def task_of(repo, instance_id: str = "geo-1") -> Task:
    """A task at the clone's HEAD (its patch adds a README: only its commit's environment matters here)."""
    patch = staged_diff(repo, {"README.md": "geo\n"})
    return Task(instance_id, "local/geo", head(repo), patch, repo_source=str(repo))


def test_a_task_file_whose_commit_includes_a_missing_header_names_the_package(absent_header, tmp_path):
    header, package = absent_header
    repo = c_extension_repo(tmp_path / "geo", header)
    tasks = tmp_path / "tasks.jsonl"
    save_tasks([task_of(repo)], tasks)
    result = doctor(str(tasks), "--json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["ok"] is False and report["missing_packages"] == [package]
    (row,) = report["repos"]
    (need,) = row["packages"]
    assert need == {
        "package": package, "need": f"header {header} not found", "source": "dry check",
        "evidence": f"src/geo/_speed.c:2: #include <{header}>", "tasks": 1,
    }  # fmt: skip
    assert row["pythons"][0]["python"] and "requires-python >=3.8" in row["pythons"][0]["detail"]
    human = doctor(str(tasks))
    assert human.exit_code == 1
    assert f"needs {package}: header {header} not found" in human.stdout
    assert human.stdout.rstrip().endswith(f"install: apt-get install {package}")


def test_a_clone_is_checked_at_a_commit_and_a_header_it_ships_itself_needs_nothing(absent_header, tmp_path):
    header, package = absent_header
    repo = c_extension_repo(tmp_path / "geo", header)
    broken = head(repo)
    commit_files(repo, {f"src/geo/{header}": "#define VENDORED 1\n"}, "vendor the header")
    vendored = doctor(str(repo), "--json")
    assert json.loads(vendored.stdout)["repos"][0]["packages"] == [], vendored.output
    at_first = doctor(str(repo), "--commit", broken, "--json")
    assert json.loads(at_first.stdout)["missing_packages"] == [package], at_first.output


def test_a_task_file_that_needs_nothing_passes(toy_task, tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    save_tasks([toy_task], tasks)
    result = doctor(str(tasks), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["ok"] is True and report["missing_packages"] == []
    assert {tool["name"] for tool in report["tools"] if tool["required"]} == {"git", "bwrap"}


@pytest.mark.slow
def test_a_recorded_build_failure_names_what_the_setup_py_probed_for(toy_task, absent_program, tmp_path):
    """A setup.py that runs a library's config program: no source names it, the failed build does."""
    program, package = absent_program
    repo = c_extension_repo(tmp_path / "geo", "stdio.h", setup_py=PROBING_SETUP_PY % program)
    candidates = tmp_path / "candidates.jsonl"
    save_tasks([task_of(repo)], candidates)
    out = tmp_path / "tasks.jsonl"
    run = validate_candidates([task_of(repo)], out, ValidateConfig(workers=1, scrub=False))
    assert run.outcomes["geo-1"].verdict.value == "env_build_failed"
    result = doctor(str(candidates), "--partial", f"{out}.partial.jsonl", "--json")
    assert result.exit_code == 1, result.output
    (need,) = json.loads(result.stdout)["repos"][0]["packages"]
    assert (need["package"], need["need"], need["source"]) == (
        package, f"command {program} not found", "recorded build failure",
    )  # fmt: skip
    assert program in need["evidence"]


def test_a_system_package_the_tasks_spec_names_and_the_machine_lacks_is_named(toy_task, tmp_path):
    """SWE-bench's images apt-get graphviz, ffmpeg, texlive: `env.system_packages` carries them, and doctor
    names those dpkg does not have installed (git, which repogym needs, is installed here)."""
    from repogym.task import EnvSpec

    absent = "repogym-absent-debian-pkg"
    spec = EnvSpec(**{**vars(toy_task.env), "system_packages": ("git", absent)})
    tasks = tmp_path / "tasks.jsonl"
    save_tasks([toy_task.replace(env=spec), toy_task.replace(instance_id="toy-2", env=spec)], tasks)
    result = doctor(str(tasks), "--json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["missing_packages"] == [absent]
    (need,) = report["repos"][0]["packages"]
    assert need["package"] == absent and need["source"] == "task spec" and need["tasks"] == 2
    assert need["need"] == "not installed"
    human = doctor(str(tasks))
    assert human.stdout.rstrip().endswith(f"install: apt-get install {absent}")


def test_where_dpkg_cannot_tell_every_spec_package_is_named_as_not_checked(toy_task, tmp_path, monkeypatch):
    from repogym.task import EnvSpec
    from repogym.validate import doctor as doctor_module

    monkeypatch.setattr(doctor_module, "installed_packages", lambda names: None)
    spec = EnvSpec(**{**vars(toy_task.env), "system_packages": ("git",)})
    tasks = tmp_path / "tasks.jsonl"
    save_tasks([toy_task.replace(env=spec)], tasks)
    report = json.loads(doctor(str(tasks), "--json").stdout)
    (need,) = report["repos"][0]["packages"]
    assert (need["package"], need["need"]) == ("git", "not checked (no dpkg-query on this machine)")
