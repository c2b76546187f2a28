"""verl's reward function over repogym's sandbox, and the row fields it reads; imports without verl.

verl calls `compute_score(data_source, solution_str, ground_truth, extra_info)` once per completion (its
reward managers, `reward.custom_reward_function.path=pkg://repogym.integrations.verl`,
`reward.custom_reward_function.name=compute_score`). A row's `reward_model.ground_truth` is a
`GroundTruth`: the task record itself, so a reward worker needs no task file, only the repository the
record points at (`repo_source`) and a sandbox.

- agentless rows: `solution_str` is the model's answer in SWE-RL's format (<think>...</think>
  <solution>SEARCH/REPLACE blocks</solution>); it is scored exactly as `AgentlessEnv.step(answer)`
  scores it anywhere (`repogym play`, `repogym rollout`, GRPO): the answer applied, its diff graded in a
  fresh sandbox episode, the env's default reward composed (tests +1, compile -0.5, minimal diff -0.1,
  SWE-RL's patch similarity), so the gold answer scores 2.0 and a malformed one -1.0, ungraded.
- agent rows: the episode ran in repogym's agent loop (`repogym.integrations.verl_agent`), which graded
  its diff as `RepoEnv` does on submit and left the verdict in the trajectory's extra fields; verl merges
  those into `extra_info`, where this function reads it (`EPISODE_FIELD`). `solution_str` is not read:
  the diff in the sandbox is the answer.

The result is always a dict with the same keys (verl stacks them per batch): `score` (the reward), `acc`
(1.0 when resolved, verl's core validation metric), `format_error` (1.0 when the answer was malformed) and
`outcome` (the grade's outcome, FORMAT_ERROR, or NOT_GRADED). It never raises for a row or a completion:
garbage in `solution_str` is a format error; a row that cannot be graded (unreadable ground truth, a
repository or environment that cannot be set up, an agent row that ran outside repogym's loop) scores
0.0 with outcome NOT_GRADED and a logged warning, never success. As every completion of such a row scores
the same, GRPO gives the group no advantage.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from repogym.errors import DatasetError, RepogymError
from repogym.integrations.task_envs import ENVS
from repogym.task import Task
from repogym.train.rl_reward import Scored, scored_from_info

#: verl's data_source of every exported row (verl groups its validation metrics by it).
DATA_SOURCE = "repogym"
#: The key of the agent loop's verdict in a trajectory's extra fields (and so in extra_info).
EPISODE_FIELD = "repogym_episode"
FORMAT_ERROR = "FORMAT_ERROR"
NOT_GRADED = "NOT_GRADED"

_log = logging.getLogger(__name__)


class Mode(enum.StrEnum):
    """How a row is played: one SWE-RL answer, or an episode of tool calls (repogym's env modes)."""

    AGENTLESS = "agentless"
    AGENT = "agent"


@dataclass(frozen=True)
class GroundTruth:
    """What grading one row needs, carried as JSON text in the row's `reward_model.ground_truth`.

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
    """One completion's reward and what verl logs beside it."""

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
        """What `compute_score` returns: verl's reward under `score`, the rest logged per data source."""
        return {
            "score": self.score,
            "acc": float(self.resolved),
            "format_error": float(self.format_error),
            "outcome": self.outcome,
        }


def compute_score(
    data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any = None
) -> dict[str, float | str]:
    """verl's reward of one completion, graded in repogym's sandbox (see the module docstring).

    >>> compute_score("repogym", "<solution></solution>", "not json")["outcome"]
    'NOT_GRADED'
    """
    try:
        truth = GroundTruth.from_json(ground_truth)
    except RepogymError as exc:
        return _not_graded(f"{exc}")
    if truth.mode is Mode.AGENT:
        return _episode_verdict(truth, extra_info).to_dict()
    try:
        with ENVS.borrowed(truth.task, truth.record, truth.mode, truth.sandbox) as env:
            env.reset()
            _, _, _, _, info = env.step(solution_str if isinstance(solution_str, str) else "")
    except RepogymError as exc:
        return _not_graded(f"{truth.instance_id}: {exc}")
    return Verdict.of(scored_from_info(info)).to_dict()


def episode_stash(instance_id: str, verdict: Verdict) -> dict[str, Any]:
    """What repogym's agent loop leaves in a trajectory's extra fields under EPISODE_FIELD."""
    return {"instance_id": instance_id, **dataclasses.asdict(verdict)}


def _episode_verdict(truth: GroundTruth, extra_info: Any) -> Verdict:
    """The verdict repogym's agent loop left for this trajectory; NOT_GRADED (logged) when there is none."""
    stash: Any = extra_info.get(EPISODE_FIELD) if isinstance(extra_info, Mapping) else None
    try:  # a missing or malformed verdict (None, a string, a missing key) is not graded, never raised
        if stash["instance_id"] != truth.instance_id:
            raise ValueError(f"the verdict is {stash['instance_id']!r}'s")
        return Verdict(
            float(stash["score"]),
            bool(stash["resolved"]),
            bool(stash["format_error"]),
            str(stash["outcome"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        _log.warning(
            "%s: no repogym episode verdict in extra_info[%r] (%s): agent rows run in repogym's agent loop "
            "(agent_name repogym_agent, actor_rollout_ref.rollout.agent.agent_loop_config_path) with the "
            "reward loop on; scored 0.0",
            truth.instance_id,
            EPISODE_FIELD,
            f"{type(exc).__name__}: {exc}",
        )
        return Verdict(0.0)


def _not_graded(reason: str) -> dict[str, float | str]:
    _log.warning("repogym reward: not graded, scored 0.0: %s", reason)
    return Verdict(0.0).to_dict()


__all__ = ["DATA_SOURCE", "EPISODE_FIELD", "GroundTruth", "Mode", "Verdict", "compute_score", "episode_stash"]
