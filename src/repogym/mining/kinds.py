"""Fix, feature, refactor or removal: what a mined change is, from its words and its diff's shape.

Only fixes make bug-fix tasks; a feature's new tests also fail before it, so
validation alone cannot tell them apart. `classify_change` scores each kind
from cues, each a named, weighted piece of evidence:

- the words: a Conventional Commits type ("fix:", "feat:"), the subject's
  first verb ("Fix", "Add", "Refactor", "Remove"), bug words anywhere
  ("regression", "crash", "again"), closing references ("fixes #12"), PR and
  issue labels from an export ("bug", "enhancement");
- the changelog: towncrier fragment types (`changelog/123.bugfix.rst`) and
  the first verb of bullets added to a CHANGES file;
- the diff: public functions or classes added (feature) or removed (removal),
  deprecation warnings added (removal), new test functions versus edits to
  existing ones, and how much code is added against removed.

Scores start from a prior and each cue adds its weight; the confidence is the
winner's share after a softmax. The weights were set by hand before the
labelled sample in tests/mining/data was read (see docs/benchmarks.md for the
measured precision and recall). Written by hand: no library classifies commits
this way offline.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass


class ChangeKind(enum.StrEnum):
    """What a change does."""

    FIX = "fix"
    """Corrects behaviour that was wrong: the only kind that makes a bug-fix task."""
    FEATURE = "feature"
    """Adds behaviour or API."""
    REFACTOR = "refactor"
    """Changes structure, style, typing or internals without meaning to change behaviour."""
    REMOVAL = "removal"
    """Removes or deprecates behaviour or API."""


_PRIOR = {ChangeKind.FIX: 1.0, ChangeKind.FEATURE: 0.6, ChangeKind.REFACTOR: 0.4, ChangeKind.REMOVAL: 0.2}

_CONVENTIONAL = re.compile(
    r"^\s*(fix|bugfix|hotfix|feat|feature|refactor|perf|style|chore|build|ci|test|tests|docs|revert)(\([^)]*\))?!?:",
    re.I,
)
_CONVENTIONAL_KIND = {
    "fix": ChangeKind.FIX, "bugfix": ChangeKind.FIX, "hotfix": ChangeKind.FIX, "feat": ChangeKind.FEATURE,
    "feature": ChangeKind.FEATURE, "refactor": ChangeKind.REFACTOR, "perf": ChangeKind.REFACTOR,
    "style": ChangeKind.REFACTOR, "chore": ChangeKind.REFACTOR, "build": ChangeKind.REFACTOR,
    "ci": ChangeKind.REFACTOR, "test": ChangeKind.REFACTOR, "tests": ChangeKind.REFACTOR, "docs": ChangeKind.REFACTOR,
}  # fmt: skip
# The subject's first word (after a Conventional Commits prefix or "[tag]"), by kind.
_FIRST_VERBS = {
    ChangeKind.FIX: "fix fixes fixed fixing bugfix hotfix correct corrects correctly resolve resolves repair prevent "
    "prevents avoid avoids handle handles restore restores respect respects honour honor ensure ensures guard "
    "don't dont do not stop stops reject rejects catch",
    ChangeKind.FEATURE: "add adds added adding support supports implement implements introduce introduces allow allows "
    "enable enables new expose exposes provide provides extend extends accept accepts let lets",
    ChangeKind.REFACTOR: "refactor refactors refactored refactoring cleanup clean simplify simplifies rename renames "
    "move moves reorganize reorganise restructure tidy use uses replace replaces switch modernize modernise type "
    "typing annotate lint format reformat migrate convert split extract unify dedupe deduplicate optimize optimise "
    "speed improve improves update updates bump internal polish minor",
    ChangeKind.REMOVAL: "remove removes removed removing drop drops dropped delete deletes deprecate deprecates "
    "deprecated kill retire",
}
_FIRST_VERB = {word: kind for kind, words in _FIRST_VERBS.items() for word in words.split()}
_BUG_WORDS = re.compile(
    r"\b(bug|bugs|regression|crash(es|ed)?|incorrect(ly)?|wrong(ly)?|broken|breaks?|fail(s|ed|ing|ure)?|"
    r"error|exception|traceback|typo|leak(s|ed)?|race|hang(s)?|again|erroneous(ly)?|mistaken(ly)?|issue)\b",
    re.I,
)
_CLOSING = re.compile(r"\b(close[sd]?|fix(e[sd])?|resolve[sd]?)\b:?\s+(#|https?://\S+/issues/)\d+", re.I)
_LABELS = {
    ChangeKind.FIX: ("bug", "type: bug", "kind/bug", "bugfix", "regression", "type: regression"),
    ChangeKind.FEATURE: ("enhancement", "feature", "type: enhancement", "type: feature", "kind/feature"),
    ChangeKind.REFACTOR: ("refactor", "cleanup", "chore", "type: refactoring", "internal", "maintenance"),
    ChangeKind.REMOVAL: ("deprecation", "removal", "breaking", "type: deprecation", "type: removal"),
}
_FRAGMENT = re.compile(r"(?:^|/)[^/]*?\.(bugfix|bug|fix|feature|improvement|enhancement|removal|deprecation|breaking|trivial|misc|doc|vendor|contrib|packaging)(?:\.\d+)?\.(?:rst|md|txt)$", re.I)  # fmt: skip
_FRAGMENT_KIND = {
    "bugfix": ChangeKind.FIX, "bug": ChangeKind.FIX, "fix": ChangeKind.FIX, "feature": ChangeKind.FEATURE,
    "improvement": ChangeKind.FEATURE, "enhancement": ChangeKind.FEATURE, "removal": ChangeKind.REMOVAL,
    "deprecation": ChangeKind.REMOVAL, "breaking": ChangeKind.REMOVAL, "trivial": ChangeKind.REFACTOR,
    "misc": ChangeKind.REFACTOR, "doc": ChangeKind.REFACTOR, "vendor": ChangeKind.REFACTOR,
    "contrib": ChangeKind.REFACTOR, "packaging": ChangeKind.REFACTOR,
}  # fmt: skip
_CHANGELOG_BULLET = re.compile(r"^\+\s*(?:[-*]|\d+\.)\s+(?:`[^`]*`\s*)?([A-Za-z']+)(?=[\s:,]|$)", re.M)
# A whole word: "format_duration()" does not start with the verb "format".
_FIRST_WORD = re.compile(r"[A-Za-z']+(?=[\s:,]|$)")
_PUBLIC_DEF = re.compile(r"^([+-])(?:    )?(?:async\s+)?(def|class)\s+([A-Za-z][A-Za-z0-9_]*)", re.M)
_TEST_DEF = re.compile(r"^([+-])\s*(?:async\s+)?def\s+(test_\w*)", re.M)
_DEPRECATION = re.compile(
    r"^\+.*\b(\w*DeprecationWarning|deprecated?|warn_deprecated|RemovedIn\w+)\b", re.M | re.I
)
_CHANGED = re.compile(r"^[-+](?![-+]{2} )", re.M)


@dataclass(frozen=True)
class ChangeClassification:
    """A change's kind, how sure the classifier is, and the cues that decided it."""

    kind: ChangeKind
    confidence: float
    """The winning kind's share (softmax of the scores), between 0.25 and 1."""
    cues: tuple[str, ...]
    """Each cue as 'kind:name', e.g. 'fix:subject_verb', 'feature:new_public_api'."""


