"""What every bridge's row carries (`GroundTruth`: the task record) and what grading it gives (`Verdict`).

A trainer hands its reward code a row's label as text and a completion; the bridges (verl, OpenRLHF,
SkyRL) all read the same `GroundTruth` JSON and score an agentless answer the same way
(`answer_verdict`: exactly as `AgentlessEnv.step` scores it), so a completion earns one reward under
every trainer. A row that cannot be graded is `NOT_GRADED` and scores 0.0 with a logged warning, never
success and never an exception.
"""

from __future__ import annotations

import enum
import json
import logging
from dataclasses import dataclass
from typing import Any

from repogym.errors import DatasetError, RepogymError
from repogym.integrations.task_envs import ENVS
from repogym.task import Task
from repogym.train.rl_reward import Scored, scored_from_info

FORMAT_ERROR = "FORMAT_ERROR"
NOT_GRADED = "NOT_GRADED"

_log = logging.getLogger(__name__)


class Mode(enum.StrEnum):
    """How a row is played: one SWE-RL answer, or an episode of tool calls (repogym's env modes)."""

    AGENTLESS = "agentless"
    AGENT = "agent"


@dataclass(frozen=True)
class GroundTruth:
    """What grading one row needs, carried as JSON text in the row (verl's `reward_model.ground_truth`,
    OpenRLHF's label, SkyRL's `reward_spec.ground_truth`).

    Text, not a parquet struct: a task's free-form fields (metadata, extra, env) differ from row to row, and
    parquet merges a column's struct types, giving every row the others' keys as nulls; the text comes back
    as it went, and `Task.from_dict` reads it as it reads any task file.
    """

    mode: Mode
    sandbox: str
    """The sandbox backend the row is graded in (bwrap, local)."""
    task: Task

    @property
    def instance_id(self) -> str:
        return self.task.instance_id

    @property
    def record(self) -> str:
        """The task record as canonical JSON text: the key of the envs that grade it."""
        return json.dumps(self.task.to_dict(), sort_keys=True, ensure_ascii=False)

    def to_json(self) -> str:
        data = {"instance_id": self.instance_id, "mode": self.mode.value, "sandbox": self.sandbox}
        return json.dumps({**data, "task": self.task.to_dict()}, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: Any) -> GroundTruth:
        """The ground truth of a row; DatasetError naming what is wrong for anything else."""
        if not isinstance(text, str):
            raise DatasetError(f"ground_truth: expected repogym's JSON text, got {type(text).__name__}")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"ground_truth: not JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(data, dict):
            raise DatasetError(f"ground_truth: expected a JSON object, got {type(data).__name__}")
        mode, sandbox = data.get("mode"), data.get("sandbox")
        if mode not in tuple(Mode):
            raise DatasetError(f"ground_truth: mode {mode!r} is none of {', '.join(Mode)}")
        if not isinstance(sandbox, str) or not sandbox:
            raise DatasetError(f"ground_truth: sandbox {sandbox!r} is not a sandbox backend's name")
        task = Task.from_dict(data.get("task"), where="ground_truth.task")
        if data.get("instance_id") != task.instance_id:
            raise DatasetError(
                f"ground_truth: instance_id {data.get('instance_id')!r} is not its task's ({task.instance_id!r})"
            )
        return cls(Mode(mode), sandbox, task)


@dataclass(frozen=True)
class Verdict:
    """One completion's reward and what a trainer logs beside it."""

    score: float
    resolved: bool = False
    format_error: bool = False
    outcome: str = NOT_GRADED
    """The grade's outcome (RESOLVED, UNRESOLVED, ...), FORMAT_ERROR (malformed, not graded) or NOT_GRADED."""

    @classmethod
    def of(cls, scored: Scored) -> Verdict:
        """The verdict of an env's scoring (its last step's info, read by `scored_from_info`)."""
        if scored.grade is not None:
            outcome = scored.grade.outcome.value
        else:
            outcome = FORMAT_ERROR if scored.format_error else NOT_GRADED
        return cls(scored.breakdown.total, scored.resolved, scored.format_error, outcome)

    def to_dict(self) -> dict[str, float | str]:
        """verl's result: the reward under `score`, the rest logged per data source."""
        return {
            "score": self.score,
            "acc": float(self.resolved),
            "format_error": float(self.format_error),
            "outcome": self.outcome,
        }


def answer_verdict(truth: GroundTruth, answer: Any) -> Verdict:
    """An agentless row's answer scored exactly as `AgentlessEnv.step(answer)` scores it (a non-string is a
    malformed answer); NOT_GRADED (logged) when the task's repository or environment cannot be set up."""
    try:
        with ENVS.borrowed(truth.task, truth.record, truth.mode, truth.sandbox) as env:
            env.reset()
            _, _, _, _, info = env.step(answer if isinstance(answer, str) else "")
    except RepogymError as exc:
        return not_graded(f"{truth.instance_id}: {exc}")
    return Verdict.of(scored_from_info(info))


def not_graded(reason: str) -> Verdict:
    """The verdict of a row that cannot be graded: 0.0, with the reason logged."""
    _log.warning("repogym reward: not graded, scored 0.0: %s", reason)
    return Verdict(0.0)
