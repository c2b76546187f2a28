"""Synthetic tasks: SWE-smith-style bug injection in covered functions, combined bugs, task splits, commit data.

`synthesize(repo, SynthConfig(), store_dir)` writes candidates (validate them with
`repogym.validate.validate_candidates`); `combine(tasks)` merges validated bugs; `split_tasks(tasks, by)`
makes train/test splits that share no function; `commit_rows(repo)` turns a history into SFT rows.
"""

from __future__ import annotations

from repogym.synth.combine import combine
from repogym.synth.commits import CommitData, commit_rows
from repogym.synth.config import SynthConfig
from repogym.synth.methods import METHODS, method_groups, method_names, resolve_methods
from repogym.synth.split import Split, SplitBy, split_tasks, write_split
from repogym.synth.synth import SynthResult, synthesize

__all__ = [
    "METHODS",
    "CommitData",
    "Split",
    "SplitBy",
    "SynthConfig",
    "SynthResult",
    "combine",
    "commit_rows",
    "method_groups",
    "method_names",
    "resolve_methods",
    "split_tasks",
    "synthesize",
    "write_split",
]
