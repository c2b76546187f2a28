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
import logging
from collections.abc import Mapping
from typing import Any

from repogym.errors import RepogymError
from repogym.integrations.rows import GroundTruth, Mode, Verdict, answer_verdict, not_graded

#: verl's data_source of every exported row (verl groups its validation metrics by it).
DATA_SOURCE = "repogym"
#: The key of the agent loop's verdict in a trajectory's extra fields (and so in extra_info).
EPISODE_FIELD = "repogym_episode"

_log = logging.getLogger(__name__)


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
        return not_graded(f"{exc}").to_dict()
    if truth.mode is Mode.AGENT:
        return _episode_verdict(truth, extra_info).to_dict()
    return answer_verdict(truth, solution_str).to_dict()


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


__all__ = ["DATA_SOURCE", "EPISODE_FIELD", "GroundTruth", "Mode", "Verdict", "compute_score", "episode_stash"]
