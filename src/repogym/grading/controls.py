"""The gold and empty controls over a whole task file: every task's gold patch must resolve and an empty patch
must not, summed up per repository, with SWE-bench's own parser re-reading every saved log where it is
installed (grading/swebench_reading.py). `repogym tasks check` is its command.

Guarantees:
- Resumable: each grade is appended (one fsynced line) to `OUT/grades.jsonl` as it finishes; a re-run grades
  only what is not there. A grade that raises is recorded as INFRA_ERROR naming the exception
  (`batch.guarded_grade`) and never graded again by a resume.
- Every grade keeps its whole test log under `OUT/logs/INSTANCE/KIND/`; the summary reads them again with
  SWE-bench's parser each time it is made, so a resume with SWE-bench newly installed reads the old logs too.
- Each task is judged by its own skip rule (`judge.skip_rule_for`: SWE-bench's for imported tasks), with the
  network closed unless `allow_network` (then the report says so).

Not guaranteed: a verdict that depends on the machine's load (a test's own timeout) comes out as it did on
this run; re-run the task alone to see whether it is a draw.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from repogym.files import append_jsonl, read_jsonl_records, write_json
from repogym.grading.batch import guarded_grade
from repogym.grading.judge import skip_rule_for
from repogym.grading.report import Outcome
from repogym.grading.swebench_reading import SwebenchReader
from repogym.interrupts import as_completed_interruptibly
from repogym.sandbox.base import Limits
from repogym.sandbox.pool import RuntimePool
from repogym.task import Task

KINDS = ("gold", "empty")
GRADES_FILE = "grades.jsonl"


@dataclass(frozen=True)
class ControlGrade:
    """One control's grade, as `OUT/grades.jsonl` keeps it."""

    instance_id: str
    repo: str
    kind: str
    """"gold" (the task's own patch: must resolve) or "empty" (no change: must not)."""
    outcome: Outcome
    detail: str = ""
    wall_s: float = 0.0
    """Seconds of the whole grade (environment build included, where this grade built it)."""
    log_path: str = ""
    network_open: bool = False
    lacks: tuple[str, ...] = ()
    """What the run's log shows it lacked from its environment (`GradeResult.lacks`)."""

    @property
    def cause(self) -> str:
        """The table's name for how this control ended: "gold UNRESOLVED", with what the run lacked where its
        log shows it ("gold UNRESOLVED, lacks module cdms2")."""
        name = f"{self.kind} {self.outcome.value}"
        return f"{name}, lacks {' and '.join(self.lacks)}" if self.lacks else name

    @property
    def as_expected(self) -> bool:
        return (self.outcome is Outcome.RESOLVED) == (self.kind == "gold")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "outcome": self.outcome.value, "lacks": list(self.lacks)}

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> ControlGrade:
        return cls(**{**row, "outcome": Outcome(row["outcome"]), "lacks": tuple(row.get("lacks", ()))})


@dataclass(frozen=True)
class RepoSummary:
    """One repository's line of the table."""

    repo: str
    tasks: int
    graded: int
    """Tasks with both controls graded."""
    gold_resolves: int
    empty_resolves: int
    causes: dict[str, int]
    """Why controls did not come out as expected: "gold OUTCOME" for a gold patch that did not resolve,
    "empty OUTCOME" for an empty patch that ended neither UNRESOLVED nor RESOLVED (or did resolve)."""
    swebench_read: int
    """Grades whose saved log SWE-bench's parser read."""
    swebench_agrees: int
    """Of those, how many SWE-bench's rule resolves exactly where repogym's verdict does."""
    seconds: float


