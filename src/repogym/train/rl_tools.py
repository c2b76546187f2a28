"""Agent mode under TRL: repogym's tools as the methods of an `environment_factory` env.

TRL makes every public method of the env's class a tool (its schema from the type hints and
Google-style docstring) and calls `reset(**row)` before each rollout. `tool_env_class(envs, ...)`
builds that class from repogym's tool registry, so the model sees the same tools, descriptions and
argument names as in `repogym play` and `repogym rollout`, and every call runs through
`RepoEnv.step` in the episode's sandbox (bad arguments are the env's format errors, as anywhere).

Grading: `submit()` ends the episode at once. With rollout.async the submitted diff starts grading
on the run's pool right then (`RepoEnv.step(submit)` in a worker thread: diff, fresh grading
episode, reward), while the rest of the group is still generating; without it, and for rollouts
that never submit (TRL's turn or token budget ran out), grading starts when the rewards are
computed, all of the group at once. There is no `get_reward`: TRL would call it env by env and
log one number, while repogym's reward functions grade the group in parallel and log each term.
Tool output is masked out of the loss by TRL (its tool_mask).
"""

from __future__ import annotations

import inspect
import json
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from repogym.env.repo_env import RepoEnv
from repogym.env.tools import Tool, tool_names, tools
from repogym.train.rl_reward import Scored, scored_from_info
from repogym.train.rl_tasks import TaskEnvs

_ANNOTATIONS = {"string": str, "integer": int, "array": list[str]}
_SUBMIT = {"id": "submit", "type": "function", "function": {"name": "submit", "arguments": "{}"}}
ENDED = "The episode is over: your changes were submitted and are graded by the hidden tests."


class _ToolEnvBase:
    """State of one rollout: the task's RepoEnv (its sandbox episode) and the grading of its diff."""

    envs: TaskEnvs
    pool: ThreadPoolExecutor
    grade_on_submit: bool

    def __init__(self) -> None:
        self._env: RepoEnv | None = None
        self._instance_id = ""
        self._grading: Future[Scored] | None = None
        self._submitted = False

    def reset(self, **row: Any) -> None:
        """Open a fresh episode of the row's task (the prompt already holds its observation)."""
        if self._grading is not None:
            self._grading.result()  # never reset an episode whose diff is still being graded
        instance_id = row["instance_id"]
        if self._env is not None and instance_id != self._instance_id:
            self._env.close()
            self.envs.give(self._instance_id, self._env)
            self._env = None
        if self._env is None:
            env = self.envs.take(instance_id)
            assert isinstance(env, RepoEnv), "agent mode makes RepoEnvs"
            self._env, self._instance_id = env, instance_id
        self._env.reset()
        self._grading, self._submitted = None, False

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        if self._env is None:
            raise RuntimeError("reset() must open an episode before a tool is called")
        if self._submitted:
            return ENDED
        if name == "submit":
            self._submitted = True
            if self.grade_on_submit:
                self._start_grading()
            return "Submitted: your changes are being graded by the hidden tests."
        call = {
            "id": name,
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        observation, _, _, _, _ = self._env.step(call)
        return str(observation)

    def _start_grading(self) -> Future[Scored]:
        """Grade the episode's diff on the pool (once); the future's Scored holds the reward breakdown."""
        if self._grading is None:
            self._grading = self.pool.submit(self._grade)
        return self._grading

    def _grade(self) -> Scored:
        assert self._env is not None
        started = time.monotonic()
        _, _, _, _, info = self._env.step(_SUBMIT)
        return scored_from_info(info, submitted=self._submitted, started=started)


def tool_env_class(
    envs: TaskEnvs, pool: ThreadPoolExecutor, grade_on_submit: bool, selected: tuple[str, ...] | None = None
) -> type[_ToolEnvBase]:
    """The env class TRL's environment_factory instantiates: one method per tool the env offers."""
    methods = {name: _tool_method(tools.get(name)) for name in tool_names(selected)}
    attributes = {"envs": envs, "pool": pool, "grade_on_submit": grade_on_submit, **methods}
    return type("RepoToolEnv", (_ToolEnvBase,), attributes)


def _tool_method(tool: Tool) -> Any:
    """A method with the tool's signature and a Google-style docstring (what transformers reads)."""

    def method(self: _ToolEnvBase, **arguments: Any) -> str:
        return self._call(tool.name, {k: v for k, v in arguments.items() if v is not None})

    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    for param in tool.params:
        annotation: Any = _ANNOTATIONS[param.type]
        if not param.required:
            annotation = annotation | None
        annotations[param.name] = annotation
        default = inspect.Parameter.empty if param.required else None
        parameters.append(
            inspect.Parameter(
                param.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
            )
        )
    annotations["return"] = str
    method.__name__ = method.__qualname__ = tool.name
    method.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    method.__annotations__ = annotations
    args = "".join(f"\n    {param.name}: {param.description}" for param in tool.params)
    method.__doc__ = (
        f"{tool.description}\n\n"
        + (f"Args:{args}\n\n" if args else "")
        + "Returns:\n    The tool's output, or an error message saying what was wrong.\n"
    )
    return method
