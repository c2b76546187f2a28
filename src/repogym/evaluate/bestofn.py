"""Best-of-n: pick one attempt per task among its n (`repogym eval -n K --select ...`), scored as best@K.

Selections (`--select`):

- `verifier:V`: the highest p(YES) of the verifier in folder V.
- `tests`: the most of the task's PASS_TO_PASS tests passed, graded in the sandbox (`visible_tests`); only
  tests that exist before the fix count, never FAIL_TO_PASS, never the gold patch.
- `majority`: the attempt whose normalised diff the most attempts share (SWE-bench-style majority vote).
- `hybrid:V`: the tests first, the verifier V second.

Rules every selection follows: an attempt without a diff never wins unless no attempt has one; ties go to the
earliest attempt (attempt 0 first; for `majority`, the first occurrence of the winning diff). Each attempt is
scored once per distinct diff. best@K is the share of tasks whose picked attempt resolved, so it lies between
what one attempt gets (pass@1, in expectation) and the ceiling of any attempt resolving (pass@K).

The verifier is not imported here (it sits above `evaluate`): the CLI loads it and hands its scoring in as
`Selection.verifier_scores`.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from repogym.errors import ConfigError
from repogym.evaluate.visible_tests import visible_tests_passed
from repogym.sandbox.pool import RuntimePool
from repogym.task import Task

#: p(YES) for each (task, diff), in order: `repogym.verifier.score.score_attempts` bound to a loaded verifier.
VerifierScores = Callable[[Sequence[tuple[Task, str]]], list[float]]

#: Selection kind -> whether it names a verifier folder (`kind:V`).
KINDS = {"verifier": True, "tests": False, "majority": False, "hybrid": True}
SPELLINGS = "verifier:V, tests, majority, hybrid:V (V: a verifier folder)"


@dataclass(frozen=True)
class Selection:
    """How best-of-n picks an attempt: `kind` (verifier, tests, majority, hybrid) and, for verifier and hybrid,
    the verifier's folder and its scoring."""

    kind: str
    verifier: str = ""
    """The verifier folder (`--select verifier:V`, `hybrid:V`); '' for tests and majority."""
    verifier_scores: VerifierScores | None = None

    @classmethod
    def parse(cls, spec: str, n: int) -> Selection:
        """`--select` as given, checked against the attempts per task (`-n`); the verifier is not loaded here.

        >>> Selection.parse("hybrid:runs/v", 4).verifier
        'runs/v'
        """
        kind, colon, folder = spec.partition(":")
        if kind not in KINDS:
            raise ConfigError(f"--select {spec!r}: unknown selection; use one of {SPELLINGS}")
        if KINDS[kind] and not folder:
            raise ConfigError(
                f"--select {spec!r}: name the verifier folder, e.g. --select {kind}:runs/verifier"
            )
        if colon and not KINDS[kind]:
            raise ConfigError(f"--select {spec!r}: {kind} takes no argument; use --select {kind}")
        if n < 2:
            raise ConfigError(
                f"--select {spec}: best-of-n needs -n 2 or more attempts per task to choose among (got -n {n})"
            )
        return cls(kind, folder)

    @property
    def spec(self) -> str:
        return f"{self.kind}:{self.verifier}" if self.verifier else self.kind

    @property
    def criteria(self) -> tuple[str, ...]:
        """What ranks attempts, most important first: the keys of a pick's `score`."""
        return {"verifier": ("verifier",), "tests": ("tests_passed",), "majority": ("votes",),
                "hybrid": ("tests_passed", "verifier")}[self.kind]  # fmt: skip


@dataclass(frozen=True)
class Attempted:
    """One attempt as a selection sees it: its number, its final diff and (for the score only) whether it
    resolved. Selections never read `resolved`."""

    attempt: int
    diff: str
    resolved: bool

    @property
    def has_diff(self) -> bool:
        return bool(self.diff.strip())


