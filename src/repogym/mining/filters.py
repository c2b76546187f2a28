"""Why a candidate change is not a task: one named filter per reason, applied in a fixed order.

A candidate is counted under the first filter that rejects it, so every commit
lands in exactly one row of the funnel. "paths" filters read only the changed
paths and the message (no file contents, so they run on every commit); "patch"
filters read the split patch of the survivors; `merge_conflict` asks git for an
automatic merge, and `duplicate` compares survivors with each other (both in
`repogym.mining.mine`). Any filter can be switched off with
`MiningConfig.skip_filters`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from repogym.mining.config import FILTER_NAMES, MiningConfig
from repogym.mining.history import Commit
from repogym.mining.prs import PullRequest
from repogym.mining.split import PathKind, PathRules, SplitPatch
from repogym.registry import Registry

_REVERTS = re.compile(r"This reverts commit ([0-9a-f]{7,40})")


@dataclass(frozen=True)
class PathSummary:
    """What a change touches, from its raw path list (mode-only changes left out)."""

    kinds: frozenset[PathKind]
    code_files: int
    """Files that would go to the code patch (code, lock and vendored files)."""
    python_code: bool
    submodule: bool

    @classmethod
    def of(cls, commit: Commit, rules: PathRules) -> PathSummary:
        kinds: set[PathKind] = set()
        code_files = 0
        python_code = submodule = False
        for status, old_mode, new_mode, old_blob, new_blob, path in commit.changes:
            if status == "M" and old_blob == new_blob and old_mode != new_mode:
                continue  # mode only (RawChange.mode_only, inlined: this runs for every path of every commit)
            kind, in_code_patch, python = rules.describe(path)
            kinds.add(kind)
            submodule = submodule or old_mode == "160000" or new_mode == "160000"
            code_files += in_code_patch
            python_code = python_code or python
        return cls(frozenset(kinds), code_files, python_code, submodule)


@dataclass(frozen=True)
class Candidate:
    """A change of the mined line that may become a task: a commit, or a merge with what it brought in."""

    commit: Commit
    instance_id: str
    pull: PullRequest | None
    pr_number: int | None
    paths: PathSummary
    split: SplitPatch | None = None
    """Filled in for survivors of the path filters."""
    undecodable: bool = False
    """The patch holds bytes that are not UTF-8 (a JSON row cannot carry them byte-exact)."""

    def with_split(self, split: SplitPatch, undecodable: bool) -> Candidate:
        """The candidate with its patch split (a direct constructor call: dataclasses.replace is slow in bulk)."""
        return Candidate(
            self.commit, self.instance_id, self.pull, self.pr_number, self.paths, split, undecodable
        )

    @property
    def kind(self) -> str:
        """ "pr_merge" (a merge with a PR number), "merge" (any other merge), or "commit" (squash merges too)."""
        if not self.commit.is_merge:
            return "commit"
        return "pr_merge" if self.pr_number is not None else "merge"


@dataclass(frozen=True)
class FilterContext:
    """What filters may consult beyond the candidate itself."""

    config: MiningConfig
    reverted: RevertedCommits = field(default_factory=lambda: RevertedCommits())
    """Commits named by the "This reverts commit ..." messages of newer commits."""
    bot_author: Callable[[str], object] = lambda name: None
    """Truthy when an author name looks like a bot (a compiled pattern's `search`)."""
    bot_title: Callable[[str], object] = lambda title: None
    """Truthy when a title looks like a bot's."""

    stages: dict[str, tuple[Filter, ...]] = field(default_factory=dict)
    """The enabled filters of each stage, in order."""

    def enabled(self, stage: str) -> tuple[Filter, ...]:
        return self.stages.get(stage, ())


def make_context(config: MiningConfig, reverted: RevertedCommits | None = None) -> FilterContext:
    authors = re.compile("|".join(config.bot_authors), re.IGNORECASE) if config.bot_authors else None
    titles = re.compile("|".join(config.bot_titles), re.IGNORECASE) if config.bot_titles else None
    skipped = set(config.skip_filters)
    stages: dict[str, tuple[Filter, ...]] = {}
    for check in ORDERED_FILTERS:
        if check.name not in skipped:
            stages[check.stage] = (*stages.get(check.stage, ()), check)
    return FilterContext(
        config,
        reverted if reverted is not None else RevertedCommits(),
        authors.search if authors else (lambda name: None),
        titles.search if titles else (lambda title: None),
        stages,
    )


class RevertedCommits:
    """Shas named by "This reverts commit ..." messages seen so far; abbreviated ones match by prefix."""

    def __init__(self) -> None:
        self._full: set[str] = set()
        self._abbreviated: list[str] = []

    def note(self, message: str) -> None:
        """Remember the commits a message says it reverts.

        >>> reverted = RevertedCommits()
        >>> reverted.note('Revert "Fix x"\\n\\nThis reverts commit 0123456789abcdef0123456789abcdef01234567.')
        >>> reverted.note("Revert y. This reverts commit abcdef1.")
        >>> ("0123456789abcdef0123456789abcdef01234567" in reverted, "abcdef1" + "0" * 33 in reverted, "f" * 40 in reverted)
        (True, True, False)
        """
        if "This reverts commit" in message:
            for sha in _REVERTS.findall(message):
                (self._full.add(sha) if len(sha) == 40 else self._abbreviated.append(sha))

    def __contains__(self, sha: object) -> bool:
        return isinstance(sha, str) and (
            sha in self._full or any(sha.startswith(prefix) for prefix in self._abbreviated)
        )


@dataclass(frozen=True)
class Filter:
    """One reason to reject a candidate (`mine` itself runs the "repo" and "set" stages; their `rejects` never fires)."""

    name: str
    stage: Literal["paths", "patch", "repo", "set"]
    description: str
    rejects: Callable[[Candidate, FilterContext], bool] = lambda candidate, context: False


FILTERS: Registry[Filter] = Registry("mining filter")
_ORDER: list[Filter] = []


def _add(filter_: Filter) -> None:
    FILTERS.add(filter_.name, filter_)
    _ORDER.append(filter_)


def _register(name: str, stage: Literal["paths", "patch", "repo", "set"], description: str):
    def decorator(
        function: Callable[[Candidate, FilterContext], bool],
    ) -> Callable[[Candidate, FilterContext], bool]:
        _add(Filter(name, stage, description, function))
        return function

    return decorator


@_register("bot", "paths", "made by a bot (author or title matches bot_authors / bot_titles)")
def _bot(candidate: Candidate, context: FilterContext) -> bool:
    pull = candidate.pull
    return bool(
        context.bot_author(candidate.commit.author_name)
        or context.bot_title(candidate.commit.subject)
        or (pull is not None and (context.bot_author(pull.author_login) or context.bot_title(pull.title)))
    )


@_register("revert", "paths", "reverts an earlier commit")
def _revert(candidate: Candidate, context: FilterContext) -> bool:
    return candidate.commit.subject.startswith("Revert ") or bool(_REVERTS.search(candidate.commit.message))


@_register("reverted_later", "paths", "was reverted by a later commit (the fix did not hold)")
def _reverted_later(candidate: Candidate, context: FilterContext) -> bool:
    return candidate.commit.sha in context.reverted


@_register("empty", "paths", "changes no file content (nothing, or only file modes)")
def _empty(candidate: Candidate, context: FilterContext) -> bool:
    return not candidate.paths.kinds


@_register("lock_only", "paths", "changes only lock or pin files (and maybe docs)")
def _lock_only(candidate: Candidate, context: FilterContext) -> bool:
    kinds = candidate.paths.kinds
    return PathKind.LOCK in kinds and kinds <= {PathKind.LOCK, PathKind.DOCS}


@_register("docs_only", "paths", "changes only documentation or changelogs")
def _docs_only(candidate: Candidate, context: FilterContext) -> bool:
    return candidate.paths.kinds == {PathKind.DOCS}


@_register("vendored", "paths", "touches vendored or generated files, or a submodule")
def _vendored(candidate: Candidate, context: FilterContext) -> bool:
    return PathKind.VENDORED in candidate.paths.kinds or candidate.paths.submodule


@_register("no_python_change", "paths", "the code patch would change no Python file")
def _no_python_change(candidate: Candidate, context: FilterContext) -> bool:
    return not candidate.paths.python_code


@_register("no_test_change", "paths", "changes no test file (nothing could prove the fix)")
def _no_test_change(candidate: Candidate, context: FilterContext) -> bool:
    return PathKind.TEST not in candidate.paths.kinds


@_register("binary_change", "patch", "the code patch changes a binary file, or a patch is not UTF-8 text")
def _binary_change(candidate: Candidate, context: FilterContext) -> bool:
    split = candidate.split
    return candidate.undecodable or (split is not None and any(diff.binary for diff in split.code))


@_register("too_large", "patch", "the code patch exceeds max_files or max_lines, or the tests max_test_lines")
def _too_large(candidate: Candidate, context: FilterContext) -> bool:
    split, config = candidate.split, context.config
    if split is None:
        return candidate.paths.code_files > config.max_files
    return (
        len(split.code) > config.max_files
        or split.code_lines > config.max_lines
        or split.test_lines > config.max_test_lines
    )


_add(
    Filter(
        "merge_conflict",
        "repo",
        "a merge whose result differs from git's automatic merge (conflict or hand edit)",
    )
)
_add(Filter("duplicate", "set", "same normalised diff as an older candidate"))

#: Every filter, in the order they are applied.
ORDERED_FILTERS: tuple[Filter, ...] = tuple(_ORDER)
if tuple(f.name for f in ORDERED_FILTERS) != FILTER_NAMES:
    # A programmer's error: a filter added here must be named in FILTER_NAMES, in its place.
    raise RuntimeError(
        f"mining filters {[f.name for f in ORDERED_FILTERS]} differ from "
        f"repogym.mining.config.FILTER_NAMES {list(FILTER_NAMES)}: keep them in one order"
    )


def first_rejection(candidate: Candidate, context: FilterContext, stage: str) -> str | None:
    """The name of the first enabled filter of `stage` that rejects the candidate, or None."""
    for check in context.enabled(stage):
        if check.rejects(candidate, context):
            return check.name
    return None
