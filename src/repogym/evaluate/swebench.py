"""An eval's SWE-bench files: one prediction per task and the report `repogym grade --predictions` writes.

The prediction of a task is its FIRST attempt (attempt 0), whatever it scored. Picking a resolved
attempt among n would need the tests to choose (an oracle), which SWE-bench's pass@1 does not allow;
picking by a verifier is best-of-n, a different number. So `predictions.jsonl` graded by SWE-bench's
harness (or `repogym grade --predictions`) should match this eval's "first attempt" resolve rate,
which summary.json records as `first_attempt_resolved`.

The report reuses each first attempt's grade from the rollout (the same `grade()` that `repogym
grade` runs), so the eval does not grade twice. Attempts that never got graded are placed as
SWE-bench would see them: a build or infrastructure failure is an error instance; a policy that
failed before producing a patch (endpoint down) is submitted but not completed (`incomplete_ids`).
"""

from __future__ import annotations

from collections.abc import Iterable

from repogym.agent.trajectory import AttemptOutcome, Trajectory
from repogym.grading.batch import BatchReport
from repogym.grading.report import GradeResult, Outcome, ResolvedStatus
from repogym.predictions import Prediction

#: Which attempt becomes the task's prediction (see the module docstring).
PREDICTION_ATTEMPT = 0

_UNGRADED_AS: dict[AttemptOutcome, Outcome] = {
    AttemptOutcome.ENV_BUILD_FAILED: Outcome.ENV_BUILD_FAILED,
    AttemptOutcome.INFRA_ERROR: Outcome.INFRA_ERROR,
}


def first_attempts(trajectories: Iterable[Trajectory]) -> dict[str, Trajectory]:
    """instance_id -> the trajectory of its prediction attempt."""
    return {t.instance_id: t for t in trajectories if t.attempt == PREDICTION_ATTEMPT}


def predictions_of(chosen: dict[str, Trajectory], model_name: str) -> list[Prediction]:
    return [Prediction(iid, model_name, chosen[iid].final_patch) for iid in sorted(chosen)]


def swebench_report(chosen: dict[str, Trajectory], total_instances: int) -> BatchReport:
    """The BatchReport (SWE-bench's run report shape) of the chosen attempts."""
    report = BatchReport(submitted=sorted(chosen), total_instances=total_instances)
    for iid, trajectory in sorted(chosen.items()):
        if not trajectory.final_patch.strip():
            report.empty_patch.append(iid)
        if trajectory.grade is not None:
            report.results[iid] = GradeResult.from_dict(trajectory.grade)
        elif trajectory.outcome in _UNGRADED_AS:
            report.results[iid] = GradeResult(
                instance_id=iid, outcome=_UNGRADED_AS[trajectory.outcome], status=ResolvedStatus.NO,
                detail=trajectory.detail,
            )  # fmt: skip
    return report
