"""The PR/issue export written beside a sample repository, in the GitHub REST API's JSON shape.

File format (one JSON object per line, sorted by number; issues and pulls share
one number sequence, as on GitHub):

* A **pull** is an object from the Pulls API (``GET /repos/{o}/{r}/pulls/{n}``).
  It is recognised by the key ``"merge_commit_sha"`` (it also has ``"head"`` and
  ``"base"``). Keys written: ``number, title, body, state ("closed"), created_at,
  closed_at, merged_at, merge_commit_sha, base {ref, sha}, head {ref, sha},
  user {login}, html_url, comments``. ``base.sha`` is the merge commit's first
  parent, ``head.sha`` the tip of the PR branch. The body links issues the way
  GitHub does: "Fixes #12". ``comments`` is a list of conversation comments
  ``{user {login}, body, created_at}`` (the API itself only gives a count here;
  exporters such as ``gh pr view --json comments`` give the list).
* An **issue** is an object from the Issues API (``GET /repos/{o}/{r}/issues/{n}``)
  without ``"merge_commit_sha"``: ``number, title, body, state, created_at,
  closed_at, user {login}, labels [{name}], html_url, comments``. Comments are
  ``{user {login}, body, created_at}``, oldest first; those created before the
  fix was merged are the discussion a miner may use as hints, later ones
  ("Fixed in #13") are not. The Issues API also lists every pull as an issue
  carrying a ``"pull_request"`` key; readers should treat such a row as the
  issue-side view of that pull. This generator writes none, but real exports
  made with the Issues API contain them.

Times are ISO 8601 in UTC with a trailing "Z", as GitHub writes them.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repogym.errors import DatasetError
from repogym.files import write_jsonl


def iso(epoch: int) -> str:
    """GitHub's timestamp form.

    >>> iso(0)
    '1970-01-01T00:00:00Z'
    """
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class SampleComment:
    login: str
    body: str
    when: int

    def to_github(self) -> dict[str, Any]:
        return {"user": {"login": self.login}, "body": self.body, "created_at": iso(self.when)}


@dataclass(frozen=True)
class IssuePlan:
    number: int
    title: str
    body: str
    login: str
    opened: int
    closed: int | None
    labels: tuple[str, ...] = ()
    comments: tuple[SampleComment, ...] = ()

    def to_github(self, base_url: str) -> dict[str, Any]:
        return {
            "number": self.number,
            "title": self.title,
            "body": self.body,
            "state": "closed" if self.closed is not None else "open",
            "created_at": iso(self.opened),
            "closed_at": iso(self.closed) if self.closed is not None else None,
            "user": {"login": self.login},
            "labels": [{"name": label} for label in self.labels],
            "html_url": f"{base_url}/issues/{self.number}",
            "comments": [comment.to_github() for comment in self.comments],
        }


@dataclass(frozen=True)
class PullPlan:
    """A merged pull request; commits are named by planner keys until the shas are known."""

    number: int
    title: str
    body: str
    login: str
    branch: str
    opened: int
    merged: int
    head_key: str
    base_key: str
    merge_key: str
    comments: tuple[SampleComment, ...] = field(default=())

    def to_github(self, base_url: str, shas: Mapping[str, str], base_ref: str = "main") -> dict[str, Any]:
        return {
            "number": self.number,
            "title": self.title,
            "body": self.body,
            "state": "closed",
            "created_at": iso(self.opened),
            "closed_at": iso(self.merged),
            "merged_at": iso(self.merged),
            "merge_commit_sha": shas[self.merge_key],
            "base": {"ref": base_ref, "sha": shas[self.base_key]},
            "head": {"ref": self.branch, "sha": shas[self.head_key]},
            "user": {"login": self.login},
            "html_url": f"{base_url}/pull/{self.number}",
            "comments": [comment.to_github() for comment in self.comments],
        }


def write_export(
    path: Path, pulls: Iterable[PullPlan], issues: Iterable[IssuePlan], base_url: str, shas: Mapping[str, str]
) -> int:
    """Write the export JSONL; returns the number of rows."""
    rows = [pull.to_github(base_url, shas) for pull in pulls]
    rows += [issue.to_github(base_url) for issue in issues]
    rows.sort(key=lambda row: row["number"])
    return write_jsonl(path, rows)


def read_export(path: Path) -> tuple[dict[int, dict[str, Any]], dict[int, dict[str, Any]]]:
    """(pulls by number, issues by number) of an export file, split by the rule in the module docstring."""
    pulls: dict[int, dict[str, Any]] = {}
    issues: dict[int, dict[str, Any]] = {}
    with open(path, encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path}:{line_number}: not JSON: {exc}") from None
            if not isinstance(row, dict) or not isinstance(row.get("number"), int):
                raise DatasetError(f"{path}:{line_number}: expected an object with an integer 'number'")
            if "merge_commit_sha" in row:
                pulls[row["number"]] = row
            elif "pull_request" not in row:
                issues[row["number"]] = row
    return pulls, issues
