"""Trajectory records: one attempt of a policy on a task, in the chat format SFT trainers read.

A `Trajectory` is OpenAI chat messages (system/user/assistant/tool, with tool
calls) plus what an evaluation or a trainer needs beside them: the task id and
attempt number, the policy and its sampling settings, the final patch, the
GradeResult, the reward breakdown, token counts, timings and how the attempt
ended. `to_dict()` is the JSONL row (`instance_id` and `attempt` at its top
level); `from_dict()` reads it back.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from repogym.errors import DatasetError

#: Version of the row layout, written into every record so readers can adapt.
SCHEMA_VERSION = 1


class AttemptOutcome(enum.StrEnum):
    """How an attempt ended, before grading says whether it resolved the task.

    Every way an attempt can stop has a name here, so a summary can count them;
    only SUBMITTED means the policy chose to stop.
    """

    SUBMITTED = "submitted"
    """The policy called `submit`; the env graded its patch."""
    MAX_STEPS = "max_steps"
    """The step limit came first (the policy never submitted); the current diff was graded."""
    MAX_TOKENS = "max_tokens"
    """The attempt's token budget ran out; the current diff was graded."""
    WALL_TIME = "wall_time"
    """The attempt's wall-clock budget ran out; the current diff was graded."""
    POLICY_UNREACHABLE = "policy_unreachable"
    """The model endpoint could not be reached (connection refused, DNS, timeout) after retries."""
    POLICY_HTTP_ERROR = "policy_http_error"
    """The model endpoint kept answering with an error status (429, 5xx) after retries."""
    POLICY_ERROR = "policy_error"
    """The policy raised or returned something unusable (e.g. a human quit)."""
    ENV_BUILD_FAILED = "env_build_failed"
    """The task's repository or Python environment could not be prepared."""
    INFRA_ERROR = "infra_error"
    """Anything else that broke outside the policy (sandbox, grader, a bug); the detail says what."""


#: Outcomes after which the env graded a patch (the policy's or the current diff).
GRADED_OUTCOMES = frozenset(
    {AttemptOutcome.SUBMITTED, AttemptOutcome.MAX_STEPS, AttemptOutcome.MAX_TOKENS, AttemptOutcome.WALL_TIME}
)


@dataclass(frozen=True)
class StepRecord:
    """One policy turn and what the env answered to it."""

    index: int
    """0-based turn number."""
    tool_calls: int = 0
    """Tool calls the env executed for this turn."""
    call_source: str = ""
    """Where the calls came from: 'native' (the backend's tool calls) or the text format parsed
    ('tool_call_tag', 'fenced', 'json', 'call_syntax'); '' when there were none."""
    format_errors: tuple[str, ...] = ()
    """What was wrong with the reply: 'no_tool_call', 'broken_json', 'reply_truncated', or the env's
    complaint about a malformed action."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    policy_s: float = 0.0
    """Time in the policy call (model latency, retries)."""
    env_s: float = 0.0
    """Time in env.step for all this turn's calls (sandbox commands, grading on submit)."""
    loop_s: float = 0.0
    """Time the agent loop itself spent (parsing, message building): its overhead."""
    finish_reason: str = ""
    completion_token_ids: tuple[int, ...] | None = None
    """The reply's token ids, when the backend returns them (hf does; servers may)."""
    logprobs: tuple[float, ...] | None = None
    """Their log-probabilities under the sampling distribution, when known (what GRPO needs)."""


@dataclass(frozen=True)
class Trajectory:
    """One attempt, complete: the row written to the trajectory store."""

    instance_id: str
    attempt: int
    policy_id: str
    messages: list[dict[str, Any]]
    outcome: AttemptOutcome
    resolved: bool = False
    reward: float = 0.0
    """The composed reward's total (0.0 when the attempt was not graded)."""
    reward_breakdown: dict[str, Any] = field(default_factory=dict)
    """RewardBreakdown.to_dict(): total, per-component weighted values and raw values."""
    grade: dict[str, Any] | None = None
    """GradeResult.to_dict(), or None when nothing was graded."""
    final_patch: str = ""
    sampling: dict[str, Any] = field(default_factory=dict)
    tools: list[dict[str, Any]] = field(default_factory=list)
    """The OpenAI tool schemas the policy was offered (trainers render them into the prompt)."""
    steps: list[StepRecord] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    format_errors: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds: total_s, policy_s, env_s, loop_s, reset_s."""
    detail: str = ""
    """Why the attempt ended the way it did, in a line (an error message for failures)."""
    metadata: dict[str, Any] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION

    @property
    def key(self) -> tuple[str, int]:
        return (self.instance_id, self.attempt)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def grade_outcome(self) -> str | None:
        return None if self.grade is None else str(self.grade.get("outcome"))

    def to_dict(self) -> dict[str, Any]:
        """The JSONL row; enums become their string values."""
        row = asdict(self)
        row["outcome"] = self.outcome.value
        return row

    @classmethod
    def from_dict(cls, row: Mapping[str, Any], where: str = "trajectory") -> Trajectory:
        """Read a row back; unknown keys are refused (they would be silently lost)."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(row) - known)
        if unknown:
            raise DatasetError(f"{where}: unknown trajectory field(s) {unknown}")
        for name in ("instance_id", "attempt", "policy_id", "messages", "outcome"):
            if name not in row:
                raise DatasetError(f"{where}: trajectory row has no {name!r}")
        try:
            outcome = AttemptOutcome(row["outcome"])
        except ValueError:
            allowed = ", ".join(o.value for o in AttemptOutcome)
            raise DatasetError(f"{where}: unknown outcome {row['outcome']!r}; allowed: {allowed}") from None
        data = dict(row)
        data["outcome"] = outcome
        data["steps"] = [StepRecord(**_step(step)) for step in row.get("steps", [])]
        return cls(**data)


def _step(step: Mapping[str, Any]) -> dict[str, Any]:
    data = dict(step)
    data["format_errors"] = tuple(data.get("format_errors", ()))
    for name in ("completion_token_ids", "logprobs"):
        if data.get(name) is not None:
            data[name] = tuple(data[name])
    return data


def record_key(row: Mapping[str, Any]) -> tuple[str, int] | None:
    """The (instance_id, attempt) of a stored row, or None when the row has neither.

    >>> record_key({"instance_id": "a__b-1", "attempt": 2})
    ('a__b-1', 2)
    >>> record_key({"instance_id": "a__b-1"}) is None
    True
    """
    instance_id, attempt = row.get("instance_id"), row.get("attempt")
    if not isinstance(instance_id, str) or not isinstance(attempt, int) or isinstance(attempt, bool):
        return None
    return (instance_id, attempt)
