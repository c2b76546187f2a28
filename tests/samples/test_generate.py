"""Shape, determinism and answer key of generated sample repositories (no test suites are run here)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from repogym.errors import ConfigError, UnknownNameError
from repogym.samples import (
    LIBRARIES,
    CommitKind,
    FixKind,
    SampleRepo,
    generate_repo,
    generate_suite,
    load_manifest,
)

from ..support.git import git


def all_shas(repo: Path) -> list[str]:
    return git(repo, "rev-list", "--all", "--reverse", "--topo-order").split()


def parents(repo: Path, sha: str) -> list[str]:
    return git(repo, "rev-list", "--parents", "-n", "1", sha).split()[1:]


def changed_files(repo: Path, sha: str) -> list[str]:
    """Files a commit changes against its first parent (the root commit: all of its files)."""
    first = parents(repo, sha)[:1]
    if not first:
        return git(repo, "ls-tree", "-r", "--name-only", sha).split()
    return git(repo, "diff", "--name-only", first[0], sha).split()


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> SampleRepo:
    return generate_repo(tmp_path_factory.mktemp("gen") / "lib", seed=3, n_bug_fixes=4)


def test_same_seed_gives_same_commit_shas(tmp_path: Path) -> None:
    first = generate_repo(tmp_path / "a", seed=5)
    second = generate_repo(tmp_path / "b", seed=5)
    assert first.head == second.head
    assert all_shas(first.path) == all_shas(second.path)
    assert first.to_dict() | {"path": "", "prs_path": ""} == second.to_dict() | {"path": "", "prs_path": ""}
    assert first.prs_path is not None and second.prs_path is not None
    assert first.prs_path.read_text() == second.prs_path.read_text()


def test_other_seed_gives_other_content(tmp_path: Path) -> None:
    first = generate_repo(tmp_path / "a", seed=5, library="intervals")
    second = generate_repo(tmp_path / "b", seed=6, library="intervals")
    assert first.head != second.head
    assert first.secret.value != second.secret.value
    tree = "ls-tree", "-r", "HEAD"
    assert git(first.path, *tree) != git(second.path, *tree)


def test_git_config_of_the_user_does_not_change_shas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reference = generate_repo(tmp_path / "a", seed=2)
    config = tmp_path / "gitconfig"
    config.write_text(
        "[user]\n\tname = Someone Else\n\temail = else@example.org\n[core]\n\tautocrlf = true\n"
    )
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2001-01-01T00:00:00")
    assert generate_repo(tmp_path / "b", seed=2).head == reference.head


def test_every_commit_is_in_the_answer_key_once(repo: SampleRepo) -> None:
    assert sorted(commit.sha for commit in repo.commits) == sorted(all_shas(repo.path))
    assert repo.commits[0].kind == CommitKind.INITIAL
    kinds = {commit.kind for commit in repo.commits}
    assert kinds == set(CommitKind)
    assert git(repo.path, "rev-parse", "HEAD").strip() == repo.head
    assert git(repo.path, "for-each-ref", "--format=%(refname)").split() == [
        "refs/heads/main",
        "refs/tags/v0.1.0",
        "refs/tags/v0.2.0",
    ]


def test_commits_have_increasing_dates_and_several_authors(repo: SampleRepo) -> None:
    log = git(repo.path, "log", "--first-parent", "--reverse", "--format=%at|%an|%ae").splitlines()
    times = [int(line.split("|")[0]) for line in log]
    assert times == sorted(times) and len(set(times)) == len(times)
    humans = {line.split("|")[1] for line in log if "[bot]" not in line}
    assert len(humans) >= 3
    assert all(re.fullmatch(r"[^@\s]+@[^@\s]+\.[a-z]+", line.split("|")[2]) for line in log)


def test_planted_fixes_have_the_promised_shape(repo: SampleRepo) -> None:
    assert {fix.kind for fix in repo.fixes} == {FixKind.COMMIT, FixKind.PR}
    order = [commit.sha for commit in repo.commits]
    for fix in repo.fixes:
        assert order.index(fix.bug_commit) < order.index(fix.base_commit) < order.index(fix.fix_commit)
        assert parents(repo.path, fix.fix_commit)[0] == fix.base_commit
        assert changed_files(repo.path, fix.bug_commit) == list(fix.code_files)
        changed = changed_files(repo.path, fix.fix_commit)
        assert sorted(changed) == sorted([*fix.code_files, *fix.test_files, *fix.doc_files])
        assert fix.test_files and all(path.startswith("tests/") for path in fix.test_files)
        assert fix.FAIL_TO_PASS and all(test.split("::")[0] in fix.test_files for test in fix.FAIL_TO_PASS)
        assert not set(fix.FAIL_TO_PASS) & set(fix.PASS_TO_PASS)
        if fix.kind == FixKind.PR:
            assert len(parents(repo.path, fix.fix_commit)) == 2
            subject = git(repo.path, "log", "-1", "--format=%s", fix.fix_commit).strip()
            assert re.fullmatch(rf"Merge pull request #{fix.pr_number} from [\w-]+/fix-{fix.slug}", subject)
            assert fix.branch_commits and parents(repo.path, fix.fix_commit)[1] == fix.branch_commits[-1]
            assert fix.issue_number is not None and fix.issue_number < fix.pr_number
        else:
            assert len(parents(repo.path, fix.fix_commit)) == 1 and fix.pr_number is None


def test_other_commit_kinds_touch_what_their_kind_says(repo: SampleRepo) -> None:
    for sha in repo.docs_commits:
        assert all(path.endswith(".md") for path in changed_files(repo.path, sha))
    for sha in repo.refactor_commits:
        files = changed_files(repo.path, sha)
        assert files and all(path.startswith("src/") and path.endswith(".py") for path in files)
    for sha in repo.tests_only_commits:
        assert all(path.startswith("tests/") for path in changed_files(repo.path, sha))
    for sha in repo.feature_commits:
        files = changed_files(repo.path, sha)
        assert any(path.startswith("src/") for path in files) and any(
            path.startswith("tests/") for path in files
        )
    bots = {git(repo.path, "log", "-1", "--format=%an|%s", sha).strip() for sha in repo.bot_commits}
    assert "dependabot[bot]|Bump pytest-cov from 4.1.0 to 5.0.0" in bots
    assert "github-actions[bot]|Bump version to 0.2.0" in bots


def test_pyproject_makes_a_real_installable_library(repo: SampleRepo) -> None:
    meta = tomllib.loads((repo.path / "pyproject.toml").read_text())
    project = meta["project"]
    assert meta["build-system"]["build-backend"] == "setuptools.build_meta"
    assert project["name"] == repo.name and project["version"] == "0.2.0"
    assert project["requires-python"] == ">=3.8"
    assert project["license"] == {"text": "MIT"}
    assert project["dependencies"] == []
    assert project["optional-dependencies"]["test"] == ["pytest"]
    package = repo.path / "src" / repo.package
    modules = [path for path in package.glob("*.py") if path.name != "__init__.py"]
    assert 3 <= len(modules) <= 5
    assert '__version__ = "0.2.0"' in (package / "__init__.py").read_text()
    for name in ("README.md", "CHANGELOG.md", "LICENSE", "docs/index.md", "requirements-dev.txt"):
        assert (repo.path / name).is_file(), name
    assert git(repo.path, "status", "--porcelain") == ""


@pytest.mark.parametrize(
    ("spdx", "phrases"),
    [
        ("MIT", ["MIT License", "Permission is hereby granted, free of charge"]),
        ("Apache-2.0", ["Apache License", "Version 2.0, January 2004", "http://www.apache.org/licenses/"]),
        ("BSD-3-Clause", ["BSD 3-Clause License", "Neither the name of the copyright holder"]),
        ("GPL-3.0-only", ["GNU GENERAL PUBLIC LICENSE", "Version 3, 29 June 2007"]),
    ],
)
def test_licence_text_and_metadata(tmp_path: Path, spdx: str, phrases: list[str]) -> None:
    repo = generate_repo(tmp_path / "lib", seed=1, license=spdx, n_bug_fixes=1, with_prs=False)
    text = (repo.path / "LICENSE").read_text()
    assert all(phrase in text for phrase in phrases)
    project = tomllib.loads((repo.path / "pyproject.toml").read_text())["project"]
    assert project["license"] == {"text": spdx} and repo.license == spdx
    assert any(classifier.startswith("License :: OSI Approved") for classifier in project["classifiers"])


def test_nothing_in_the_repository_reveals_the_answer_key(repo: SampleRepo) -> None:
    history = git(repo.path, "log", "--all", "-p", "--format=%B")
    for word in ("FAIL_TO_PASS", "PASS_TO_PASS", "manifest", "planted", "repogym"):
        assert word not in history
    assert not list((repo.path / ".git").glob("*marks*"))


def test_manifest_round_trips_and_stays_outside_the_repo(repo: SampleRepo, tmp_path: Path) -> None:
    written = repo.write_manifest(tmp_path / "lib.manifest.json")
    assert load_manifest(written) == repo
    with pytest.raises(ConfigError, match="outside the repository"):
        repo.write_manifest(repo.path / "manifest.json")


def test_without_prs_every_fix_is_a_commit(tmp_path: Path) -> None:
    repo = generate_repo(tmp_path / "lib", seed=4, with_prs=False, n_bug_fixes=3)
    assert repo.prs_path is None and not list(tmp_path.glob("*.jsonl"))
    assert {fix.kind for fix in repo.fixes} == {FixKind.COMMIT}
    merges = git(repo.path, "rev-list", "--merges", "HEAD").split()
    assert merges == []


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"n_bug_fixes": 99}, ConfigError, "n_bug_fixes"),
        ({"n_bug_fixes": 0}, ConfigError, "n_bug_fixes"),
        ({"license": "WTFPL"}, ConfigError, "MIT"),
        ({"library": "spreadsheet"}, UnknownNameError, "intervals"),
        ({"name": "Bad Name!"}, ConfigError, "name"),
    ],
)
def test_bad_arguments_are_named(tmp_path: Path, kwargs: dict, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        generate_repo(tmp_path / "lib", **kwargs)


def test_refuses_a_non_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "precious.txt").write_text("keep me")
    with pytest.raises(ConfigError, match="not an empty directory"):
        generate_repo(tmp_path / "lib")
    assert (tmp_path / "lib" / "precious.txt").read_text() == "keep me"


def test_one_repo_generates_well_under_two_seconds(tmp_path: Path) -> None:
    started = time.perf_counter()
    generate_repo(tmp_path / "lib", seed=9, n_bug_fixes=6, library="dates")
    assert time.perf_counter() - started < 2.0


def test_suite_gives_different_libraries_names_and_licences(tmp_path: Path) -> None:
    repos = generate_suite(tmp_path, seed=2, n_repos=5, license=["MIT", "GPL-3.0-only"], n_bug_fixes=2)
    assert len({repo.name for repo in repos}) == 5
    assert {repo.library for repo in repos} == set(LIBRARIES.names())
    assert [repo.license for repo in repos] == ["MIT", "GPL-3.0-only", "MIT", "GPL-3.0-only", "MIT"]
    for repo in repos:
        assert repo.path.parent == tmp_path
        assert load_manifest(tmp_path / f"{repo.name}.manifest.json").head == repo.head
        assert (tmp_path / f"{repo.name}.prs.jsonl").is_file()
    assert len({repo.head for repo in repos}) == 5
    subprocess.run(
        ["git", "fsck", "--strict", "--no-progress"], cwd=repos[0].path, check=True, capture_output=True
    )


def test_installs_with_uv_from_the_package_index(tmp_path: Path) -> None:
    repo = generate_repo(tmp_path / "lib", seed=12, n_bug_fixes=1, with_prs=False)
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    assert uv is not None, "uv is a dependency of repogym"
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    venv = tmp_path / "venv"
    subprocess.run([uv, "venv", "-q", "-p", sys.executable, str(venv)], check=True, env=env)
    python = str(venv / "bin" / "python")
    subprocess.run(
        [uv, "pip", "install", "-q", "--python", python, "-e", str(repo.path)], check=True, env=env
    )
    code = f"import {repo.package}; print({repo.package}.__version__, {repo.package}.__file__)"
    version, location = subprocess.run(
        [python, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout.split()
    assert version == "0.2.0" and Path(location).is_relative_to(repo.path / "src")