@dataclass(frozen=True)
class Pick:
    """The attempt a selection picked for one task, and what every attempt scored."""

    attempt: int
    resolved: bool
    score: dict[str, float | None]
    """Criterion -> the picked attempt's score."""
    scores: dict[str, list[float | None]]
    """Criterion -> per attempt, in attempt order (None: no diff, not scored)."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def normalised_diff(diff: str) -> str:
    """A diff as the majority vote compares it: its +/- and context lines with trailing blanks cut, hunk
    headers without line numbers, and no `diff --git` / `index` lines or empty lines.

    >>> a = "diff --git a/m.py b/m.py\\nindex 1..2 100644\\n--- a/m.py\\n+++ b/m.py\\n@@ -1 +1 @@\\n-x = 1 \\n+x = 2\\n"
    >>> normalised_diff(a) == normalised_diff(a.replace("@@ -1 +1 @@", "@@ -3 +3 @@").replace("1 \\n", "1\\n"))
    True
    """
    kept = []
    for line in diff.splitlines():
        if line.startswith(("diff --git", "index ")) or not line.strip():
            continue
        kept.append("@@" if line.startswith("@@") else line.rstrip())
    return "\n".join(kept)


def pick_index(attempts: Sequence[Attempted], keys: Sequence[tuple[float, ...]]) -> int:
    """The winner's index: attempts with a diff first (all when none has one), then the highest key, then
    the earliest.

    >>> runs = [Attempted(0, "", False), Attempted(1, "d", False), Attempted(2, "e", True)]
    >>> pick_index(runs, [(9.0,), (1.0,), (1.0,)]), pick_index([Attempted(0, "", False)] * 2, [(0.0,), (1.0,)])
    (1, 1)
    """
    candidates = [i for i, a in enumerate(attempts) if a.has_diff] or range(len(attempts))
    return max(candidates, key=lambda i: (keys[i], -i))


def select_attempts(
    selection: Selection, attempts: dict[str, list[Attempted]], tasks: Sequence[Task], runtimes: RuntimePool
) -> dict[str, Pick]:
    """Per task (by instance id), the attempt `selection` picks among `attempts` (each task's, in order);
    `runtimes` grades the `tests` criterion."""
    scoring = Scoring(selection, attempts, {task.instance_id: task for task in tasks}, runtimes)
    scores: dict[str, dict[str, list[float | None]]] = {task_id: {} for task_id in attempts}
    for criterion in selection.criteria:
        for task_id, values in _criterion(criterion, scoring).items():
            scores[task_id][criterion] = values
    picks = {}
    for task_id, runs in attempts.items():
        keys = [
            tuple(float(scores[task_id][c][i] or 0.0) for c in selection.criteria) for i in range(len(runs))
        ]
        index = pick_index(runs, keys)
        score = {criterion: values[index] for criterion, values in scores[task_id].items()}
        picks[task_id] = Pick(runs[index].attempt, runs[index].resolved, score, scores[task_id])
    return picks


#: A criterion's scorer: per task, each distinct diff's score (`Scoring` holds what the scorers need).
DiffScores = dict[str, dict[str, float]]


@dataclass(frozen=True)
class Scoring:
    """A selection's attempts and what scoring them needs: the tasks by id, a runtime pool for the tests."""

    selection: Selection
    attempts: dict[str, list[Attempted]]
    tasks: dict[str, Task]
    runtimes: RuntimePool

    def distinct(self) -> dict[str, list[str]]:
        """Per task, its attempts' diffs, each once, empty ones left out."""
        return {
            t: list(dict.fromkeys(a.diff for a in runs if a.has_diff)) for t, runs in self.attempts.items()
        }


def _votes(scoring: Scoring) -> DiffScores:
    scores = {}
    for task_id, runs in scoring.attempts.items():
        counts = Counter(normalised_diff(a.diff) for a in runs if a.has_diff)
        scores[task_id] = {a.diff: float(counts[normalised_diff(a.diff)]) for a in runs if a.has_diff}
    return scores


def _tests_passed(scoring: Scoring) -> DiffScores:
    return {
        task_id: {
            diff: float(visible_tests_passed(scoring.tasks[task_id], diff, scoring.runtimes))
            for diff in diffs
        }
        for task_id, diffs in scoring.distinct().items()
    }


def _verifier(scoring: Scoring) -> DiffScores:
    score = scoring.selection.verifier_scores
    if score is None:
        raise ConfigError(f"--select {scoring.selection.spec}: no verifier was loaded to score attempts with")
    distinct = scoring.distinct()
    found = iter(
        score([(scoring.tasks[task_id], diff) for task_id, diffs in distinct.items() for diff in diffs])
    )
    return {task_id: {diff: next(found) for diff in diffs} for task_id, diffs in distinct.items()}


_CRITERIA: dict[str, Callable[[Scoring], DiffScores]] = {
    "votes": _votes, "tests_passed": _tests_passed, "verifier": _verifier,
}  # fmt: skip


def _criterion(name: str, scoring: Scoring) -> dict[str, list[float | None]]:
    """One criterion's score of every attempt, in attempt order (None for an attempt without a diff)."""
    of_diff = _CRITERIA[name](scoring)
    return {
        task_id: [of_diff[task_id][a.diff] if a.has_diff else None for a in runs]
        for task_id, runs in scoring.attempts.items()
    }
