"""What a scrub produced: kept tasks, dropped ones with reasons, findings, licences; and its JSON report.

Nothing here holds a secret value: a finding says where (task, field, line)
and what kind, so the report can be shared.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from repogym.privacy.licenses import LicenseInfo
from repogym.task import Task


class DropCode(enum.StrEnum):
    """Why a task was left out."""

    SECRET = "secret"
    SECRET_UNREDACTABLE = "secret_unredactable"
    PATCH_WOULD_NOT_APPLY = "patch_would_not_apply"
    LICENSE_NOT_ALLOWED = "license_not_allowed"
    LICENSE_UNKNOWN = "license_unknown"


@dataclass(frozen=True)
class Finding:
    """Something found in a task: where, what kind, and what was done. Never the value."""

    instance_id: str
    field: str
    line: int
    category: str
    """'secret' or 'pii'."""
    type: str
    """The detector's type ('AWS Access Key') or the PII kind ('email')."""
    action: str
    """'redacted', or 'dropped' when the task was left out."""

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("instance_id", "field", "line", "category", "type", "action")}


@dataclass(frozen=True)
class DropReason:
    code: DropCode
    message: str


@dataclass(frozen=True)
class DroppedTask:
    instance_id: str
    reasons: tuple[DropReason, ...]


@dataclass(frozen=True)
class ScrubResult:
    """Kept tasks (scrubbed, licence set), dropped ones with reasons, and every finding."""

    tasks: tuple[Task, ...]
    dropped: tuple[DroppedTask, ...]
    findings: tuple[Finding, ...]
    licenses: dict[str, LicenseInfo] = field(default_factory=dict)
    """instance_id -> the licence found for its repository at its base commit."""

    @property
    def dropped_ids(self) -> list[str]:
        return [d.instance_id for d in self.dropped]

    @property
    def counts(self) -> dict[str, int]:
        """Findings per type, keyed 'secret:<type>' or 'pii:<kind>'."""
        totals: dict[str, int] = {}
        for finding in self.findings:
            key = f"{finding.category}:{finding.type}"
            totals[key] = totals.get(key, 0) + 1
        return dict(sorted(totals.items()))

    @property
    def drop_counts(self) -> dict[str, int]:
        """Dropped tasks per reason code (a task with two reasons counts under both)."""
        totals: dict[str, int] = {}
        for dropped in self.dropped:
            for code in dict.fromkeys(r.code for r in dropped.reasons):
                totals[code.value] = totals.get(code.value, 0) + 1
        return dict(sorted(totals.items()))

    def to_report(self) -> dict[str, Any]:
        """The JSON report: counts, dropped ids with reasons, findings by place and type, licences."""
        return {
            "tasks_in": len(self.tasks) + len(self.dropped),
            "kept": len(self.tasks),
            "dropped": len(self.dropped),
            "dropped_by_reason": self.drop_counts,
            "findings_by_type": self.counts,
            "dropped_tasks": [
                {
                    "instance_id": d.instance_id,
                    "reasons": [{"code": r.code.value, "message": r.message} for r in d.reasons],
                }
                for d in self.dropped
            ],
            "findings": [f.to_dict() for f in self.findings],
            "licenses": {iid: info.to_dict() for iid, info in self.licenses.items()},
        }
