"""The reward-integrity audit: known attacks graded against a task set, and a search for the fix from an episode.

`repogym tasks audit TASKS` runs it; `audit_tasks` is the library's entry point.
"""

from repogym.audit.attacks import BATTERY, Attack, AttackClass, battery
from repogym.audit.reach import Reach
from repogym.audit.run import AuditReport, TaskAudit, audit_task, audit_tasks

__all__ = [
    "BATTERY",
    "Attack",
    "AttackClass",
    "AuditReport",
    "Reach",
    "TaskAudit",
    "audit_task",
    "audit_tasks",
    "battery",
]
