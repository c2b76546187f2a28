"""What both env modes share: text spaces, the reward they compose, and grading the final patch.

The final patch is always graded with `repogym.grading.grade.grade` in a FRESH episode of the task's
runtime, never in the episode the agent worked in: the agent controls that episode's files, test
configuration and processes, so nothing it left behind may take part in its own grading.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import gymnasium
from gymnasium import spaces

from repogym.config import RewardComponentConfig, RewardConfig
from repogym.env.options import EnvOptions
from repogym.errors import ResetNeeded
from repogym.grading.grade import grade
from repogym.grading.report import GradeResult, Outcome, ResolvedStatus
from repogym.grading.timelimit import grade_limits
from repogym.patches import changed_paths
from repogym.rewards import ComposedReward, RewardBreakdown, compose
from repogym.sandbox.base import Limits
from repogym.sandbox.runtime import TaskRuntime
from repogym.task import Task

RewardSpec = ComposedReward | RewardConfig | Mapping[str, Any] | None


class TextSpace(spaces.Space[str]):
    """Any string of at most `max_length` characters (gymnasium's Text space only allows a fixed charset)."""

    def __init__(self, max_length: int, sample_text: str = "", seed: int | None = None) -> None:
        super().__init__(None, None, seed)
        self.max_length = max_length
        self.sample_text = sample_text

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        return self.sample_text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TextSpace) and other.max_length == self.max_length

    def __repr__(self) -> str:
        return f"TextSpace(max_length={self.max_length})"


def default_reward_config(mode: str) -> RewardConfig:
    """The seed's components (tests +1.0, compile -0.5, diff -0.1); agentless mode adds SWE-RL's similarity."""
    config = RewardConfig()
    if mode == "agentless":
        similarity = RewardComponentConfig(name="patch_similarity", weight=1.0, fn="patch_similarity")
        config = RewardConfig(components=[*config.components, similarity])
    return config


def build_reward(reward: RewardSpec, mode: str) -> ComposedReward:
    if isinstance(reward, ComposedReward):
        return reward
    return compose(reward if reward is not None else default_reward_config(mode))


def read_originals(root: Path | None, paths: list[str]) -> dict[str, str]:
    """Text of each path that exists as a UTF-8 file under `root` (the pristine checkout)."""
    originals: dict[str, str] = {}
    if root is None:
        return originals
    for path in dict.fromkeys(paths):
        file = root / path
        try:
            if file.is_file() and not file.is_symlink():
                originals[path] = file.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
    return originals


class TaskEnv(gymnasium.Env[str, Any]):
    """Common state and the end of an episode: grade the patch in a fresh episode, compose the reward."""

    # render_fps only quiets gymnasium's checker: "ansi" renders the last observation, there are no frames.
    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        task: Task,
        runtime: TaskRuntime,
        options: EnvOptions,
        reward: ComposedReward,
        render_mode: str | None = None,
    ) -> None:
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode {render_mode!r} is not supported; use None or 'ansi'")
        self.task = task
        self.runtime = runtime
        self.options = options
        self.reward_fn = reward
        self.render_mode = render_mode
        self.observation_space = TextSpace(max(options.observation_chars, options.context_chars) + 2_000)
        self._running = False
        self._last_observation = ""
        self._format_errors = 0
        self._steps = 0
        self._started = 0.0

    @property
    def format_errors(self) -> int:
        return self._format_errors

    def _require_running(self) -> None:
        if not self._running:
            raise ResetNeeded(
                f"{self.task.instance_id}: step() called on an episode that has ended (or before reset()); "
                "call reset() first"
            )

    def _finish(
        self,
        patch: str,
        *,
        grade_patch: bool = True,
        score: bool = True,
        response: str | None = None,
        code_context: dict[str, str] | None = None,
        oracle_new_content: dict[str, str] | None = None,
        given_grade: GradeResult | None = None,
    ) -> tuple[GradeResult | None, RewardBreakdown | None, dict[str, float]]:
        """End the episode: grade `patch` in a fresh episode (unless `grade_patch` is False: the reward
        components then see grade=None) and compose the reward (unless `score` is False)."""
        self._running = False
        timings: dict[str, float] = {}
        grade_result = given_grade
        if grade_result is None and grade_patch:
            started = time.perf_counter()
            grade_result = self._grade(patch)
            timings["grade_s"] = time.perf_counter() - started
        if not score:
            return grade_result, None, timings
        if code_context is None:
            paths = [*changed_paths(self.task.patch), *changed_paths(patch)]
            code_context = read_originals(self.runtime.pristine, paths)
        breakdown = self.reward_fn(
            grade=grade_result,
            task=self.task,
            patch=patch,
            format_errors=self._format_errors,
            response=response,
            code_context=code_context,
            oracle_new_content=oracle_new_content,
        )
        return grade_result, breakdown, timings

    @property
    def grade_limits(self) -> Limits:
        """The limits of the test run that grades an answer (`EnvOptions.grade_timeout_s`)."""

        return grade_limits(self.task, self.runtime.limits, self.options.grade_timeout_s)

    def _grade(self, patch: str) -> GradeResult:
        # Every env over this runtime (a GRPO group, an eval's attempts) shares one verdict per distinct
        # candidate (grading/verdicts.py); each grade that runs is still a fresh episode.
        return grade(
            self.task, patch, runtime=self.runtime, test_limits=self.grade_limits, share_verdicts=True
        )

    def _infra_error(self, detail: str) -> GradeResult:
        return GradeResult(self.task.instance_id, Outcome.INFRA_ERROR, ResolvedStatus.NO, detail=detail)

    def render(self) -> str | None:  # type: ignore[override]
        return self._last_observation if self.render_mode == "ansi" else None


def end_summary(how: str, grade_result: GradeResult | None, breakdown: RewardBreakdown | None) -> str:
    """The line appended to the last observation: how the episode ended, the grade and the reward."""
    if breakdown is None:
        return f"\n[episode over: {how}; not graded, reward 0.0]\n"
    terms = ", ".join(
        f"{name} {value:+g}" if value is not None else f"{name} n/a"
        for name, value in breakdown.components.items()
    )
    if grade_result is None:
        verdict = "not graded"
    else:
        detail = f" ({grade_result.detail})" if grade_result.detail else ""
        verdict = f"grade {grade_result.outcome.value}{detail}"
    return f"\n[episode over: {how}; {verdict}; reward {breakdown.total:g} = {terms}]\n"
