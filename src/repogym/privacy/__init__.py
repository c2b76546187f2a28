"""The privacy stage: keep secrets, personal data and restrictively licensed code out of task datasets.

`scrub_tasks(tasks, ScrubConfig(...))` is the entry point the miner, the
validator and `repogym scrub` share; `detect_license(repo, commit)` reads a
repository's licence from git. See `repogym.privacy.scrub` for what a kept
task guarantees.
"""

from __future__ import annotations

from repogym.privacy.licenses import LicenseDetector, LicenseEvidence, LicenseInfo, detect_license
from repogym.privacy.pii import PiiKind
from repogym.privacy.results import DropCode, DroppedTask, DropReason, Finding, ScrubResult
from repogym.privacy.scrub import ScrubConfig, SecretPolicy, scrub_tasks
from repogym.privacy.spdx import DEFAULT_ALLOWLIST

__all__ = [
    "DEFAULT_ALLOWLIST",
    "DropCode",
    "DropReason",
    "DroppedTask",
    "Finding",
    "LicenseDetector",
    "LicenseEvidence",
    "LicenseInfo",
    "PiiKind",
    "ScrubConfig",
    "ScrubResult",
    "SecretPolicy",
    "detect_license",
    "scrub_tasks",
]
