"""Mining verifiable task candidates from a repository's own git history (the PR-Mix idea of SWE-RL).

`mine(repo)` walks the first-parent line with a few batch git processes, splits
each change into a code patch and a test patch, filters out what cannot be a
task (bots, reverts, docs-only, lock-only, vendored, too large, conflicted
merges, duplicates, changes without tests...) and returns Task rows plus a
`Funnel` that accounts for every scanned commit. `repogym validate` then proves
each candidate with its tests.
"""

from repogym.mining.config import MiningConfig
from repogym.mining.filters import FILTER_NAMES
from repogym.mining.funnel import Funnel, FunnelStep
from repogym.mining.mine import MiningResult, mine, mine_to_file
from repogym.mining.prs import PrExport, load_pr_export

__all__ = [
    "FILTER_NAMES",
    "Funnel",
    "FunnelStep",
    "MiningConfig",
    "MiningResult",
    "PrExport",
    "load_pr_export",
    "mine",
    "mine_to_file",
]
