"""Fix, feature, refactor, removal: the classifier on sample repositories' answer keys, and what mining does with it."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from repogym.cli import app
from repogym.dataset import load_tasks
from repogym.mining import MiningConfig, mine
from repogym.mining.kinds import ChangeKind
from repogym.samples import CommitKind, SampleRepo, generate_repo

RUNNER = CliRunner()
ALL_KINDS = [kind.value for kind in ChangeKind]


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> list[SampleRepo]:
    """Two sample libraries of different kinds; their manifests mark every fix and feature commit."""
    root = tmp_path_factory.mktemp("kinds")
    return [generate_repo(root / f"lib{seed}", seed=seed) for seed in (1, 2)]


def _truth(sample: SampleRepo) -> dict[str, str]:
    fixes = {fix.fix_commit for fix in sample.fixes}
    return {c.sha: "fix" if c.sha in fixes else c.kind.value for c in sample.commits} | dict.fromkeys(
        fixes, "fix"
    )


def test_sample_repositories_planted_fixes_and_features_are_told_apart(samples) -> None:
    """The labelled set: each sample's manifest says which mined candidates are fixes and which features."""
    seen = {"fix": 0, "feature": 0}
    for sample in samples:
        truth = _truth(sample)
        for task in mine(sample.path, MiningConfig(kinds=ALL_KINDS), prs=sample.prs_path).tasks:
            mining = task.metadata["mining"]
            expected = truth[mining["commit"]]
            if expected in seen:
                seen[expected] += 1
                assert mining["change_kind"] == expected, (mining["commit"], mining["change_kind_cues"])
                assert 0.25 <= mining["change_kind_confidence"] <= 1
    assert seen["fix"] >= 4 and seen["feature"] >= 2


def test_repogym_mine_keeps_fixes_by_default_and_counts_the_rest(samples, tmp_path) -> None:
    sample = samples[0]
    out, funnel = tmp_path / "fixes.jsonl", tmp_path / "funnel.json"
    result = RUNNER.invoke(app, ["mine", str(sample.path), "-o", str(out), "--funnel", str(funnel), "--json"])
    assert result.exit_code == 0, result.output
    written = {t.metadata["mining"]["commit"] for t in load_tasks(out)}
    assert written == {fix.fix_commit for fix in sample.fixes}
    steps = {step["name"]: step["count"] for step in json.loads(funnel.read_text())["steps"]}
    assert steps["kind_feature"] == len(sample.shas(CommitKind.FEATURE)) and steps["kind_fix"] == 0

    both = tmp_path / "both.jsonl"
    result = RUNNER.invoke(
        app, ["mine", str(sample.path), "-o", str(both), "--kinds", "fix,feature", "--json"]
    )
    assert result.exit_code == 0, result.output
    kinds = sorted(t.metadata["mining"]["change_kind"] for t in load_tasks(both))
    assert kinds.count("feature") == len(sample.shas(CommitKind.FEATURE)) and kinds.count("fix") == len(
        written
    )


def test_an_unknown_kind_is_refused_naming_the_known_ones(samples, tmp_path) -> None:
    result = RUNNER.invoke(
        app,
        ["mine", str(samples[0].path), "-o", str(tmp_path / "x.jsonl"), "--kinds", "bugfix"],
        env={"COLUMNS": "300"},
    )
    # A user error: printed in one line, exit status 2.
    assert result.exit_code == 2, result.output
    assert "unknown change kind(s) ['bugfix']; known: fix, feature, refactor, removal" in result.output


def test_statement_loses_merge_line_trailers_and_references_but_keeps_the_numbers(repo) -> None:
    repo.write("pkg/calc.py", "def add(a, b):\n    return a + b\n").write(
        "tests/test_calc.py", "def test_add():\n    assert 1\n"
    )
    sha = repo.commit(
        "Fix add for negative numbers (#31)\n\nadd(-1, 1) gave 1.\n\nFixes #30\n"
        "Signed-off-by: Dev One <dev.one@corp.example>\nCo-authored-by: Dev Two <two@corp.example>"
    )
    (task,) = [t for t in mine(repo.path).tasks if t.metadata["mining"]["commit"] == sha]
    assert task.problem_statement == "Fix add for negative numbers\n\nadd(-1, 1) gave 1.\n"
    assert task.metadata["mining"]["issue_numbers"] == [30]


def test_a_statement_that_quotes_the_fix_is_flagged_in_metadata_and_funnel(repo) -> None:
    fix = "return a + b if b >= 0 else a - abs(b)"
    repo.write("pkg/calc.py", f"def add(a, b):\n    {fix}\n").write(
        "tests/test_calc.py", "def test_add():\n    assert 2\n"
    )
    quoting = repo.commit(f"Fix add\n\nChange the body to `{fix}`.")
    repo.write("tests/test_calc.py", "def test_add():\n    assert 3\n").write(
        "pkg/calc.py", "def add(a, b):\n    return b + a\n"
    )
    plain = repo.commit("Fix add for floats")
    result = mine(repo.path)
    flags = {
        t.metadata["mining"]["commit"]: t.metadata["mining"]["statement_quotes_fix"] for t in result.tasks
    }
    assert flags[quoting] is True and flags[plain] is False
    assert result.funnel.flag_count("statement_quotes_fix") == 1
