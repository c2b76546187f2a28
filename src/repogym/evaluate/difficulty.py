"""A task's difficulty from the task alone, in [0, 1): what `repogym eval --route ... --by difficulty` routes by.

The score is a plain mean of five saturating terms, one per fact the task file already holds, each
`x / (x + half)`: 0 when the fact is 0, 0.5 at `half`, nearing 1 as it grows:

| term | what it counts | half |
| changed_lines | lines the gold patch adds and removes | 10 (the eval's own "patch 3-10 lines" bucket edge) |
| files | files the gold patch touches | 1 (most SWE-bench fixes touch one file) |
| hunks | the gold patch's hunks (separate places edited) | 2 |
| fail_to_pass | FAIL_TO_PASS tests the fix must turn green | 2 |
| statement_chars | the problem statement's length in characters | 1200 (about SWE-bench's mean of ~200 words) |

Why this shape: how much a fix touches is the clearest difficulty signal a task file holds (on SWE-bench
Verified the ten best systems of late 2024 resolved 49-55% of all 500 tasks but 8-25% of the 71 whose fix
touches several files, as J. Ganhotra's count of the leaderboard shows), and a longer issue or more failing
tests usually mean a larger change. A saturating term lets one huge patch count as hard without swamping the
other facts; equal weights leave nothing fitted to the tasks the score then routes, and every term's pull
reads off the table. A task that states its difficulty (SWE-bench Verified's annotators' time buckets, or
easy/medium/hard, in `metadata["difficulty"]` or a top-level `difficulty`) gets the stated value instead
(`STATED`): a person's estimate is better evidence than these proxies.

The score ranks tasks; it is not a probability that a policy fails. And it reads the gold patch and the
FAIL_TO_PASS list, which a benchmark's tasks have and a live issue does not: the curve it gives says how well
routing does when a task's difficulty is known. For a fresh issue only the statement term is available;
route by a verifier of the small policy's attempt (`--by verifier`) there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from repogym.patches import parse_patch
from repogym.task import Task

#: (term, half): the value at which the term is 0.5.
TERMS: tuple[tuple[str, float], ...] = (
    ("changed_lines", 10.0),
    ("files", 1.0),
    ("hunks", 2.0),
    ("fail_to_pass", 2.0),
    ("statement_chars", 1200.0),
)
#: A stated difficulty label (lower-cased) -> its score: SWE-bench Verified's time to fix, and plain words.
STATED: dict[str, float] = {
    "<15 min fix": 0.2, "15 min - 1 hour": 0.45, "1-4 hours": 0.7, ">4 hours": 0.9,
    "easy": 0.2, "medium": 0.5, "hard": 0.8,
}  # fmt: skip


@dataclass(frozen=True)
class Difficulty:
    """A task's difficulty score and what it was computed from."""

    score: float
    """In [0, 1): the stated label's value, else the mean of the terms."""
    facts: dict[str, float]
    """Each term's raw count (changed_lines, files, hunks, fail_to_pass, statement_chars)."""
    stated: str = ""
    """The stated label the score came from ('' when computed from the facts)."""

    def to_dict(self) -> dict[str, Any]:
        return {"score": self.score, "facts": self.facts, "stated": self.stated}


def saturating(value: float, half: float) -> float:
    """`value / (value + half)`: 0 at 0, 0.5 at `half`, below 1 however large.

    >>> saturating(0, 10), saturating(10, 10), round(saturating(90, 10), 2)
    (0.0, 0.5, 0.9)
    """
    return value / (value + half) if value > 0 else 0.0


def task_facts(task: Task) -> dict[str, float]:
    """The counts the score reads (an unparsable gold patch counts as no lines, files or hunks)."""
    parsed = parse_patch(task.patch)
    files = list(parsed) if parsed is not None else []
    return {
        "changed_lines": float(sum(f.added + f.removed for f in files)),
        "files": float(len(files)),
        "hunks": float(sum(len(f) for f in files)),
        "fail_to_pass": float(len(task.FAIL_TO_PASS)),
        "statement_chars": float(len(task.problem_statement)),
    }


def stated_label(task: Task) -> str:
    """The task's stated difficulty label when it is one `STATED` knows ('' otherwise)."""
    metadata = task.metadata if isinstance(task.metadata, dict) else {}
    stated = metadata.get("difficulty") or task.extra.get("difficulty")
    label = stated.strip().lower() if isinstance(stated, str) else ""
    return label if label in STATED else ""


def difficulty(task: Task) -> Difficulty:
    """The task's difficulty (see the module docstring for the rule and why).

    >>> from repogym.task import Task
    >>> patch = "--- a/m.py\\n+++ b/m.py\\n@@ -1 +1 @@\\n-x = 1\\n+x = 2\\n"
    >>> one_line = Task("o__r-1", "o/r", "abc", patch, FAIL_TO_PASS=["t"], problem_statement="x" * 1200)
    >>> round(difficulty(one_line).score, 3)  # (2/12 + 1/2 + 1/3 + 1/3 + 1/2) / 5
    0.367
    >>> difficulty(one_line.replace(metadata={"difficulty": "1-4 hours"})).score
    0.7
    """
    facts = task_facts(task)
    label = stated_label(task)
    if label:
        return Difficulty(STATED[label], facts, label)
    score = sum(saturating(facts[term], half) for term, half in TERMS) / len(TERMS)
    return Difficulty(score, facts)
