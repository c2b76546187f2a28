"""The PR/issue export: GitHub's JSON shape, PRs linked to issues and to the commits in the repo."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from repogym.errors import DatasetError
from repogym.samples import FixKind, SampleRepo, generate_repo, read_export

from ..support.git import git


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> SampleRepo:
    return generate_repo(tmp_path_factory.mktemp("prs") / "lib", seed=21, n_bug_fixes=5, library="intervals")


def test_export_lives_outside_the_repo_and_every_line_is_json(repo: SampleRepo) -> None:
    assert repo.prs_path is not None
    assert repo.prs_path.parent == repo.path.parent
    rows = [json.loads(line) for line in repo.prs_path.read_text().splitlines()]
    numbers = [row["number"] for row in rows]
    assert numbers == sorted(numbers) == list(range(1, len(rows) + 1))


def test_each_pr_fix_has_a_merged_pull_linked_to_its_issue(repo: SampleRepo) -> None:
    assert repo.prs_path is not None
    pulls, issues = read_export(repo.prs_path)
    pr_fixes = [fix for fix in repo.fixes if fix.kind == FixKind.PR]
    assert pr_fixes and sorted(pulls) == sorted(fix.pr_number for fix in pr_fixes)
    for fix in pr_fixes:
        pull = pulls[fix.pr_number]
        assert pull["state"] == "closed" and pull["merged_at"]
        assert pull["merge_commit_sha"] == fix.fix_commit
        assert pull["base"] == {"ref": "main", "sha": fix.base_commit}
        assert pull["head"]["sha"] == fix.branch_commits[-1] and pull["head"]["ref"] == f"fix-{fix.slug}"
        assert pull["html_url"] == f"https://github.com/{repo.github}/pull/{fix.pr_number}"
        assert re.findall(r"Fixes #(\d+)", pull["body"]) == [str(fix.issue_number)]
        merge_time = git(repo.path, "log", "-1", "--format=%cI", fix.fix_commit).strip()
        assert _utc(merge_time) == pull["merged_at"]
        issue = issues[fix.issue_number]
        assert issue["state"] == "closed" and "pull_request" not in issue
        assert issue["user"]["login"] != pull["user"]["login"]


def test_issue_comments_before_the_merge_are_hints_and_the_last_one_closes(repo: SampleRepo) -> None:
    assert repo.prs_path is not None
    pulls, issues = read_export(repo.prs_path)
    for fix in (fix for fix in repo.fixes if fix.kind == FixKind.PR):
        issue, merged_at = issues[fix.issue_number], pulls[fix.pr_number]["merged_at"]
        times = [comment["created_at"] for comment in issue["comments"]]
        assert times == sorted(times) and issue["created_at"] < times[0]
        hints = [comment for comment in issue["comments"] if comment["created_at"] < merged_at]
        assert hints and all(comment["body"] for comment in hints)
        assert issue["comments"][-1]["body"] == f"Fixed in #{fix.pr_number}."
        assert issue["comments"][-1]["created_at"] > merged_at


def test_issue_text_reads_like_a_user_report_not_a_patch(repo: SampleRepo) -> None:
    assert repo.prs_path is not None
    _, issues = read_export(repo.prs_path)
    for issue in issues.values():
        assert "diff --git" not in issue["body"] and "@@ " not in issue["body"]
        assert "__pkg__" not in issue["body"]
        assert issue["html_url"].endswith(f"/issues/{issue['number']}")
    assert any(issue["state"] == "open" for issue in issues.values())  # the unanswered question


def test_commit_fixes_have_no_pull(repo: SampleRepo) -> None:
    for fix in repo.fixes:
        if fix.kind == FixKind.COMMIT:
            assert fix.pr_number is None and fix.issue_number is None


def test_read_export_names_the_bad_line(tmp_path: Path) -> None:
    export = tmp_path / "prs.jsonl"
    export.write_text('{"number": 1, "title": "ok", "body": ""}\n{not json\n')
    with pytest.raises(DatasetError, match=r"prs.jsonl:2"):
        read_export(export)


def test_rows_with_pull_request_key_are_not_issues(tmp_path: Path) -> None:
    export = tmp_path / "prs.jsonl"
    rows = [
        {"number": 1, "title": "bug", "body": "", "comments": []},
        {"number": 2, "title": "fix", "body": "Fixes #1", "pull_request": {"url": "x"}, "comments": []},
        {"number": 2, "title": "fix", "body": "Fixes #1", "merge_commit_sha": "a" * 40},
    ]
    export.write_text("".join(json.dumps(row) + "\n" for row in rows))
    pulls, issues = read_export(export)
    assert list(pulls) == [2] and list(issues) == [1]


def _utc(iso_with_offset: str) -> str:
    import datetime as dt

    return dt.datetime.fromisoformat(iso_with_offset).astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