@dataclass
class _Scores:
    values: dict[ChangeKind, float]
    cues: list[str]

    def add(self, kind: ChangeKind, weight: float, name: str) -> None:
        self.values[kind] += weight
        self.cues.append(f"{kind.value}:{name}")


def classify_change(
    message: str,
    code_patch: str = "",
    test_patch: str = "",
    docs: Iterable[tuple[str, str]] = (),
    labels: Iterable[str] = (),
    pr_title: str = "",
) -> ChangeClassification:
    """The kind of a change from its message, its code and test patches, its docs diffs (path, text) and labels.

    >>> classify_change("Fix crash when the config file is empty").kind
    <ChangeKind.FIX: 'fix'>
    >>> patch = "+++ b/lib.py\\n+def parse_many(items):\\n+    return [parse(i) for i in items]\\n"
    >>> classify_change("Add parse_many()", patch, "+def test_parse_many():\\n+    assert parse_many([])== []\\n").kind
    <ChangeKind.FEATURE: 'feature'>
    >>> classify_change("Deprecate the old loader", "+    warnings.warn('x', DeprecationWarning)\\n").kind
    <ChangeKind.REMOVAL: 'removal'>
    """
    scores = _Scores(dict(_PRIOR), [])
    subject = _subject(pr_title or message)
    _words(scores, subject, message)
    for label in labels:
        for kind, names in _LABELS.items():
            if label.strip().lower() in names:
                scores.add(kind, 3.0, f"label={label.strip().lower()}")
    _changelog(scores, docs)
    _shape(scores, code_patch, test_patch)
    return _decide(scores)


