"""What a generated sample repository contains, for tests to check mining, validation and scrubbing against.

The manifest is the answer key: it lives outside the repository (nothing in
the repository reveals it) and is written with `SampleRepo.write_manifest`.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from repogym.errors import ConfigError, DatasetError
from repogym.files import write_json


class FixKind(enum.StrEnum):
    COMMIT = "commit"
    """A single commit on the main branch changes the code and adds the regression test."""
    PR = "pr"
    """A feature branch merged with a merge commit "Merge pull request #N from user/branch"."""


class CommitKind(enum.StrEnum):
    """Why a commit is in the history; every commit of a sample repository has exactly one."""

    INITIAL = "initial"
    FEATURE = "feature"
    """New code and its tests (a valid candidate too: its new tests fail before it)."""
    DOCS = "docs"
    BUG = "bug"
    """Introduces a planted bug; no existing test notices."""
    REFACTOR = "refactor"
    BOT = "bot"
    TESTS = "tests"
    FIX = "fix"
    """A planted fix: the commit itself, or the merge commit of a PR."""
    PR_BRANCH = "pr-branch"
    """A commit on a PR's branch (reachable only through the merge's second parent)."""
    SECRET_REMOVAL = "secret-removal"


@dataclass(frozen=True)
class PlantedFix:
    """One planted bug and its fix."""

    slug: str
    kind: FixKind
    fix_commit: str
    """The fix commit, or the merge commit for a PR fix."""
    base_commit: str
    """The fix's first parent: the state the task starts from."""
    bug_commit: str
    """The commit that introduced the bug."""
    title: str
    code_files: tuple[str, ...]
    test_files: tuple[str, ...]
    doc_files: tuple[str, ...]
    """Non-Python files the fix also touches (the changelog)."""
    FAIL_TO_PASS: tuple[str, ...]
    """pytest node ids that fail at base_commit with the fix's test files and pass at fix_commit."""
    PASS_TO_PASS: tuple[str, ...]
    """The other tests of the fix's test files: they pass at both."""
    pr_number: int | None = None
    issue_number: int | None = None
    branch_commits: tuple[str, ...] = ()
    contains_secret: bool = False
    """The fix's code change also adds the planted secret."""

    @property
    def fail_to_pass(self) -> tuple[str, ...]:
        return self.FAIL_TO_PASS

    @property
    def pass_to_pass(self) -> tuple[str, ...]:
        return self.PASS_TO_PASS


@dataclass(frozen=True)
class PlantedSecret:
    value: str
    kind: str
    """"github-token" or "aws-access-key"."""
    path: str
    added_in: str
    removed_in: str


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    kind: CommitKind
    subject: str


@dataclass(frozen=True)
class SampleRepo:
    """A generated repository and its answer key."""

    path: Path
    name: str
    package: str
    library: str
    """The library kind ("intervals", "calculator", ...)."""
    seed: int
    license: str
    """SPDX id of the licence in LICENSE and pyproject.toml."""
    github: str
    """The fictional "owner/name" the PR export's URLs point at."""
    branch: str
    head: str
    prs_path: Path | None
    fixes: tuple[PlantedFix, ...]
    secret: PlantedSecret
    commits: tuple[CommitInfo, ...]
    """Every commit of the repository, oldest first, each with its kind."""

    def shas(self, kind: CommitKind) -> tuple[str, ...]:
        return tuple(commit.sha for commit in self.commits if commit.kind == kind)

    @property
    def bot_commits(self) -> tuple[str, ...]:
        return self.shas(CommitKind.BOT)

    @property
    def docs_commits(self) -> tuple[str, ...]:
        return self.shas(CommitKind.DOCS)

    @property
    def refactor_commits(self) -> tuple[str, ...]:
        return self.shas(CommitKind.REFACTOR)

    @property
    def tests_only_commits(self) -> tuple[str, ...]:
        return self.shas(CommitKind.TESTS)

    @property
    def feature_commits(self) -> tuple[str, ...]:
        return self.shas(CommitKind.FEATURE)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["path"] = str(self.path)
        data["prs_path"] = str(self.prs_path) if self.prs_path else None
        for name in (
            "bot_commits",
            "docs_commits",
            "refactor_commits",
            "tests_only_commits",
            "feature_commits",
        ):
            data[name] = list(getattr(self, name))
        return json.loads(json.dumps(data))  # tuples -> lists, enums -> strings

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "manifest") -> SampleRepo:
        try:
            fixes = tuple(
                PlantedFix(**{**fix, "kind": FixKind(fix["kind"])} | _tuples(fix)) for fix in data["fixes"]
            )
            commits = tuple(
                CommitInfo(c["sha"], CommitKind(c["kind"]), c["subject"]) for c in data["commits"]
            )
            return cls(
                path=Path(data["path"]),
                name=data["name"],
                package=data["package"],
                library=data["library"],
                seed=data["seed"],
                license=data["license"],
                github=data["github"],
                branch=data["branch"],
                head=data["head"],
                prs_path=Path(data["prs_path"]) if data.get("prs_path") else None,
                fixes=fixes,
                secret=PlantedSecret(**data["secret"]),
                commits=commits,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise DatasetError(f"{where}: not a sample-repo manifest: {exc!r}") from None

    def write_manifest(self, path: str | Path) -> Path:
        """Write the answer key as JSON; refuses a path inside the repository."""
        target = Path(path).resolve()
        if target.is_relative_to(self.path.resolve()):
            raise ConfigError(f"manifest path {path}: must be outside the repository {self.path}")
        write_json(target, self.to_dict())
        return target


def _tuples(fix: Mapping[str, Any]) -> dict[str, Any]:
    names = ("code_files", "test_files", "doc_files", "FAIL_TO_PASS", "PASS_TO_PASS", "branch_commits")
    return {name: tuple(fix[name]) for name in names if name in fix}


def load_manifest(path: str | Path) -> SampleRepo:
    """Read a manifest written by `SampleRepo.write_manifest`."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DatasetError(f"{path}: cannot read manifest: {exc}") from None
    return SampleRepo.from_dict(data, where=str(path))
