"""RepoEnv: one task's repository as a gymnasium env; the agent acts through tool calls, the tests score it.

Episode semantics (agent mode):

- `reset(seed=None, options=None) -> (observation, info)` starts a fresh episode: the sandbox
  workspace goes back to the task's base commit. The observation is the problem statement, a
  short view of the repository and the tool names; `info` has `instance_id`, `mode`, `tools`,
  `max_steps` and `timings["reset_s"]`. The task is fixed, so the observation does not depend on
  the seed.
- `step(action) -> (observation, reward, terminated, truncated, info)` runs one tool call (see
  `repogym.env.actions` for the accepted forms and `repogym.env.tools` for the tools). The
  observation is the tool's output, cut to `observation_chars` with a marker. An action that is
  not one well-formed call is answered with an observation explaining the error and counts as a
  format error; it is never raised.
- `terminated` is True after `submit()`. `truncated` is True when the step count reaches
  `max_steps` or the step ends past `time_budget_s`; the current diff is then graded too
  (`grade_on_truncation`, default on; when off the reward is 0.0 and no grade is made).
- The reward is 0.0 on every intermediate step. On the last step the episode's diff against the
  base commit (`Episode.diff`) is graded in a fresh episode (`repogym.grading.grade.grade`) and
  the reward is the composed reward (`repogym.rewards.compose`) of that grade.
- `info` on every step: `step`, `tool` (None after a format error), `tool_call_id`,
  `format_error` (the message, or None), `tool_error`, `format_errors`, `tool_errors`. On the last
  step also: `grade` (GradeResult), `reward` (RewardBreakdown), `patch`, `steps`, `truncated_by`
  ('max_steps', 'time_budget' or None), `timings` (`episode_s`, `diff_s`, `grade_s`).
- A step after the episode ended (or before the first reset) raises `repogym.errors.ResetNeeded`
  (a `gymnasium.error.ResetNeeded`).
"""

from __future__ import annotations

import difflib
import time
from typing import Any

from gymnasium import spaces

from repogym.env.actions import ActionCall, ActionError, parse_action
from repogym.env.base import TaskEnv, TextSpace, end_summary
from repogym.env.observation import agent_intro, repo_view, truncate
from repogym.env.tools import Tool, ToolContext, ToolOutput, install_fileops, tool_names, tools
from repogym.errors import ConfigError
from repogym.sandbox.runtime import Episode

#: Read-only actions `action_space.sample()` draws from (for gymnasium's env checker and smoke tests).
SAMPLE_ACTIONS = ("bash('ls')", "search('def ')", "view_file('.')", "bash('git status --short')")


