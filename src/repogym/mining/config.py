"""MiningConfig: every knob of `repogym mine`, each documented once, next to its field.

Path rules use gitignore-like patterns (see `repogym.mining.split.PathRules`):
a pattern ending in "/" names a folder anywhere in the path, a pattern with
no "/" matches the file name, any other pattern matches the whole path.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, time

from pydantic import Field, ValidationInfo, field_validator

from repogym.config import ConfigModel
from repogym.mining.kinds import parse_kinds

#: Every mining filter by name, in the order they are applied. The filters themselves
#: (`repogym.mining.filters`) are registered under these names and checked against this list when
#: that module loads; the list lives here so that `skip_filters` can be checked without importing them.
FILTER_NAMES: tuple[str, ...] = (
    "bot",
    "revert",
    "reverted_later",
    "empty",
    "lock_only",
    "docs_only",
    "vendored",
    "no_python_change",
    "no_test_change",
    "binary_change",
    "too_large",
    "merge_conflict",
    "duplicate",
)


class MiningConfig(ConfigModel):
    """How `repogym mine` walks a history, splits patches and filters candidates."""

    branch: str = "HEAD"
    """Revision whose first-parent line is mined (a branch, tag or sha)."""
    since: str = ""
    """Only commits committed at or after this ISO date/time (UTC when no offset); empty = no limit."""
    until: str = ""
    """Only commits committed at or before this ISO date/time (UTC when no offset); empty = no limit."""
    max_candidates: int = Field(default=0, ge=0)
    """Write at most this many candidates, the newest first; 0 = no limit. The rest are counted as over_max."""
    repo_name: str = ""
    """"owner/name" written in each task's `repo`; empty = from the origin remote's URL, else local/<folder>."""
    redact_secrets: bool = True
    """Replace secrets and personal data found by repogym.privacy before anything is written (a candidate whose
    secret cannot be redacted without breaking its patch is dropped as secret_unredactable). Licences are only
    recorded here; `repogym validate` enforces the allowlist."""

    test_paths: list[str] | None = None
    """Paths that belong to the test patch (they take precedence over docs_paths): None for repogym's rule,
    `repogym.testpaths.is_test_path` with support files (tests/ and test/ folders, a top-level testing/,
    test_*.py, *_test.py, conftest.py, tests.py); a list of gitignore-like patterns replaces it."""
    docs_paths: list[str] = Field(
        default_factory=lambda: [
            "docs/",
            "doc/",
            "*.md",
            "*.rst",
            "*.adoc",
            "CHANGELOG*",
            "CHANGES*",
            "HISTORY*",
            "NEWS*",
            "AUTHORS*",
            "changelog.d/",
            "newsfragments/",
        ]
    )
    """Documentation and changelog paths: dropped from the code patch (tasks never ask for docs)."""
    lock_paths: list[str] = Field(
        default_factory=lambda: [
            "poetry.lock",
            "Pipfile.lock",
            "uv.lock",
            "pdm.lock",
            "requirements*.txt",
            "constraints*.txt",
            "package-lock.json",
            "yarn.lock",
            "pnpm-lock.yaml",
            "Cargo.lock",
        ]
    )
    """Lock and pin files: a change touching only these (plus docs) is dropped as lock_only."""
    vendored_paths: list[str] = Field(
        default_factory=lambda: [
            "vendor/",
            "vendored/",
            "_vendor/",
            "third_party/",
            "node_modules/",
            "site-packages/",
            "*_pb2.py",
            "*_pb2_grpc.py",
            "*_pb2.pyi",
            "*.min.js",
            "*.min.css",
        ]
    )
    """Vendored or generated files: a change touching any of them is dropped (the fix is not the repo's own code)."""
    python_paths: list[str] = Field(default_factory=lambda: ["*.py", "*.pyi", "*.pyx"])
    """What counts as a Python change in the code patch."""

    bot_authors: list[str] = Field(
        default_factory=lambda: [
            r"\[bot\]",
            r"^dependabot",
            r"^renovate",
            r"^pre-commit-ci",
            r"^github-actions",
        ]
    )
    """Regular expressions (case-insensitive, searched) over the author name that mark a bot."""
    bot_titles: list[str] = Field(
        default_factory=lambda: [
            r"^bump\b",
            r"\[bot\]",
            r"^chore\(deps",
            r"^build\(deps",
            r"^\[pre-commit\.ci\]",
        ]
    )
    """Regular expressions (case-insensitive, searched) over the commit or PR title that mark a bot change."""

    max_files: int = Field(default=10, ge=1)
    """Largest number of files the code patch may touch; more is too_large."""
    max_lines: int = Field(default=500, ge=1)
    """Largest number of changed lines (added + removed) in the code patch; more is too_large."""
    max_test_lines: int = Field(default=2000, ge=1)
    """Largest number of changed lines in the test patch; more is too_large."""

    kinds: list[str] = Field(default_factory=lambda: ["fix", "feature", "refactor", "removal"])
    """Change kinds to keep: fix, feature, refactor, removal (see `repogym.mining.kinds`). Candidates of other
    kinds are counted in the funnel as kind_<kind>; every written candidate records its kind in metadata.
    `repogym mine` keeps only fixes unless --kinds, or this field in its config, says otherwise."""
    issue_writer: str = ""
    """'openai:MODEL' rewrites each problem statement with an OpenAI-compatible endpoint told not to reveal
    the fix (a rewrite that quotes the gold patch's added lines is rejected for the cleaned message);
    empty = the linked issue, else the cleaned PR or commit message."""
    issue_writer_base_url: str = ""
    """The issue writer's base URL, e.g. http://127.0.0.1:8000/v1 (default: $OPENAI_BASE_URL)."""
    issue_writer_max_tokens: int = Field(default=512, ge=1)
    """The longest statement the issue writer may write, in tokens."""

    skip_filters: list[str] = Field(default_factory=list)
    """Filters to switch off by name (see `FILTER_NAMES`), e.g. ["no_test_change"]."""
    merge_check_workers: int = Field(default=4, ge=1, le=64)
    """Parallel `git merge-tree` runs used to check merge candidates for conflict resolutions."""

    @field_validator("skip_filters")
    @classmethod
    def _known_filters(cls, names: list[str]) -> list[str]:
        unknown = [name for name in names if name not in FILTER_NAMES]
        if unknown:
            raise ValueError(f"unknown filter(s) {unknown}; known: {', '.join(FILTER_NAMES)}")
        return names

    @field_validator("kinds")
    @classmethod
    def _known_kinds(cls, names: list[str]) -> list[str]:
        kinds = parse_kinds(names)
        if not kinds:
            raise ValueError("keep at least one kind, e.g. ['fix']")
        return [kind.value for kind in kinds]

    @field_validator("issue_writer")
    @classmethod
    def _writer_spec(cls, value: str) -> str:
        if value and (not value.startswith("openai:") or not value.removeprefix("openai:")):
            raise ValueError(f"issue_writer must look like 'openai:MODEL', got {value!r}")
        return value

    @field_validator("bot_authors", "bot_titles")
    @classmethod
    def _regular_expressions(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"{pattern!r} is not a regular expression: {exc}") from None
        return patterns

    @field_validator("since", "until")
    @classmethod
    def _iso_date(cls, value: str, info: ValidationInfo) -> str:
        return normalise_date(value, end_of_day=info.field_name == "until") if value else value

    @field_validator("repo_name")
    @classmethod
    def _owner_slash_name(cls, value: str) -> str:
        if value and (value.count("/") != 1 or value.startswith("/") or value.endswith("/")):
            raise ValueError(f"repo_name must look like 'owner/name', got {value!r}")
        return value


def normalise_date(value: str, end_of_day: bool = False) -> str:
    """An ISO date or date-time as a full ISO date-time with offset (UTC when none is given).

    A bare date means the start of that day, or its last second with `end_of_day`
    (so `--until 2024-01-31` includes the 31st).

    >>> normalise_date("2024-01-31")
    '2024-01-31T00:00:00+00:00'
    >>> normalise_date("2024-01-31", end_of_day=True)
    '2024-01-31T23:59:59+00:00'
    >>> normalise_date("2024-01-31T10:00:00+02:00")
    '2024-01-31T10:00:00+02:00'
    >>> normalise_date("last week")
    Traceback (most recent call last):
    ...
    ValueError: expected an ISO date such as 2024-01-31 or 2024-01-31T12:00:00Z, got 'last week'
    """
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(
            f"expected an ISO date such as 2024-01-31 or 2024-01-31T12:00:00Z, got {value!r}"
        ) from None
    if len(value.strip()) == 10 and end_of_day:
        parsed = datetime.combine(parsed.date(), time(23, 59, 59))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.isoformat()
