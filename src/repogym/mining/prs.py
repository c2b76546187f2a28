"""Offline PR and issue exports: who fixed what, and what the problem was.

An export is a JSONL file, one JSON object per line, in the shapes GitHub's
REST API returns (so `gh api --paginate` output, one object per line, works):

- a pull request (`GET /repos/{o}/{r}/pulls/{n}`): recognised by `merge_commit_sha`
  or `head`/`base`; read: `number`, `title`, `body`, `created_at`, `merged_at`,
  `merge_commit_sha`, `base.sha`, `user.login`, `labels[].name`;
- an issue (`GET /repos/{o}/{r}/issues/{n}`): `number`, `title`, `body`,
  `created_at`, `labels[].name`; an issue object carrying `pull_request` is a PR seen through the
  issues API and only contributes its title and body when no pull object exists;
- an issue comment (`GET /repos/{o}/{r}/issues/comments`): recognised by
  `issue_url`; read: `body`, `created_at`; the issue number is the URL's last part.
  An issue may instead carry its comments inline as a `comments` list of such objects.

A line may also wrap one of these as `{"type": "pull"|"issue"|"comment", "data": {...}}`.
Unknown fields are ignored; e-mail addresses and logins are never copied into tasks.
Linked issues come from GitHub's closing keywords ("fixes #12", "closes #3",
"resolves https://.../issues/7") in the PR's title and body or in the commit message.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from repogym.errors import DatasetError
from repogym.mining.statements import clean_message

_CLOSING = re.compile(
    r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b:?\s+(?:#|https?://[^\s/]+/[^\s/]+/[^\s/]+/issues/)(\d+)\b",
    re.IGNORECASE,
)
_MERGE_PR = re.compile(r"^Merge pull request #(\d+)\b")
_SQUASH_PR = re.compile(r"\(#(\d+)\)\s*$")


def linked_issue_numbers(*texts: str) -> tuple[int, ...]:
    """Issue numbers a text closes with GitHub's keywords, in order of first mention.

    >>> linked_issue_numbers("Fixes #12, closes #3 and fixes #12 again", "Resolves: https://h.io/o/r/issues/7")
    (12, 3, 7)
    >>> linked_issue_numbers("see #4; prefix#5; bugfix #6")
    ()
    """
    numbers: list[int] = []
    for text in texts:
        if not text or ("#" not in text and "/issues/" not in text):  # most messages link nothing
            continue
        for match in _CLOSING.finditer(text):
            number = int(match.group(1))
            if number not in numbers:
                numbers.append(number)
    return tuple(numbers)


def pr_number_from_message(subject: str, squash: bool = True) -> int | None:
    """The PR number GitHub writes into merge ("Merge pull request #N from ...") and squash ("Title (#N)") subjects.

    A squash-style "(#N)" may also name an issue; `squash=False` ignores it (used
    when an export can say which numbers are pulls).

    >>> pr_number_from_message("Merge pull request #42 from dev/fix-x"), pr_number_from_message("Fix x (#7)")
    (42, 7)
    >>> pr_number_from_message("Fix #7 properly") is None, pr_number_from_message("Fix x (#7)", squash=False) is None
    (True, True)
    """
    if "#" not in subject:
        return None
    match = _MERGE_PR.search(subject) or (_SQUASH_PR.search(subject) if squash else None)
    return int(match.group(1)) if match else None


def parse_timestamp(value: Any, where: str) -> int | None:
    """Seconds since the epoch of an ISO 8601 time such as GitHub's "2024-01-02T03:04:05Z"; None for null."""
    if value in (None, ""):
        return None
    try:
        return int(datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp())
    except ValueError:
        raise DatasetError(f"{where}: not an ISO 8601 time: {value!r}") from None


@dataclass(frozen=True)
class PrComment:
    body: str
    created_at: int | None


@dataclass(frozen=True)
class Issue:
    number: int
    title: str
    body: str
    created_at: int | None = None
    comments: tuple[PrComment, ...] = ()
    labels: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """SWE-bench's problem statement form: title, newline, body."""
        return f"{self.title}\n{self.body}".strip() + "\n"


