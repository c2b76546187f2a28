"""Typed views of the sub-records stages write into `Task.metadata`: mining's, validation's and synth's.

On disk a task's metadata stays what it always was (plain JSON objects under "mining", "validation" and
"synth"), so old files load and other tools read them as before. In code, the fields other stages read
go through these records instead of chains of string keys: `MiningRecord.of(task).commit`, not
`task.metadata.get("mining", {}).get("commit", "")`.

Guarantees: `of(task)` never raises; a record that is absent or not an object reads as empty (every
field its default, `present` False), and a field of the wrong type reads as its default. `to_metadata`
writes the record back over everything else the stage stored there (kept as written, in its order),
writing only the fields changed since it was read, so a read-modify-write leaves the JSON as it was
but for what changed. Not guaranteed: that a record says anything (a hand-written task may
have none); stages that need a field check it and say which is missing (`synthetic_plan`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from repogym.task import Task


@dataclass(frozen=True)
class _Record:
    """Shared reading and writing; each record names its metadata key and its typed fields."""

    KEY: ClassVar[str] = ""
    stored: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)
    """The record as the task holds it, every key (those with a field too); None when the task has none."""

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any]) -> Self:
        raw = metadata.get(cls.KEY)
        stored: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        values = {}
        for name, default in _defaults(cls).items():
            value = stored.get(name, default)
            if name in stored and _same_kind(value, default):
                values[name] = tuple(value) if isinstance(default, tuple) else value
        return cls(stored=dict(stored) if isinstance(raw, Mapping) else None, **values)

    @classmethod
    def of(cls, task: Task) -> Self:
        return cls.from_metadata(task.metadata)

    @property
    def present(self) -> bool:
        """Whether the task has this record (an object under KEY)."""
        return self.stored is not None

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON: what was stored, with the fields changed since it was read written over it."""
        stored = dict(self.stored or {})
        as_read = type(self).from_metadata({self.KEY: stored})
        for name in _defaults(type(self)):
            value = getattr(self, name)
            if value != getattr(as_read, name):
                stored[name] = list(value) if isinstance(value, tuple) else value
        return stored

    def to_metadata(self, metadata: Mapping[str, Any]) -> dict[str, Any]:
        """`metadata` with this record in its place (the other records untouched)."""
        return {**metadata, self.KEY: self.to_dict()}


def _defaults(record: type[_Record]) -> dict[str, Any]:
    """Each typed field of a record and its default."""
    defaults = {}
    for spec in dataclasses.fields(record):
        if spec.name != "stored":
            factory = spec.default_factory
            defaults[spec.name] = spec.default if factory is dataclasses.MISSING else factory()
    return defaults


def _same_kind(value: Any, default: Any) -> bool:
    """Whether a stored value has the field's type (bool is not an int; a list stands for a tuple)."""
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, int):
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, int | float) and not isinstance(value, bool)
    if isinstance(default, tuple):
        return isinstance(value, list | tuple)
    if isinstance(default, Mapping):
        return isinstance(value, Mapping)
    return isinstance(value, type(default))


@dataclass(frozen=True)
class MiningRecord(_Record):
    """metadata["mining"]: where a mined task came from (written by `repogym.mining.mine`).

    >>> task = Task("t", "r", "c", "", metadata={"mining": {"commit": "abc", "kind": "pr_merge", "pr_number": 7}})
    >>> record = MiningRecord.of(task)
    >>> record.commit, record.kind, record.stored["pr_number"], MiningRecord.of(Task("u", "r", "c", "")).commit
    ('abc', 'pr_merge', 7, '')
    >>> dataclasses.replace(record, statement_writer="kept").to_dict()
    {'commit': 'abc', 'kind': 'pr_merge', 'pr_number': 7, 'statement_writer': 'kept'}
    """

    KEY: ClassVar[str] = "mining"
    commit: str = ""
    """The sha of the fixing commit (a merge's, for merges)."""
    kind: str = ""
    """'commit', 'merge' (any other merge) or 'pr_merge' (a merge with a PR number)."""
    statement_source: str = ""
    """Where the problem statement came from ('issue', 'pr', 'commit', or 'writer' once rewritten)."""
    statement_quotes_fix: bool = False
    """The statement quotes added lines of the gold patch."""
    statement_writer: str = ""
    """What the issue writer's rewrite became ('kept', 'rejected: ...', 'failed: ...'); '' without one."""


@dataclass(frozen=True)
class ValidationRecord(_Record):
    """metadata["validation"]: how a task was proven (written by `repogym.validate`); the fields others read.

    >>> record = ValidationRecord.from_metadata({"validation": {"runs": 2, "timings": {"after_s": 3.0}}})
    >>> record.runs, dict(record.timings), record.log("before")
    (2, {'after_s': 3.0}, '')
    """

    KEY: ClassVar[str] = "validation"
    runs: int = 0
    """How many times each phase ran (its timings are totals over the runs); 0 when not recorded."""
    timings: Mapping[str, Any] = field(default_factory=dict)
    """Seconds per phase (before_s, after_s, clean_s, ...), each the total of `runs` runs."""
    logs: Mapping[str, Any] = field(default_factory=dict)
    """Phase -> the log file of its test run (before, after)."""

    def log(self, phase: str) -> str:
        """The log of `phase` ('' when none was recorded)."""
        path = self.logs.get(phase, "")
        return path if isinstance(path, str) else ""


@dataclass(frozen=True)
class SynthRecord(_Record):
    """metadata["synth"]: how a synthetic task's bug was made (written by `repogym.synth`).

    >>> SynthRecord.from_metadata({"synth": {"clean_commit": "c1", "tests": ["t.py::a"], "seed": 3}}).tests
    ('t.py::a',)
    """

    KEY: ClassVar[str] = "synth"
    clean_commit: str = ""
    """The commit the gold patch restores (the repository before the bug)."""
    bug_commit: str = ""
    """The commit holding the bug (the task's base commit, in the task store)."""
    tests: tuple[str, ...] = ()
    """The tests chosen to decide the task's outcome."""
    suite_files: tuple[str, ...] = ()
    """The test files whose runs validate it."""
