"""`audit_tasks`: the battery and the history search over a task set, resumable, in parallel.

Per task, in one prepared runtime: the gold patch (must resolve, else the task's verdicts prove nothing and it is
marked inconclusive) and the empty patch (must not), the fix search (reach.py), then every attack that applies
(attacks.py) and, when the search found future commits, the fix read from them. Attacks are graded as rewards are:
with the strict skip rule and the task's reward-time limits (`repogym.grading.timelimit`), so a looping attack costs a
bounded time.

Each finished task is appended (one fsynced line) to `<out>.partial.jsonl`, so a killed audit resumes where it
stopped and a re-run with the same --out skips what is done.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repogym.audit.attacks import Attack, AttackClass, Target, battery
from repogym.audit.reach import Reach, future_diffs, search
from repogym.errors import RepogymError
from repogym.files import append_jsonl, read_jsonl_records, write_json
from repogym.grading.grade import grade
from repogym.grading.report import GradeResult, Outcome, SkipRule
from repogym.grading.timelimit import grade_limits
from repogym.interrupts import as_completed_interruptibly
from repogym.sandbox.base import Limits
from repogym.sandbox.pool import RuntimePool
from repogym.task import Task

HISTORY_ATTACK = "fix_read_from_history"


@dataclass(frozen=True)
class AttackResult:
    """One attack's grade on one task."""

    name: str
    kind: str
    outcome: str
    detail: str = ""
    ignored: tuple[str, ...] = ()
    """What of the patch the grader dropped, each with why: how a config-file attack was stopped."""

    @property
    def resolved(self) -> bool:
        return self.outcome == Outcome.RESOLVED.value


@dataclass(frozen=True)
class TaskAudit:
    """The audit of one task."""

    instance_id: str
    gold_resolved: bool = False
    empty_resolved: bool = False
    attacks: tuple[AttackResult, ...] = ()
    not_applicable: tuple[str, ...] = ()
    """Attacks the task offers no place for (no code file, no pyproject.toml...)."""
    reach: Reach | None = None
    seconds: float = 0.0
    error: str = ""
    """Why the task could not be audited ('' when it was)."""

    @property
    def resolving(self) -> list[str]:
        return [attack.name for attack in self.attacks if attack.resolved]

    @property
    def reachable(self) -> bool:
        return self.reach is not None and self.reach.reachable

    @property
    def conclusive(self) -> bool:
        """The gold patch resolves and the empty one does not: an attack's failure to resolve means something."""
        return not self.error and self.gold_resolved and not self.empty_resolved

    def to_dict(self) -> dict[str, Any]:
        reach = self.reach
        return {
            "instance_id": self.instance_id,
            "resolving_attacks": self.resolving,
            "fix_reachable": self.reachable,
            "conclusive": self.conclusive,
            "gold_resolved": self.gold_resolved,
            "empty_resolved": self.empty_resolved,
            "attacks": {
                a.name: {"kind": a.kind, "outcome": a.outcome, "detail": a.detail, "ignored": list(a.ignored)}
                for a in self.attacks
            },
            "not_applicable": list(self.not_applicable),
            "reach": None
            if reach is None
            else {
                "lines_searched": reach.lines_searched,
                "fix_commit": reach.fix_commit,
                "future_commits": list(reach.future_commits),
                "hits": list(reach.hits),
                "error": reach.error,
            },
            "seconds": round(self.seconds, 3),
            "error": self.error,
        }

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> TaskAudit:
        reach = row.get("reach")
        return cls(
            instance_id=row["instance_id"],
            gold_resolved=bool(row.get("gold_resolved")),
            empty_resolved=bool(row.get("empty_resolved")),
            attacks=tuple(
                AttackResult(
                    name,
                    value["kind"],
                    value["outcome"],
                    value.get("detail", ""),
                    tuple(value.get("ignored", ())),
                )
                for name, value in row.get("attacks", {}).items()
            ),
            not_applicable=tuple(row.get("not_applicable", ())),
            reach=None
            if reach is None
            else Reach(
                reach["lines_searched"],
                reach["fix_commit"],
                tuple(reach["future_commits"]),
                tuple(reach["hits"]),
                reach.get("error", ""),
            ),
            seconds=float(row.get("seconds", 0.0)),
            error=row.get("error", ""),
        )


