"""Grading a SWE-bench predictions file: parallel, resumable, with SWE-bench's report.

Each finished grade is appended (one fsynced line) to `<report>.partial.jsonl`
as soon as it is known, so a killed run loses nothing already graded and a
re-run skips it. The final report is written atomically at the end.

Guarantees:
- One instance never stops the batch: a grade that raises (a bug, a repository the checkout cannot write)
  is recorded as INFRA_ERROR naming the exception and where it was raised (`guarded_grade`), like any
  other grade; a re-run skips it as graded, so a resume never meets the same crash again.
- The report says whether the test runs could reach the network (`allow_network`, off by default).

Not guaranteed: Ctrl-C and other BaseExceptions are not recorded; grades not yet finished are re-run.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repogym.dataset import TaskSet
from repogym.files import append_jsonl, read_jsonl_records, write_json
from repogym.grading.grade import grade
from repogym.grading.judge import skip_rule_for
from repogym.grading.report import GradeResult, Outcome, ResolvedStatus, SkipRule
from repogym.interrupts import as_completed_interruptibly
from repogym.predictions import Prediction
from repogym.sandbox.base import Limits
from repogym.sandbox.pool import RuntimePool
from repogym.task import Task

#: Outcomes that mean the grader could not do its job (as opposed to the patch failing).
ERROR_OUTCOMES = (Outcome.INFRA_ERROR, Outcome.ENV_BUILD_FAILED)


@dataclass
class BatchReport:
    """SWE-bench's run report fields, plus repogym's per-instance outcomes."""

    submitted: list[str] = field(default_factory=list)
    results: dict[str, GradeResult] = field(default_factory=dict)
    empty_patch: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    """Prediction ids with no task in the task file (not graded)."""
    total_instances: int = 0
    allow_network: bool = False
    """The test runs of this batch's grades could reach the network (`grade(allow_network=True)`)."""

    def ids(self, predicate: Callable[[GradeResult], bool]) -> list[str]:
        return sorted(i for i, r in self.results.items() if predicate(r))

    def to_dict(self) -> dict[str, Any]:
        resolved = self.ids(lambda r: r.resolved)
        errors = self.ids(lambda r: r.outcome in ERROR_OUTCOMES)
        unresolved = self.ids(lambda r: not r.resolved and r.outcome not in ERROR_OUTCOMES)
        completed = sorted(set(self.results) - set(errors))
        incomplete = sorted(set(self.submitted) - set(self.results) - set(self.unknown))
        outcomes: dict[str, int] = {}
        for result in self.results.values():
            outcomes[result.outcome.value] = outcomes.get(result.outcome.value, 0) + 1
        return {
            "total_instances": self.total_instances,
            "submitted_instances": len(self.submitted),
            "completed_instances": len(completed),
            "resolved_instances": len(resolved),
            "unresolved_instances": len(unresolved),
            "empty_patch_instances": len(self.empty_patch),
            "error_instances": len(errors),
            "completed_ids": completed,
            "incomplete_ids": incomplete,
            "empty_patch_ids": sorted(self.empty_patch),
            "submitted_ids": sorted(self.submitted),
            "resolved_ids": resolved,
            "unresolved_ids": unresolved,
            "error_ids": errors,
            "unknown_ids": sorted(self.unknown),
            "outcomes": outcomes,
            "test_network": "open" if self.allow_network else "closed",
            "network_open_ids": self.ids(lambda r: r.network_open),
            "instances": {i: self.results[i].to_dict() for i in sorted(self.results)},
            "schema_version": 2,
        }


def partial_path(report_path: str | Path) -> Path:
    path = Path(report_path)
    return path.with_name(path.name + ".partial.jsonl")


def grade_predictions(
    tasks: TaskSet,
    predictions: Iterable[Prediction],
    report_path: str | Path,
    *,
    workers: int = 1,
    sandbox: str = "bwrap",
    repos_dir: str | None = None,
    on_result: Callable[[GradeResult], None] | None = None,
    on_start: Callable[[int, int], None] | None = None,
    skip_rule: SkipRule | None = None,
    limits: Limits | None = None,
    allow_network: bool = False,
) -> BatchReport:
    """Grade every prediction whose instance is in `tasks`; resume from the partial file if present.
    `skip_rule`: None judges each task by `skip_rule_for(task)` (SWE-bench's rule for imported tasks);
    `limits`: the sandbox's for every grade (None: its defaults); `allow_network`: let the test runs reach the
    network (`grade`'s opt-in; the report says so)."""
    predictions = list(predictions)
    report = BatchReport(
        submitted=[p.instance_id for p in predictions],
        total_instances=len(tasks),
        allow_network=allow_network,
    )
    partial = partial_path(report_path)
    for row in read_jsonl_records(partial):
        report.results[row["instance_id"]] = GradeResult.from_dict(row)
    todo: list[Prediction] = []
    for prediction in predictions:
        if prediction.instance_id not in tasks:
            report.unknown.append(prediction.instance_id)
            continue
        if not prediction.model_patch.strip():
            report.empty_patch.append(prediction.instance_id)
        if prediction.instance_id not in report.results:
            todo.append(prediction)
    if on_start:
        on_start(len(todo), len(report.results))
    lock = threading.Lock()
    runtimes = RuntimePool(sandbox, repos_dir, limits)  # one environment per key, a failed build not retried

    def _one(prediction: Prediction) -> GradeResult:
        task = tasks.get(prediction.instance_id)
        rule = skip_rule or skip_rule_for(task)
        return guarded_grade(
            task, prediction.model_patch, runtimes=runtimes, skip_rule=rule, allow_network=allow_network
        )

    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    try:
        futures = [pool.submit(_one, p) for p in todo]
        for future in as_completed_interruptibly(futures):
            result = future.result()
            with lock:
                append_jsonl(partial, result.to_dict())
                report.results[result.instance_id] = result
            if on_result:
                on_result(result)
    finally:
        # On Ctrl-C, grades not yet started are cancelled (the saved ones resume); running ones finish.
        pool.shutdown(wait=True, cancel_futures=True)
    write_json(report_path, report.to_dict())
    return report


def guarded_grade(task: Task, patch: str, **options: Any) -> GradeResult:
    """`grade(task, patch, **options)`, with whatever it raises (not Ctrl-C) turned into an INFRA_ERROR grade
    that names the exception: for callers that grade many tasks and must go on past a bad one."""
    try:
        return grade(task, patch, **options)
    except Exception as exc:  # recorded as the instance's grade: the batch goes on
        return crash_result(task, exc)


def crash_result(task: Task, exc: BaseException) -> GradeResult:
    """The INFRA_ERROR grade of a grade that raised `exc`: its type, message and where it was raised.

    >>> from repogym.task import Task
    >>> task = Task(instance_id="a__b-1", repo="a/b", base_commit="0" * 40, patch="", FAIL_TO_PASS=["t"])
    >>> crash_result(task, FileNotFoundError(2, "No such file or directory")).detail
    'grading raised FileNotFoundError: [Errno 2] No such file or directory'
    """
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name})" if frames else ""
    return GradeResult(
        instance_id=task.instance_id,
        outcome=Outcome.INFRA_ERROR,
        status=ResolvedStatus.NO,
        fail_to_pass=dict.fromkeys(task.FAIL_TO_PASS),
        pass_to_pass=dict.fromkeys(task.PASS_TO_PASS),
        detail=f"grading raised {type(exc).__name__}: {exc}{where}",
    )
