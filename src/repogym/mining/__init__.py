"""Mining verifiable task candidates from a repository's own git history (the PR-Mix idea of SWE-RL).

`mine(repo)` walks the first-parent line with a few batch git processes, splits
each change into a code patch and a test patch, filters out what cannot be a
task (bots, reverts, docs-only, lock-only, vendored, too large, conflicted
merges, duplicates, changes without tests...), classifies each change as fix,
feature, refactor or removal (`repogym.mining.kinds`), and returns Task rows
plus a `Funnel` that accounts for every scanned commit. `repogym validate` then
proves each candidate with its tests.
"""

from repogym.mining.config import FILTER_NAMES, MiningConfig
from repogym.mining.funnel import Funnel, FunnelFlag, FunnelStep
from repogym.mining.kinds import ChangeClassification, ChangeKind, classify_change
from repogym.mining.mine import MiningResult, mine, mine_to_file
from repogym.mining.prs import PrExport, load_pr_export
from repogym.mining.statements import clean_message, leaks_fix

__all__ = [
    "FILTER_NAMES",
    "ChangeClassification",
    "ChangeKind",
    "Funnel",
    "FunnelFlag",
    "FunnelStep",
    "MiningConfig",
    "MiningResult",
    "PrExport",
    "classify_change",
    "clean_message",
    "leaks_fix",
    "load_pr_export",
    "mine",
    "mine_to_file",
]