def _subject(message: str) -> str:
    """The first line that says something (a GitHub merge's own line skipped)."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    if lines and re.match(r"^Merge (pull request #\d+|branch|remote-tracking branch)\b", lines[0]):
        lines = lines[1:]
    return lines[0] if lines else ""


def _words(scores: _Scores, subject: str, message: str) -> None:
    conventional = _CONVENTIONAL.match(subject)
    if conventional and conventional.group(1).lower() in _CONVENTIONAL_KIND:
        scores.add(_CONVENTIONAL_KIND[conventional.group(1).lower()], 3.0, "conventional_type")
    bare = re.sub(r"^\s*(\[[^\]]*\]\s*|[\w-]+(\([^)]*\))?!?:\s*)*", "", subject)
    first = _FIRST_WORD.match(bare)
    if first:
        word = first.group(0).lower()
        if word == "do" and re.match(r"do\s+not\b", bare, re.I):
            word = "don't"
        if word in _FIRST_VERB:
            scores.add(_FIRST_VERB[word], 2.0, "subject_verb")
    bug_words = {m.group(0).lower() for m in _BUG_WORDS.finditer(subject)}
    if bug_words:
        scores.add(ChangeKind.FIX, min(2.0, 1.0 * len(bug_words)), "bug_words_in_subject")
    body = message.split("\n", 1)[1] if "\n" in message else ""
    if _CLOSING.search(message):
        scores.add(ChangeKind.FIX, 1.0, "closes_issue")
    if len({m.group(0).lower() for m in _BUG_WORDS.finditer(body)}) >= 2:
        scores.add(ChangeKind.FIX, 0.5, "bug_words_in_body")


def _changelog(scores: _Scores, docs: Iterable[tuple[str, str]]) -> None:
    for path, text in docs:
        fragment = _FRAGMENT.search(path)
        if fragment and fragment.group(1).lower() in _FRAGMENT_KIND:
            scores.add(
                _FRAGMENT_KIND[fragment.group(1).lower()], 4.0, f"changelog_{fragment.group(1).lower()}"
            )
            continue
        name = path.rsplit("/", 1)[-1].upper()
        if name.startswith(("CHANGES", "CHANGELOG", "HISTORY", "NEWS")):
            for bullet in _CHANGELOG_BULLET.finditer(text):
                word = bullet.group(1).lower()
                if word in _FIRST_VERB:
                    scores.add(_FIRST_VERB[word], 2.0, "changelog_bullet")
                    break


def _shape(scores: _Scores, code_patch: str, test_patch: str) -> None:
    added_defs = {m.group(3) for m in _PUBLIC_DEF.finditer(code_patch) if m.group(1) == "+"}
    removed_defs = {m.group(3) for m in _PUBLIC_DEF.finditer(code_patch) if m.group(1) == "-"}
    public_new = {name for name in added_defs - removed_defs if not name.startswith("_")}
    public_gone = {name for name in removed_defs - added_defs if not name.startswith("_")}
    if public_new:
        scores.add(ChangeKind.FEATURE, min(3.0, 1.5 * len(public_new)), "new_public_api")
    if public_gone:
        scores.add(ChangeKind.REMOVAL, min(3.0, 1.5 * len(public_gone)), "removed_public_api")
    if _DEPRECATION.search(code_patch):
        scores.add(ChangeKind.REMOVAL, 2.0, "deprecation_added")
    added = sum(1 for line in _CHANGED.findall(code_patch) if line == "+")
    removed = sum(1 for line in _CHANGED.findall(code_patch) if line == "-")
    tests_added = {m.group(2) for m in _TEST_DEF.finditer(test_patch) if m.group(1) == "+"}
    tests_removed = {m.group(2) for m in _TEST_DEF.finditer(test_patch) if m.group(1) == "-"}
    new_tests = tests_added - tests_removed
    if removed >= 20 and removed > 2 * added:
        scores.add(ChangeKind.REMOVAL, 1.0, "mostly_deletions")
    elif added >= 40 and added > 5 * max(1, removed):
        scores.add(ChangeKind.FEATURE, 1.0, "mostly_additions")
    elif removed > 0 and added + removed <= 12 and len(new_tests) <= 2 and not public_new:
        scores.add(ChangeKind.FIX, 1.0, "small_edit_of_existing_code")
    if len(new_tests) >= 4:
        scores.add(ChangeKind.FEATURE, 1.0, "many_new_tests")
    if not new_tests and tests_removed - tests_added and added + removed >= 40:
        scores.add(ChangeKind.REFACTOR, 0.5, "tests_only_edited")


def _decide(scores: _Scores) -> ChangeClassification:
    top = max(scores.values.values())
    exp = {kind: math.exp(value - top) for kind, value in scores.values.items()}
    total = sum(exp.values())
    # Ties go to the kind listed first (fix): a change with no cue at all is taken for what was mined for.
    kind = max(ChangeKind, key=lambda k: (scores.values[k], -list(ChangeKind).index(k)))
    return ChangeClassification(kind, round(exp[kind] / total, 3), tuple(scores.cues))


def parse_kinds(value: str | Iterable[str]) -> tuple[ChangeKind, ...]:
    """Kinds from "fix,feature" (or a list); an unknown one raises ValueError naming the known ones.

    >>> parse_kinds("fix, feature")
    (<ChangeKind.FIX: 'fix'>, <ChangeKind.FEATURE: 'feature'>)
    """
    names = [part.strip().lower() for part in (value.split(",") if isinstance(value, str) else value)]
    known = [kind.value for kind in ChangeKind]
    unknown = [name for name in names if name and name not in known]
    if unknown:
        raise ValueError(f"unknown change kind(s) {unknown}; known: {', '.join(known)}")
    return tuple(dict.fromkeys(ChangeKind(name) for name in names if name))
