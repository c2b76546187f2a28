"""check_env: what a RepoEnv must do, checked on a real task (gymnasium's env checker, in repogym's terms).

It runs, in order (each a named check in the report):

1. `gymnasium`: gymnasium's own `check_env` (spaces, reset/step signatures, seeding);
2. `reset_determinism`: reset(seed=0), reset(seed=0) and reset(seed=1) give the same observation
   (the task is fixed), inside the observation space;
3. `step_api`: a read-only tool call returns (str, 0.0, False, False, dict) and the same
   observation after another reset; a malformed action is answered and counted, not raised;
4. `gold_resolves`: the gold patch replayed as edit_file/str_replace actions (agent mode) or as
   a SEARCH/REPLACE answer (agentless mode) is RESOLVED, with reward 1.0 under the default reward
   (agentless: similarity 1.0 and reward 2.0);
5. `empty_submit`: submitting nothing (agentless: an answer without edits) does not resolve;
6. `reset_needed`: a step after the end raises ResetNeeded.

A failure raises `EnvCheckError` naming every failed check; success returns the report.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import gymnasium
from gymnasium.utils.env_checker import check_env as gymnasium_check_env

from repogym.env.agentless import SAMPLE_ANSWER, AgentlessEnv
from repogym.env.base import TaskEnv, default_reward_config, read_originals
from repogym.env.replay import patch_actions
from repogym.errors import RepogymError, ResetNeeded
from repogym.patches import changed_paths
from repogym.rewards import compose
from repogym.search_replace import answer_from_patch


class EnvCheckError(RepogymError):
    """An env failed `check_env`; the message lists each failed check and why."""


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str = ""


@dataclass(frozen=True)
class EnvCheckReport:
    instance_id: str
    checks: tuple[Check, ...]
    gold_reward: float | None = None
    empty_reward: float | None = None
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)


def check_env(env: Any, *, raise_on_failure: bool = True) -> EnvCheckReport:
    """Run every check on `env` (a repogym env, possibly wrapped); see the module docstring."""
    base = env.unwrapped if isinstance(env, gymnasium.Env) else env
    if not isinstance(base, TaskEnv):
        raise EnvCheckError(f"check_env expects an env made by repogym.env.make, got {type(env).__name__}")
    checks: list[Check] = []
    rewards: dict[str, float | None] = {}
    timings: dict[str, float] = {}
    steps = [
        ("gymnasium", _gymnasium),
        ("reset_determinism", _reset_determinism),
        ("step_api", _step_api),
        ("gold_resolves", _gold_resolves),
        ("empty_submit", _empty_submit),
        ("reset_needed", _reset_needed),
    ]
    for name, run in steps:
        started = time.perf_counter()
        try:
            detail = run(base, rewards)
            checks.append(Check(name, True, detail or ""))
        except (AssertionError, RepogymError, gymnasium.error.Error) as exc:
            checks.append(Check(name, False, f"{type(exc).__name__}: {exc}"))
        timings[name] = time.perf_counter() - started
    report = EnvCheckReport(
        base.task.instance_id, tuple(checks), rewards.get("gold"), rewards.get("empty"), timings
    )
    if raise_on_failure and not report.ok:
        failed = "; ".join(f"{c.name}: {c.detail}" for c in report.checks if not c.ok)
        raise EnvCheckError(f"{base.task.instance_id}: check_env failed: {failed}")
    return report


def _gymnasium(env: TaskEnv, _: dict[str, float | None]) -> str:
    gymnasium_check_env(env, skip_render_check=True, skip_close_check=True)
    return ""


def _reset_determinism(env: TaskEnv, _: dict[str, float | None]) -> str:
    first, info = env.reset(seed=0)
    again, _ = env.reset(seed=0)
    other, _ = env.reset(seed=1)
    assert isinstance(info, dict), f"reset() info is {type(info).__name__}, not dict"
    assert first in env.observation_space, "the reset observation is not in observation_space"
    assert first == again == other, "reset() gave different observations for one task"
    return f"{len(first)} characters"


def _step_api(env: TaskEnv, _: dict[str, float | None]) -> str:
    if isinstance(env, AgentlessEnv):
        return "agentless: one step per episode (checked by gold_resolves and empty_submit)"
    env.reset(seed=0)
    action = "view_file('.')"
    result = env.step(action)
    assert len(result) == 5, f"step() returned {len(result)} values, not 5"
    observation, reward, terminated, truncated, info = result
    assert isinstance(observation, str) and observation in env.observation_space, "bad step observation"
    assert type(reward) is float and reward == 0.0, f"intermediate reward is {reward!r}, not 0.0"
    assert terminated is False and truncated is False, "a read-only step ended the episode"
    assert isinstance(info, dict) and info.get("tool") == "view_file", f"step info is {info!r}"
    env.reset(seed=0)
    assert env.step(action)[0] == observation, "the same step after reset gave another observation"
    observation, _, terminated, _, info = env.step("view_file('unclosed")
    assert not terminated and info["format_errors"] == 1, (
        "a malformed action was not counted as a format error"
    )
    assert observation.startswith("Format error"), f"malformed action answered with {observation[:80]!r}"
    return ""


def _is_default(env: TaskEnv) -> bool:
    default = compose(default_reward_config(env.options.mode))
    mine = env.reward_fn
    return [(c.name, c.weight, c.fn) for c in mine.components] == [
        (c.name, c.weight, c.fn) for c in default.components
    ]


def _gold_resolves(env: TaskEnv, rewards: dict[str, float | None]) -> str:
    env.reset()
    if isinstance(env, AgentlessEnv):
        _, reward, terminated, _, info = env.step(answer_from_patch(env.task.patch, env.code_context))
        assert info["similarity"] == 1.0, f"the gold answer's similarity is {info['similarity']}, not 1.0"
        expected = 2.0
    else:
        originals = read_originals(env.runtime.pristine, changed_paths(env.task.patch))
        for action in patch_actions(env.task.patch, originals):
            observation, reward, terminated, truncated, info = env.step(action)
            assert not info.get("tool_error") and not info.get("format_error"), (
                f"replaying the gold patch: {action['function']['name']} failed: {observation[:300]}"
            )
            if terminated or truncated:
                break
        expected = 1.0
    grade = info.get("grade")
    assert terminated, "the episode did not terminate after the gold patch was submitted"
    assert grade is not None and grade.resolved, (
        f"the gold patch did not resolve: {grade.outcome.value if grade else 'not graded'} "
        f"{grade.detail if grade else ''}"
    )
    rewards["gold"] = reward
    if _is_default(env):
        assert math.isclose(reward, expected), (
            f"gold reward is {reward}, expected {expected} (default weights)"
        )
    return f"reward {reward:g}"


def _empty_submit(env: TaskEnv, rewards: dict[str, float | None]) -> str:
    env.reset()
    action = SAMPLE_ANSWER if isinstance(env, AgentlessEnv) else "submit()"
    _, reward, terminated, _, info = env.step(action)
    grade = info.get("grade")
    assert terminated, "submitting did not terminate the episode"
    assert grade is None or not grade.resolved, (
        "an empty submission resolved the task: its tests prove nothing"
    )
    rewards["empty"] = reward
    if _is_default(env):
        expected = -1.0 if isinstance(env, AgentlessEnv) else 0.0
        assert math.isclose(reward, expected), f"empty submission reward is {reward}, expected {expected}"
    return f"reward {reward:g}"


def _reset_needed(env: TaskEnv, _: dict[str, float | None]) -> str:
    try:
        env.step("submit()")
    except ResetNeeded:
        return ""
    raise AssertionError("step() after the episode ended did not raise ResetNeeded")
