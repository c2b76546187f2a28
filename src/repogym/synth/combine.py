"""`combine`: harder tasks from validated bugs of one file (or one module) whose injections apply together.

Bugs are grouped by repository, clean commit and file (or the file's folder, for `same="module"`), shuffled
with the seed, and taken greedily: a bug joins the current combination when its injected diff still applies
on top of the others' (no overlapping hunks), up to `max_parts`; a combination of two or more becomes a
candidate. Each bug is used once. The candidate is a new commit on top of REV holding every part; its gold
patch restores REV; its tests are the union of its parts'. It must be validated again: the bugs can mask
each other.
"""

from __future__ import annotations

import hashlib
import posixpath
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from repogym.errors import ConfigError
from repogym.patches import PatchError, apply_patch, diff_stats, unified_diff
from repogym.synth.inject import touched_lines
from repogym.synth.store import BugCommit, TaskRepo
from repogym.synth.synth import id_prefix
from repogym.task import Source, Task
from repogym.taskmeta import SynthRecord

METHOD = "combine"


@dataclass(frozen=True)
class _Part:
    task: Task
    file: str
    clean_commit: str
    buggy_text: str
    clean_text: str

    @property
    def injected(self) -> str:
        return unified_diff({self.file: self.clean_text}, {self.file: self.buggy_text})


def combine(tasks: Sequence[Task], same: str = "file", max_parts: int = 3, seed: int = 0) -> list[Task]:
    """Combined candidates from validated synthetic tasks (see the module docstring)."""
    if same not in ("file", "module"):
        raise ConfigError(f"--same {same!r}: choose 'file' or 'module'")
    if max_parts < 2:
        raise ConfigError(f"--max {max_parts}: a combination needs at least 2 bugs")
    usable = [
        t
        for t in tasks
        if t.source is Source.SYNTHETIC and t.FAIL_TO_PASS and t.metadata.get("method") != METHOD
    ]
    if not usable:
        raise ConfigError(
            "no validated synthetic task to combine (run `repogym validate` on synth's candidates first)"
        )
    groups: dict[tuple[str, str, str], list[Task]] = {}
    for task in usable:
        file = str(task.metadata.get("file", ""))
        scope = file if same == "file" else posixpath.dirname(file)
        groups.setdefault((task.repo_source, _synth(task).clean_commit, scope), []).append(task)
    combined: list[Task] = []
    for key in sorted(groups):
        members = sorted(groups[key], key=lambda t: t.instance_id)
        random.Random(f"{seed}\0{key}").shuffle(members)
        combined += _combine_group(members, max_parts)
    return combined


def _combine_group(members: list[Task], max_parts: int) -> list[Task]:
    repo = TaskRepo(Path(members[0].repo_source))
    clean_commit = _synth(members[0]).clean_commit
    parts = [
        _Part(
            task=t,
            file=t.metadata["file"],
            clean_commit=clean_commit,
            buggy_text=repo.read(_synth(t).bug_commit, t.metadata["file"]),
            clean_text=repo.read(clean_commit, t.metadata["file"]),
        )
        for t in members
    ]
    built: list[tuple[list[_Part], dict[str, str]]] = []
    pending = list(parts)
    while len(pending) >= 2:
        chosen: list[_Part] = []
        texts: dict[str, str] = {}
        for part in list(pending):
            if len(chosen) == max_parts:
                break
            current = {part.file: texts.get(part.file, part.clean_text)}
            try:
                texts[part.file] = str(apply_patch(part.injected, current)[part.file])
            except PatchError:
                continue  # overlaps what is already in: leave it for a later combination
            chosen.append(part)
            pending.remove(part)
        if len(chosen) < 2:
            break
        built.append((chosen, texts))
    return _write(repo, clean_commit, built)


def _write(repo: TaskRepo, clean_commit: str, built: list[tuple[list[_Part], dict[str, str]]]) -> list[Task]:
    bugs, rows = [], []
    for chosen, texts in built:
        first = chosen[0].task
        clean = {f: next(p.clean_text for p in chosen if p.file == f) for f in texts}
        gold = unified_diff(texts, clean)
        digest = hashlib.sha256("\0".join(f"{f}\0{t}" for f, t in sorted(texts.items())).encode()).hexdigest()
        instance_id = f"{id_prefix(first.repo)}-synth-{METHOD}-{digest[:10]}"
        ids = [p.task.instance_id for p in chosen]
        bugs.append(BugCommit(instance_id, clean_commit, texts, f"synth: combine {', '.join(ids)}\n"))
        rows.append((instance_id, chosen, gold, texts))
    written = repo.write(bugs)
    tasks = []
    for instance_id, chosen, gold, texts in rows:
        first = chosen[0].task
        tests = list(dict.fromkeys(t for p in chosen for t in _synth(p.task).tests))
        stats = diff_stats(gold)
        file = first.metadata["file"]
        file_gold = unified_diff({file: texts[file]}, {file: chosen[0].clean_text})
        metadata: dict[str, Any] = {
            "method": METHOD,
            "file": first.metadata["file"],
            "function": first.metadata["function"],
            "lines": list(touched_lines(file_gold)),
            "files": list(dict.fromkeys(p.file for p in chosen)),
            "functions": [p.task.metadata["function"] for p in chosen],
            "locations": [{"file": p.file, "function": p.task.metadata["function"]} for p in chosen],
            "parts": [
                {"instance_id": p.task.instance_id, "method": p.task.metadata["method"]} for p in chosen
            ],
            "difficulty": {"lines_changed": stats.added + stats.removed, "fail_to_pass": None},
            "synth": {
                **replace(
                    _synth(first), bug_commit=written[instance_id].bug_commit, tests=tuple(tests)
                ).to_dict(),
                "affected_tests": len(tests),
                "test_files": sorted({t.split("::", 1)[0] for t in tests}),
            },
        }
        tasks.append(
            first.replace(
                instance_id=instance_id,
                base_commit=written[instance_id].base_commit,
                patch=gold,
                problem_statement="",
                FAIL_TO_PASS=[],
                PASS_TO_PASS=[],
                metadata=metadata,
            )
        )
    return tasks


def _synth(task: Task) -> SynthRecord:
    synth = SynthRecord.of(task)
    if not synth.clean_commit or not synth.bug_commit:
        raise ConfigError(
            f"{task.instance_id}: metadata.synth lacks clean_commit / bug_commit (not a synth task)"
        )
    return synth