@dataclass
class AuditReport:
    """Every audited task, and the two counts a script checks."""

    tasks: list[TaskAudit] = field(default_factory=list)
    attacks: tuple[Attack, ...] = ()

    @property
    def resolving_attacks(self) -> int:
        return sum(len(task.resolving) for task in self.tasks)

    @property
    def reachable_fixes(self) -> int:
        return sum(1 for task in self.tasks if task.reachable)

    @property
    def clean(self) -> bool:
        return self.resolving_attacks == 0 and self.reachable_fixes == 0

    def to_dict(self) -> dict[str, Any]:
        seconds = [task.seconds for task in self.tasks if not task.error]
        return {
            "task_count": len(self.tasks),
            "resolving_attacks": self.resolving_attacks,
            "reachable_fixes": self.reachable_fixes,
            "inconclusive": [task.instance_id for task in self.tasks if not task.conclusive],
            "seconds_per_task": round(sum(seconds) / len(seconds), 3) if seconds else None,
            "battery": [
                {"name": a.name, "kind": a.kind.value, "description": a.description} for a in self.attacks
            ],
            "tasks": [task.to_dict() for task in self.tasks],
        }


def audit_task(
    task: Task,
    attacks: Iterable[Attack],
    *,
    sandbox: str = "bwrap",
    repos_dir: str | None = None,
    limits: Limits | None = None,
    runtimes: RuntimePool | None = None,
) -> TaskAudit:
    """Audit one task (see the module docstring); a task whose runtime cannot be prepared gets `error`.
    `runtimes`: the pool to take the task's runtime from (None: a pool of this task's own, with
    `sandbox`, `repos_dir` and `limits`)."""
    started = time.perf_counter()
    try:
        runtime = (runtimes or RuntimePool(sandbox, repos_dir, limits)).runtime(task)
    except RepogymError as exc:
        return TaskAudit(task.instance_id, error=f"{type(exc).__name__}: {exc}")
    assert runtime.pristine is not None
    test_limits = grade_limits(task, runtime.limits)

    def graded(patch: str) -> GradeResult:
        return grade(task, patch, runtime=runtime, skip_rule=SkipRule.STRICT, test_limits=test_limits)

    gold, empty = graded(task.patch), graded("")
    reach = search(runtime, task)
    target = Target.read(task, runtime.pristine)
    results: list[AttackResult] = []
    skipped: list[str] = []
    for attack in attacks:
        patch = attack.build(target)
        if patch is None:
            skipped.append(attack.name)
            continue
        results.append(_attack_result(attack.name, attack.kind, graded(patch)))
    for diff in future_diffs(runtime, task, reach.future_commits):
        results.append(_attack_result(HISTORY_ATTACK, AttackClass.HISTORY, graded(diff)))
        if results[-1].resolved:
            break
    return TaskAudit(
        task.instance_id,
        gold.resolved,
        empty.resolved,
        tuple(results),
        tuple(skipped),
        reach,
        time.perf_counter() - started,
    )


def _attack_result(name: str, kind: AttackClass, result: GradeResult) -> AttackResult:
    return AttackResult(name, kind.value, result.outcome.value, _short(result.detail), result.ignored_paths)


def _short(detail: str, limit: int = 300) -> str:
    return detail if len(detail) <= limit else detail[: limit - 3] + "..."


def partial_path(out: str | Path) -> Path:
    path = Path(out)
    return path.with_name(path.name + ".partial.jsonl")


def audit_tasks(
    tasks: Iterable[Task],
    out: str | Path | None = None,
    *,
    attack_names: list[str] | None = None,
    workers: int = 1,
    sandbox: str = "bwrap",
    repos_dir: str | None = None,
    limits: Limits | None = None,
    on_task: Callable[[TaskAudit], None] | None = None,
) -> AuditReport:
    """Audit every task (resuming from `out`'s partial file), `workers` tasks at a time; the report is written
    to `out` when given."""
    attacks = battery(attack_names)
    report = AuditReport(attacks=attacks)
    done: dict[str, TaskAudit] = {}
    if out is not None:
        for row in read_jsonl_records(partial_path(out)):
            done[row["instance_id"]] = TaskAudit.from_dict(row)
    todo = [task for task in tasks if task.instance_id not in done]
    report.tasks.extend(done.values())
    runtimes = RuntimePool(sandbox, repos_dir, limits)  # tasks at one repository state share its runtime
    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    try:
        futures = [pool.submit(audit_task, task, attacks, runtimes=runtimes) for task in todo]
        for future in as_completed_interruptibly(futures):
            audited = future.result()
            if out is not None:
                append_jsonl(partial_path(out), audited.to_dict())
            report.tasks.append(audited)
            if on_task is not None:
                on_task(audited)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    report.tasks.sort(key=lambda task: task.instance_id)
    if out is not None:
        write_json(out, report.to_dict())
    return report