@dataclass(frozen=True)
class PullRequest:
    number: int
    title: str
    body: str
    created_at: int | None = None
    merged_at: int | None = None
    merge_commit_sha: str = ""
    base_sha: str = ""
    author_login: str = ""
    """Used only to recognise bots; never written to a task."""
    labels: tuple[str, ...] = ()

    @property
    def linked_issues(self) -> tuple[int, ...]:
        return linked_issue_numbers(self.title, self.body)

    @property
    def text(self) -> str:
        return f"{self.title}\n\n{self.body}".strip() + "\n"


@dataclass(frozen=True)
class PrExport:
    """Pull requests by number and by merge commit sha, issues with their comments by number."""

    pulls: dict[int, PullRequest] = field(default_factory=dict)
    issues: dict[int, Issue] = field(default_factory=dict)
    origin: str = ""
    _by_merge_sha: dict[str, PullRequest] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_sha: dict[str, PullRequest] = {}
        for pull in sorted(self.pulls.values(), key=lambda p: p.number):
            if pull.merge_commit_sha:
                by_sha.setdefault(pull.merge_commit_sha, pull)
        object.__setattr__(self, "_by_merge_sha", by_sha)  # derived index; the export itself stays frozen

    def pull_for(self, commit_sha: str, subject: str) -> PullRequest | None:
        """The PR a commit landed: by merge_commit_sha (merge, squash or rebase), else by the number in its subject."""
        pull = self._by_merge_sha.get(commit_sha)
        if pull is not None:
            return pull
        number = pr_number_from_message(subject)
        return self.pulls.get(number) if number is not None else None


def load_pr_export(path: str | os.PathLike[str]) -> PrExport:
    """Read an export (see the module docstring); errors name the file, the line and the field."""
    file = Path(path)
    pulls: dict[int, PullRequest] = {}
    issues: dict[int, Issue] = {}
    pr_issues: dict[int, Issue] = {}
    comments: dict[int, list[PrComment]] = {}
    if not file.is_file():
        raise DatasetError(f"{file}: no such PR export file")
    with open(file, encoding="utf-8-sig") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{file}:{number}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{where}: malformed JSON: {exc.msg} at column {exc.colno}") from None
            kind, data = _unwrap(row, where)
            if kind == "pull":
                pull = _pull(data, where)
                pulls[pull.number] = pull
            elif kind == "comment":
                issue_number, comment = _comment(data, where)
                comments.setdefault(issue_number, []).append(comment)
            else:
                issue = _issue(data, where)
                (pr_issues if "pull_request" in data else issues)[issue.number] = issue
    for number, issue in pr_issues.items():
        if number not in pulls:
            pulls[number] = PullRequest(
                number, issue.title, issue.body, issue.created_at, labels=issue.labels
            )
    for number, extra in comments.items():
        if number in issues:
            issue = issues[number]
            issues[number] = Issue(
                issue.number,
                issue.title,
                issue.body,
                issue.created_at,
                (*issue.comments, *extra),
                issue.labels,
            )
    return PrExport(pulls, issues, str(file))


def _unwrap(row: Any, where: str) -> tuple[str, dict[str, Any]]:
    if not isinstance(row, dict):
        raise DatasetError(f"{where}: expected a JSON object, got {type(row).__name__}")
    if isinstance(row.get("data"), dict) and row.get("type") in ("pull", "pull_request", "issue", "comment"):
        kind = {"pull_request": "pull"}.get(row["type"], row["type"])
        return kind, row["data"]
    if "merge_commit_sha" in row or ("head" in row and "base" in row):
        return "pull", row
    if "issue_url" in row and "title" not in row:
        return "comment", row
    return "issue", row


def _number(data: dict[str, Any], where: str) -> int:
    value = data.get("number")
    if not isinstance(value, int) or isinstance(value, bool):
        raise DatasetError(f"{where}: field 'number' must be an integer, got {value!r}")
    return value


def _text(data: dict[str, Any], name: str, where: str) -> str:
    value = data.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise DatasetError(f"{where}: field {name!r} must be a string or null, got {type(value).__name__}")
    return value.replace("\r\n", "\n")


