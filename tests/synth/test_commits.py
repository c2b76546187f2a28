"""`commit_rows` / `repogym data commits`: SFT rows from a sample repository's history, through the miner's
filters and the privacy stage."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from repogym.cli import app
from repogym.mining.config import MiningConfig
from repogym.privacy import ScrubConfig
from repogym.samples.generate import generate_repo
from repogym.samples.model import CommitKind
from repogym.synth.commits import commit_rows


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return generate_repo(tmp_path_factory.mktemp("commits") / "lib", seed=4, n_bug_fixes=3)


@pytest.fixture(scope="module")
def data(sample):
    return commit_rows(sample.path)


def test_each_row_is_an_instruction_with_context_and_the_diff_as_answer(data, sample):
    assert data.rows
    for row in data.rows:
        user, assistant = row["messages"]
        assert (user["role"], assistant["role"]) == ("user", "assistant")
        assert assistant["content"].startswith("diff --git") or "--- a/" in assistant["content"]
        assert row["files"] and row["commit"] and row["license"] == "MIT"
    # The context is the code before the change: a line the diff removes is in the instruction's context.
    row = next(
        r
        for r in data.rows
        if any(
            line.startswith("-") and not line.startswith("---")
            for line in r["messages"][1]["content"].splitlines()
        )
    )
    removed = next(
        line[1:]
        for line in row["messages"][1]["content"].splitlines()
        if line.startswith("-") and not line.startswith("---") and line[1:].strip()
    )
    assert removed in row["messages"][0]["content"]


def test_bots_merges_and_docs_only_commits_are_left_out(data, sample):
    kinds = {info.sha: info.kind for info in sample.commits}
    written = {row["commit"] for row in data.rows}
    assert not any(kinds.get(sha) in (CommitKind.BOT, CommitKind.DOCS) for sha in written)
    funnel = data.funnel
    assert funnel.count("bot") >= 1 and funnel.count("docs_only") >= 1
    assert funnel.count("merge") == sum(1 for fix in sample.fixes if fix.pr_number is not None)
    assert funnel.count("no_test_change") == 0  # commit data needs no test change
    assert funnel.written == len(data.rows)


def test_no_row_carries_the_planted_secret(data, sample):
    assert sample.secret.value not in json.dumps(list(data.rows))


def test_a_licence_off_the_allowlist_drops_every_row(tmp_path):
    gpl = generate_repo(tmp_path / "gpl", seed=2, license="GPL-3.0-only", with_prs=False)
    dropped = commit_rows(gpl.path)
    assert dropped.rows == () and dropped.funnel.count("license_not_allowed") > 0
    kept = commit_rows(gpl.path, scrub=ScrubConfig(check_license=False))
    assert kept.rows


def test_the_answer_can_be_the_new_code(sample):
    rows = commit_rows(sample.path, MiningConfig(max_candidates=3), answer="new").rows
    assert rows and all(not row["messages"][1]["content"].startswith("diff --git") for row in rows)
    assert all(row["messages"][1]["content"].startswith("# ") for row in rows)


def test_the_cli_writes_rows_and_a_funnel(sample, tmp_path):
    out = tmp_path / "commits.jsonl"
    result = CliRunner().invoke(app, ["data", "commits", str(sample.path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    funnel = json.loads((tmp_path / "commits.jsonl.funnel.json").read_text())
    assert len(rows) == funnel["written"] > 0
    bad = CliRunner().invoke(
        app, ["data", "commits", str(sample.path), "--out", str(out), "--branch", "nope"]
    )
    assert bad.exit_code == 2 and "no commit named 'nope'" in bad.output
