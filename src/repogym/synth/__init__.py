"""Synthetic tasks: SWE-smith-style bug injection in covered functions, combined bugs, task splits, commit data.

`synthesize(repo, SynthConfig(), store_dir)` writes candidates (validate them with
`repogym.validate.validate_candidates`); `combine(tasks)` merges validated bugs; `split_tasks(tasks, by)`
makes train/test splits that share no function; `commit_rows(repo)` turns a history into SFT rows.

The names below load their module on first use (PEP 562), so `repogym --help` does not pay for libcst
and the miner.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "combine": "combine",
    "CommitData": "commits",
    "commit_rows": "commits",
    "SynthConfig": "config",
    "METHODS": "methods",
    "method_groups": "methods",
    "method_names": "methods",
    "resolve_methods": "methods",
    "Split": "split",
    "SplitBy": "split",
    "split_tasks": "split",
    "write_split": "split",
    "SynthResult": "synth",
    "synthesize": "synth",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'repogym.synth' has no attribute {name!r}")
    return getattr(importlib.import_module(f"repogym.synth.{_EXPORTS[name]}"), name)