@dataclass
class ControlsReport:
    """Every control graded so far, and SWE-bench's reading of their logs."""

    tasks: list[Task]
    grades: dict[tuple[str, str], ControlGrade] = field(default_factory=dict)
    swebench: dict[tuple[str, str], bool] = field(default_factory=dict)
    """(instance, kind) -> SWE-bench's FULL on the saved log, for every grade it read."""
    swebench_version: str = ""
    swebench_missing: str = ""
    """Why SWE-bench did not read the logs ('' when it did)."""
    allow_network: bool = False

    def summaries(self) -> list[RepoSummary]:
        rows = []
        for repo in sorted({task.repo for task in self.tasks}):
            ids = [task.instance_id for task in self.tasks if task.repo == repo]
            mine = [self.grades[(i, kind)] for i in ids for kind in KINDS if (i, kind) in self.grades]
            causes: Counter[str] = Counter()
            for grade in mine:
                if not grade.as_expected or (
                    grade.kind == "empty" and grade.outcome is not Outcome.UNRESOLVED
                ):
                    causes[grade.cause] += 1
            read = [key for key in self.swebench if key[0] in ids]
            agree = sum(self.swebench[key] == (self.grades[key].outcome is Outcome.RESOLVED) for key in read)
            rows.append(RepoSummary(
                repo, len(ids), sum(all((i, kind) in self.grades for kind in KINDS) for i in ids),
                sum(g.kind == "gold" and g.outcome is Outcome.RESOLVED for g in mine),
                sum(g.kind == "empty" and g.outcome is Outcome.RESOLVED for g in mine),
                dict(sorted(causes.items())), len(read), agree, sum(g.wall_s for g in mine),
            ))  # fmt: skip
        return rows

    @property
    def clean(self) -> bool:
        """Every control as expected and SWE-bench's reading agreeing wherever it read."""
        agree = all(
            self.swebench[key] == (self.grades[key].outcome is Outcome.RESOLVED) for key in self.swebench
        )
        return agree and all(grade.as_expected for grade in self.grades.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "tasks": len(self.tasks),
            "grades": len(self.grades),
            "clean": self.clean,
            "test_network": "open" if self.allow_network else "closed",
            "swebench": self.swebench_version or None,
            "swebench_missing": self.swebench_missing,
            "repos": [asdict(row) for row in self.summaries()],
            "unexpected": [
                {**grade.to_dict(), "swebench_resolved": self.swebench.get((grade.instance_id, grade.kind))}
                for key, grade in sorted(self.grades.items())
                if not grade.as_expected
                or self.swebench.get(key, grade.outcome is Outcome.RESOLVED)
                != (grade.outcome is Outcome.RESOLVED)
            ],
            "schema_version": 1,
        }

    def markdown(self) -> str:
        """The per-repository table (and the controls that did not come out as expected) as markdown."""
        reading = (
            f"SWE-bench {self.swebench_version}'s parser re-read every saved log"
            if self.swebench_version
            else f"SWE-bench's parser did not read the logs: {self.swebench_missing}"
        )
        network = "open (--allow-network)" if self.allow_network else "closed"
        lines = [
            f"{len(self.tasks)} tasks, {len(self.grades)} grades; the test runs' network {network}; {reading}.",
            "",
            "| repo | tasks | graded | gold resolves | empty resolves | named causes | SWE-bench's parser agrees | time |",
            "| --- | ---: | ---: | ---: | ---: | --- | --- | ---: |",
        ]
        for row in self.summaries():
            causes = ", ".join(f"{name} {count}" for name, count in row.causes.items()) or "-"
            agrees = f"{row.swebench_agrees} of {row.swebench_read}" if self.swebench_version else "-"
            lines.append(
                f"| {row.repo} | {row.tasks} | {row.graded} | {row.gold_resolves} | {row.empty_resolves} | "
                f"{causes} | {agrees} | {row.seconds:.0f} s |"
            )
        unexpected = self.to_dict()["unexpected"]
        if unexpected:
            lines += ["", "Controls not as expected (or read otherwise by SWE-bench's parser):", ""]
            for row in unexpected:
                detail = " ".join(row["detail"].split())[:300]
                swebench = row["swebench_resolved"]
                said = (
                    "" if swebench is None else f" (SWE-bench: {'resolved' if swebench else 'not resolved'})"
                )
                lines.append(f"- {row['instance_id']} {row['kind']}: {row['outcome']}{said}: {detail}")
        return "\n".join(lines) + "\n"


def check_tasks(
    tasks: Iterable[Task],
    out_dir: str | Path,
    *,
    workers: int = 1,
    sandbox: str = "bwrap",
    repos_dir: str | None = None,
    limits: Limits | None = None,
    allow_network: bool = False,
    reader: tuple[SwebenchReader | None, str] = (None, "not asked for"),
    on_start: Callable[[int, int], None] | None = None,
    on_grade: Callable[[ControlGrade], None] | None = None,
) -> ControlsReport:
    """Grade every task's gold and empty controls not yet in `out_dir` (`workers` at a time), then read every
    saved log with `reader` (`swebench_reading.load_reader()`), write `report.json` and `report.md` there."""
    tasks = list(tasks)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    report = ControlsReport(tasks, allow_network=allow_network)
    ids = {task.instance_id for task in tasks}
    for row in read_jsonl_records(out / GRADES_FILE):
        grade = ControlGrade.from_dict(row)
        if grade.instance_id in ids:  # a run over fewer tasks (--instance, --repo) reports only those
            report.grades[(grade.instance_id, grade.kind)] = grade
    # Repository by repository: the tasks of one share environments, and its table line fills first.
    todo = [(t, k) for t in sorted(tasks, key=lambda t: (t.repo, t.instance_id)) for k in KINDS]
    todo = [(task, kind) for task, kind in todo if (task.instance_id, kind) not in report.grades]
    if on_start is not None:
        on_start(len(todo), len(report.grades))
    runtimes = RuntimePool(sandbox, repos_dir, limits)

    def one(task: Task, kind: str) -> ControlGrade:
        started = time.perf_counter()
        result = guarded_grade(
            task, task.patch if kind == "gold" else "", runtimes=runtimes, skip_rule=skip_rule_for(task),
            log_dir=out / "logs" / task.instance_id.replace("/", "__") / kind, allow_network=allow_network,
        )  # fmt: skip
        return ControlGrade(
            task.instance_id, task.repo, kind, result.outcome, result.detail,
            round(time.perf_counter() - started, 2), result.report.log_path if result.report else "",
            result.network_open, result.lacks,
        )  # fmt: skip

    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    try:
        futures = [pool.submit(one, task, kind) for task, kind in todo]
        for future in as_completed_interruptibly(futures):
            grade = future.result()
            append_jsonl(out / GRADES_FILE, grade.to_dict())
            report.grades[(grade.instance_id, grade.kind)] = grade
            if on_grade is not None:
                on_grade(grade)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # Ctrl-C: the saved grades resume
    read_logs(report, reader)
    write_json(out / "report.json", report.to_dict())
    (out / "report.md").write_text(report.markdown(), encoding="utf-8")
    return report


def read_logs(report: ControlsReport, reader: tuple[SwebenchReader | None, str]) -> None:
    """SWE-bench's reading of every saved log of `report` (none, and why, without a reader)."""
    swebench, report.swebench_missing = reader
    if swebench is None:
        return
    report.swebench_version = swebench.version
    by_id = {task.instance_id: task for task in report.tasks}
    for key, grade in report.grades.items():
        task = by_id.get(grade.instance_id)
        if task is None or not grade.log_path or not Path(grade.log_path).is_file():
            continue
        resolved = swebench.resolved(task, Path(grade.log_path).read_text(encoding="utf-8", errors="replace"))
        if resolved is not None:
            report.swebench[key] = resolved