def _pull(data: dict[str, Any], where: str) -> PullRequest:
    base = data.get("base") if isinstance(data.get("base"), dict) else {}
    user = data.get("user") if isinstance(data.get("user"), dict) else {}
    return PullRequest(
        number=_number(data, where),
        title=_text(data, "title", where),
        body=_text(data, "body", where),
        created_at=parse_timestamp(data.get("created_at"), f"{where}: field 'created_at'"),
        merged_at=parse_timestamp(data.get("merged_at"), f"{where}: field 'merged_at'"),
        merge_commit_sha=_text(data, "merge_commit_sha", where),
        base_sha=str(base.get("sha") or ""),
        author_login=str(user.get("login") or ""),
        labels=_labels(data),
    )


def _issue(data: dict[str, Any], where: str) -> Issue:
    inline = data.get("comments")
    comments: tuple[PrComment, ...] = ()
    if isinstance(inline, list):  # GitHub's own issue objects carry a count here; a list is comments inline
        comments = tuple(_comment(item, f"{where}: comment {index}")[1] for index, item in enumerate(inline))
    return Issue(
        number=_number(data, where),
        title=_text(data, "title", where),
        body=_text(data, "body", where),
        created_at=parse_timestamp(data.get("created_at"), f"{where}: field 'created_at'"),
        comments=comments,
        labels=_labels(data),
    )


def _labels(data: dict[str, Any]) -> tuple[str, ...]:
    """GitHub's `labels`: a list of objects with a `name` (or of plain strings); anything else is ignored."""
    raw = data.get("labels")
    if not isinstance(raw, list):
        return ()
    names = [item.get("name") if isinstance(item, dict) else item for item in raw]
    return tuple(name for name in names if isinstance(name, str) and name)


def _comment(data: Any, where: str) -> tuple[int, PrComment]:
    if not isinstance(data, dict):
        raise DatasetError(f"{where}: a comment must be a JSON object, got {type(data).__name__}")
    number = -1
    url = data.get("issue_url")
    if isinstance(url, str) and url.rstrip("/").rsplit("/", 1)[-1].isdigit():
        number = int(url.rstrip("/").rsplit("/", 1)[-1])
    elif isinstance(data.get("issue_number"), int):
        number = data["issue_number"]
    comment = PrComment(
        _text(data, "body", where), parse_timestamp(data.get("created_at"), f"{where}: 'created_at'")
    )
    return number, comment


# -- problem statements --------------------------------------------------------------------


@dataclass(frozen=True)
class Statement:
    """What a task asks for, where that text came from, and the discussion that preceded the fix."""

    text: str
    source: str
    """"issue" (linked issue text), "pr" (PR title and body) or "commit" (the commit message), the last two
    cleaned of boilerplate (see `repogym.mining.statements.clean_message`)."""
    issue_numbers: tuple[int, ...] = ()
    hints: str = ""
    labels: tuple[str, ...] = ()
    """Labels of the PR and the linked issues, when the export has them."""


def describe_change(
    message: str, pull: PullRequest | None, export: PrExport | None, fixed_at: int
) -> Statement:
    """The problem statement by preference (linked issues, then the PR, then the commit message) and hints.

    Hints are the linked issues' comments created before `fixed_at` (when the fix
    was first written), oldest first.
    """
    numbers = linked_issue_numbers(*((pull.title, pull.body) if pull else ()), message)
    issues = [export.issues[n] for n in numbers if export is not None and n in export.issues]
    labels = tuple(
        dict.fromkeys([*(pull.labels if pull else ()), *(label for i in issues for label in i.labels)])
    )
    if issues:
        hints = sorted(
            (
                c
                for issue in issues
                for c in issue.comments
                if c.created_at is not None and c.created_at < fixed_at
            ),
            key=lambda comment: comment.created_at or 0,
        )
        text = "\n".join(issue.text for issue in issues)
        return Statement(text, "issue", numbers, "\n".join(comment.body for comment in hints), labels)
    if pull is not None and (pull.title or pull.body) and clean_message(pull.text):
        return Statement(clean_message(pull.text), "pr", numbers, labels=labels)
    return Statement(clean_message(message) or message.strip() + "\n", "commit", numbers, labels=labels)