class ToolCallSpace(spaces.Space[Any]):
    """Actions are tool-call dicts, `ActionCall`s or text; whether one is well formed is the env's to judge."""

    def __init__(self, seed: int | None = None) -> None:
        super().__init__(None, None, seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def contains(self, x: Any) -> bool:
        return isinstance(x, str | dict | ActionCall)

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        return SAMPLE_ACTIONS[int(self.np_random.integers(len(SAMPLE_ACTIONS)))]

    def __repr__(self) -> str:
        return "ToolCallSpace()"


class RepoEnv(TaskEnv):
    """Multi-turn agent mode; see this module's docstring for reset/step semantics."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.action_space = ToolCallSpace()
        self.tool_names = tool_names(self.options.tools)
        self._tools: dict[str, Tool] = {name: tools.get(name) for name in self.tool_names}
        self._episode: Episode | None = None
        self._context: ToolContext | None = None
        self._intro: str | None = None
        self._tool_errors = 0

    def tool_schemas(self) -> list[dict[str, Any]]:
        """OpenAI function-calling schemas of the tools this env offers (pass them as `tools=`)."""
        return [tool.schema() for tool in self._tools.values()]

    @property
    def episode(self) -> Episode | None:
        """The sandbox episode the agent works in (None before the first reset)."""
        return self._episode

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        if options:
            raise ConfigError(f"reset(options=...): RepoEnv takes no reset options, got {sorted(options)}")
        started = time.perf_counter()
        if self._episode is None:
            self._episode = self.runtime.episode()
            install_fileops(self._episode)
        else:
            self._episode.reset()
        self._started = time.monotonic()
        self._context = ToolContext(
            self._episode, self.task, self.options, self._started + self.options.time_budget_s
        )
        self._steps = self._format_errors = self._tool_errors = 0
        self._running = True
        if self._intro is None:
            assert self.runtime.pristine is not None
            self._intro = agent_intro(self.task, repo_view(self.runtime.pristine), self.tool_names)
        self._last_observation = truncate(self._intro, self.options.context_chars)
        info = {
            "instance_id": self.task.instance_id,
            "mode": "agent",
            "tools": list(self.tool_names),
            "max_steps": self.options.max_steps,
            "timings": {"reset_s": time.perf_counter() - started},
        }
        return self._last_observation, info

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self._require_running()
        assert self._context is not None
        self._steps += 1
        info: dict[str, Any] = {"step": self._steps, "tool": None, "tool_call_id": None, "format_error": None}
        try:
            call = parse_action(action)
            info["tool_call_id"] = call.call_id
            tool = self._lookup(call.name)
            arguments = tool.bind(call)
        except ActionError as exc:
            self._format_errors += 1
            info["format_error"] = str(exc)
            output = ToolOutput(f"Format error: {exc}", error=True)
        else:
            info["tool"] = tool.name
            output = tool(self._context, arguments)
            self._tool_errors += output.error
        info.update(tool_error=output.error, format_errors=self._format_errors, tool_errors=self._tool_errors)
        observation = truncate(output.text, self.options.observation_chars)
        truncated_by = None
        if not output.submit:
            if self._steps >= self.options.max_steps:
                truncated_by = "max_steps"
            elif time.monotonic() >= self._context.deadline:
                truncated_by = "time_budget"
            else:
                self._last_observation = observation
                return observation, 0.0, False, False, info
        return self._end(observation, info, truncated_by)

    def _lookup(self, name: str) -> Tool:
        if name in self._tools:
            return self._tools[name]

        close = difflib.get_close_matches(name, list(self._tools), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ActionError(f"unknown tool {name!r}{hint}; the tools are: {', '.join(self._tools)}")

    def _end(
        self, observation: str, info: dict[str, Any], truncated_by: str | None
    ) -> tuple[str, float, bool, bool, dict[str, Any]]:
        assert self._episode is not None
        started = time.perf_counter()
        patch, diff_run = self._episode.diff()
        diff_s = time.perf_counter() - started
        failed = (
            None
            if diff_run.ok
            else self._infra_error(f"the episode's diff could not be read: {diff_run.output[-500:]}")
        )
        graded = truncated_by is None or self.options.grade_on_truncation
        grade_result, breakdown, timings = self._finish(
            patch, grade_patch=graded, score=graded, given_grade=failed
        )
        how = "submitted" if truncated_by is None else f"truncated ({truncated_by})"
        observation = truncate(observation, self.options.observation_chars) + end_summary(
            how, grade_result, breakdown
        )
        info.update(
            instance_id=self.task.instance_id,
            grade=grade_result,
            reward=breakdown,
            patch=patch,
            steps=self._steps,
            truncated_by=truncated_by,
            timings={"episode_s": time.monotonic() - self._started, "diff_s": diff_s, **timings},
        )
        self._last_observation = observation
        reward = breakdown.total if breakdown is not None else 0.0
        return observation, reward, truncated_by is None, truncated_by is not None, info

    def close(self) -> None:
        self._running = False
        if self._episode is not None:
            self._episode.close()
            self._episode = None


__all__ = ["SAMPLE_ACTIONS", "RepoEnv", "TextSpace", "ToolCallSpace"]
