"""PR/issue exports in GitHub REST API shape, issue links, problem statements and hints."""

from __future__ import annotations

import pytest

from repogym.errors import DatasetError
from repogym.mining.prs import describe_change, linked_issue_numbers, load_pr_export

PULL = {
    "number": 12,
    "title": "Fix overflow in add",
    "body": "This fixes #3.\r\nAlso resolves https://github.com/acme/calc/issues/4",
    "created_at": "2024-01-05T10:00:00Z",
    "merged_at": "2024-01-06T10:00:00Z",
    "merge_commit_sha": "a" * 40,
    "base": {"ref": "main", "sha": "b" * 40},
    "head": {"ref": "fix", "sha": "c" * 40},
    "user": {"login": "someone"},
}
ISSUE = {
    "number": 3,
    "title": "add overflows",
    "body": "add(2**63, 1) is wrong",
    "created_at": "2024-01-01T00:00:00Z",
    "comments": [
        {"user": {"login": "x"}, "body": "Reproduced on 3.11", "created_at": "2024-01-02T00:00:00Z"},
        {"user": {"login": "y"}, "body": "Fixed in #12", "created_at": "2024-01-07T00:00:00Z"},
    ],
}


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("Fixes #12", (12,)),
        ("closes #1, Closed #2; resolve #3 and RESOLVED: #4", (1, 2, 3, 4)),
        ("fixed https://git.corp/acme/calc/issues/9", (9,)),
        ("see #4, refs #5, bugfix #6, prefix#7", ()),
        ("Fix #1 and fix #1 again", (1,)),
    ],
)
def test_linked_issue_numbers(text: str, numbers: tuple[int, ...]) -> None:
    assert linked_issue_numbers(text) == numbers


def test_export_reads_pulls_issues_and_comments_in_any_order(write_export) -> None:
    standalone_comment = {
        "issue_url": "https://api.github.com/repos/acme/calc/issues/5",
        "body": "me too",
        "created_at": "2024-01-03T00:00:00Z",
    }
    issue_five = {"number": 5, "title": "sub is wrong", "body": None, "created_at": "2024-01-01T00:00:00Z"}
    path = write_export([standalone_comment, PULL, ISSUE, issue_five])

    export = load_pr_export(path)

    assert export.pulls[12].linked_issues == (3, 4)
    assert export.pulls[12].body.startswith("This fixes #3.\nAlso")  # CRLF normalised
    assert export.pull_for("a" * 40, "whatever") is export.pulls[12]
    assert export.pull_for("f" * 40, "Merge pull request #12 from dev/fix") is export.pulls[12]
    assert export.pull_for("f" * 40, "Fix overflow (#12)") is export.pulls[12]
    assert export.pull_for("f" * 40, "Fix overflow") is None
    assert [c.body for c in export.issues[3].comments] == ["Reproduced on 3.11", "Fixed in #12"]
    assert [c.body for c in export.issues[5].comments] == ["me too"]
    assert export.issues[5].body == ""


def test_wrapped_rows_and_pulls_seen_through_the_issues_api(write_export) -> None:
    as_issue = {"number": 8, "title": "Speed up sub", "body": "Faster.", "pull_request": {"url": "..."}}
    path = write_export([{"type": "issue", "data": ISSUE}, as_issue])
    export = load_pr_export(path)
    assert 3 in export.issues and 8 not in export.issues
    assert export.pulls[8].title == "Speed up sub"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", r"prs.jsonl:2: malformed JSON"),
        ('{"number": "7", "title": "x"}', r"prs.jsonl:2: field 'number' must be an integer"),
        ('{"number": 7, "title": 3}', r"prs.jsonl:2: field 'title' must be a string"),
        ('{"number": 7, "title": "x", "created_at": "yesterday"}', r"prs.jsonl:2: field 'created_at'"),
    ],
)
def test_bad_export_lines_are_named(tmp_path, line: str, message: str) -> None:
    path = tmp_path / "prs.jsonl"
    path.write_text('{"number": 1, "title": "ok"}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=message):
        load_pr_export(path)


def test_missing_export_is_named(tmp_path) -> None:
    with pytest.raises(DatasetError, match="no such PR export file"):
        load_pr_export(tmp_path / "absent.jsonl")


def test_statement_prefers_issue_then_pr_then_commit(write_export) -> None:
    export = load_pr_export(write_export([PULL, ISSUE]))
    fixed_at = 1_704_326_400  # 2024-01-04: after the first comment, before "Fixed in #12"

    from_issue = describe_change("Merge pull request #12", export.pulls[12], export, fixed_at)
    assert from_issue.source == "issue"
    assert from_issue.text == "add overflows\nadd(2**63, 1) is wrong\n"
    assert from_issue.issue_numbers == (3, 4)
    assert from_issue.hints == "Reproduced on 3.11"

    pull_without_issue = load_pr_export(write_export([{**PULL, "body": "No issue."}], "p2.jsonl")).pulls[12]
    from_pr = describe_change("Merge pull request #12", pull_without_issue, export, fixed_at)
    assert (from_pr.source, from_pr.text, from_pr.hints) == ("pr", "Fix overflow in add\n\nNo issue.\n", "")

    from_commit = describe_change("Fix sub\n\nIt subtracted backwards.\n", None, export, fixed_at)
    assert (from_commit.source, from_commit.text) == ("commit", "Fix sub\n\nIt subtracted backwards.\n")

    linked_by_commit = describe_change("Fix add (fixes #3)", None, export, fixed_at)
    assert linked_by_commit.source == "issue" and linked_by_commit.issue_numbers == (3,)


def test_hints_are_only_comments_written_before_the_fix(write_export) -> None:
    export = load_pr_export(write_export([PULL, ISSUE]))
    before_any = describe_change("x", export.pulls[12], export, fixed_at=1_704_067_200)  # 2024-01-01
    after_all = describe_change("x", export.pulls[12], export, fixed_at=1_704_758_400)  # 2024-01-09
    assert before_any.hints == ""
    assert after_all.hints == "Reproduced on 3.11\nFixed in #12"
