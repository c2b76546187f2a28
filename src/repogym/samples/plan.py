"""The in-memory plan of a sample repository's history, and pure helpers over it.

Every commit carries its full tree; commits are named by keys until git gives
them shas. `repogym.samples.timeline` builds a plan, `repogym.samples.fastimport`
writes it.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass, field

from repogym.samples.model import CommitKind, FixKind
from repogym.samples.people import Person
from repogym.samples.prs import IssuePlan, PullPlan
from repogym.samples.scaffold import SampleProject
from repogym.samples.spec import BugSpec, collect_test_names

HOUR = 3600


@dataclass
class PlannedCommit:
    key: str
    ref: str
    parents: tuple[str, ...]
    author: Person
    committer: Person
    when: int
    message: str
    files: dict[str, str]
    kind: CommitKind
    tag: str = ""


@dataclass
class PlannedFix:
    bug: BugSpec
    kind: FixKind
    bug_key: str
    fix_key: str = ""
    base_key: str = ""
    pr_number: int | None = None
    issue_number: int | None = None
    branch_keys: tuple[str, ...] = ()
    contains_secret: bool = False


@dataclass
class PlannedSecret:
    value: str
    kind: str
    path: str
    block: str
    added_key: str = ""
    removed_key: str = ""


@dataclass
class Plan:
    project: SampleProject
    commits: list[PlannedCommit] = field(default_factory=list)
    fixes: list[PlannedFix] = field(default_factory=list)
    secret: PlannedSecret | None = None
    pulls: list[PullPlan] = field(default_factory=list)
    issues: list[IssuePlan] = field(default_factory=list)
    branches: list[str] = field(default_factory=list)
    """PR branches, deleted after their merge like on GitHub."""

    def commit(self, key: str) -> PlannedCommit:
        return next(commit for commit in self.commits if commit.key == key)


def make_secret(rng: random.Random, path: str) -> PlannedSecret:
    """A GitHub token or AWS access key id that detect-secrets recognises, with the lines that leak it."""
    if rng.random() < 0.5:
        value = "ghp_" + "".join(rng.choices(string.ascii_letters + string.digits, k=36))
        line = f'UPLOAD_TOKEN = "{value}"'
        kind = "github-token"
    else:
        value = "AKIA" + "".join(rng.choices(string.ascii_uppercase + string.digits, k=16))
        line = f'AWS_ACCESS_KEY_ID = "{value}"'
        kind = "aws-access-key"
    block = f"# Temporary: credentials for the nightly upload job; move them to CI secrets.\n{line}"
    return PlannedSecret(value=value, kind=kind, path=path, block=block)


def three_way_merge(
    base: dict[str, str], ours: dict[str, str], theirs: dict[str, str], what: str
) -> dict[str, str]:
    """Whole-file three-way merge; a file changed on both sides is a defect of the plan.

    >>> three_way_merge({"a": "1", "b": "1"}, {"a": "2", "b": "1"}, {"a": "1", "b": "3"}, "x")
    {'a': '2', 'b': '3'}
    """
    merged: dict[str, str] = {}
    for path in sorted(set(base) | set(ours) | set(theirs)):
        old, mine, other = base.get(path), ours.get(path), theirs.get(path)
        if mine == other or other == old:
            value = mine
        elif mine == old:
            value = other
        else:
            raise ValueError(f"{what}: {path} changed on both sides of the merge")
        if value is not None:
            merged[path] = value
    return merged


def fix_tests(
    plan: Plan, fix: PlannedFix
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(code files, test files, doc files, FAIL_TO_PASS, PASS_TO_PASS) of a planned fix, from its trees."""
    before, after = plan.commit(fix.base_key).files, plan.commit(fix.fix_key).files
    changed = sorted(path for path in set(before) | set(after) if before.get(path) != after.get(path))
    tests = tuple(path for path in changed if path.startswith("tests/"))
    code = tuple(path for path in changed if path.endswith(".py") and path not in tests)
    docs = tuple(path for path in changed if path not in tests and path not in code)
    failing = tuple(f"{fix.bug.test_path}::{name}" for name in fix.bug.test_names)
    passing = tuple(
        f"{path}::{name}"
        for path in tests
        for name in collect_test_names(after[path])
        if f"{path}::{name}" not in failing
    )
    return code, tests, docs, failing, passing


def fix_kinds(count: int, with_prs: bool, rng: random.Random) -> list[FixKind]:
    """How each fix lands: both kinds appear when there are two or more fixes and PRs are on."""
    if not with_prs or count < 2:
        return [FixKind.COMMIT] * count
    kinds = [FixKind.COMMIT, FixKind.PR, *(rng.choice(list(FixKind)) for _ in range(count - 2))]
    rng.shuffle(kinds)
    return kinds
