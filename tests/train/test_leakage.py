"""The leakage guards over a real held-out task: what each one catches, and what it lets through."""

from __future__ import annotations

from pathlib import Path

import pytest

from repogym.task import Source, Task
from repogym.train.leakage import Guard, LeakageGuard

from ..support.git import commit_files, init_repo, staged_diff

FIXED = """class Scores:
    def median(self, values):
        ordered = sorted(values)
        middle = len(ordered) // 2
        if len(ordered) % 2 == 1:
            return ordered[middle]
        return (ordered[middle - 1] + ordered[middle]) / 2
"""


@pytest.fixture
def guard(tmp_path: Path) -> LeakageGuard:
    """A held-out synthetic bug in `Scores.median` (`== 1` broken to `== 0`), its repository on disk."""
    repo = tmp_path / "scores"
    init_repo(repo, {"scores.py": FIXED})
    base = commit_files(repo, {"scores.py": FIXED.replace("% 2 == 1", "% 2 == 0")}, "inject")
    task = Task("o__scores-synth", "o/scores", base, staged_diff(repo, {"scores.py": FIXED}),
                source=Source.SYNTHETIC, repo_source=str(repo),
                metadata={"file": "scores.py", "function": "Scores.median"})  # fmt: skip
    return LeakageGuard.from_tasks([task])


def test_the_body_re_indented_and_reformatted_is_caught(guard: LeakageGuard):
    """The method written as a module function, spaced otherwise and commented: still its body."""
    answer = (
        "<solution>\ndef median(values):\n    ordered=sorted( values )  # copy\n    middle = len(ordered)//2\n"
        "    if len(ordered) % 2 == 1 :\n        return ordered[middle]\n\n"
        "    return (ordered[middle-1] + ordered[middle]) / 2\n</solution>"
    )
    assert guard.check(answer) is Guard.BODY
    assert guard.describe() == {"held_out_tasks": 1, "lines": 1, "bodies": 1, "tasks_without_body": 0}


def test_the_fixed_line_alone_is_caught_by_the_line_guard(guard: LeakageGuard):
    assert guard.check("        if len(ordered)%2==1:   # odd\n") is Guard.LINE


def test_unrelated_answers_and_common_short_lines_pass(guard: LeakageGuard):
    """`return ordered[middle]` is in the body, but a 1-line answer of it is not the body, nor a fixed line;
    an answer that breaks off before the body's last line is not the body either."""
    assert guard.check("    return ordered[middle]\n") is None
    assert guard.check("def mean(values):\n    return sum(values) / len(values)\n") is None
    partial = "ordered = sorted(values)\nmiddle = len(ordered) // 2\nreturn ordered[middle]\n"
    assert guard.check(partial) is None
