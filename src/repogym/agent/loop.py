"""The agent loop: a policy and a gymnasium env talk in turns until the episode ends, every step recorded.

One attempt = reset, then turns of policy -> tool calls -> env.step until the
env terminates (submit) or truncates (its max_steps or time budget: it grades
the current diff either way). Tool calls come natively from the backend or are
parsed from the reply text (`repogym.agent.parsing`); a reply with no call is
still handed to the env, which answers with a format-error observation and
counts it (so the reward's format term sees it), and the model is told how to
call a tool. An env without tools (agentless mode) gets one reply, the answer itself: the
conversation is the env's observation as the only user message (the prompt GRPO trains on) and
the reply, with no tool parsing. Limits: steps (the env's `max_steps`), wall time (the env's
`time_budget_s`, and the loop's own check before each policy call) and tokens
(prompt + completion summed over the attempt, as APIs bill them). Nothing that
happens to the attempt is raised: it becomes the trajectory's outcome.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from repogym.agent.parsing import ParsedReply, ToolCall, parse_tool_calls
from repogym.agent.policies import AssistantTurn, Policy, PolicyRequest, PolicyUnavailable, SamplingParams
from repogym.agent.prompts import Prompts, load_prompts
from repogym.agent.trajectory import AttemptOutcome, StepRecord, Trajectory
from repogym.errors import ConfigError
from repogym.task import Task

#: Tool message for calls after the one that ended the episode (OpenAI wants one reply per call id).
NOT_RUN = "(not run: the episode had already ended)"


class AgentEnv(Protocol):
    """What the loop needs from an env: gymnasium's reset/step plus the tool schemas (RepoEnv has them)."""

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]: ...
    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]: ...
    def tool_schemas(self) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class AgentLimits:
    """When the loop stops an attempt on its own; steps and time are also the env's (see `env_options`)."""

    max_steps: int = 30
    """Policy turns, and env steps (one per tool call or malformed reply)."""
    max_tokens: int = 1_000_000
    """Prompt + completion tokens summed over the attempt's policy calls; 0 = no limit."""
    max_wall_s: float = 1800.0
    """Seconds from reset to the last policy call."""

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise ConfigError(f"limits.max_steps: must be >= 1, got {self.max_steps}")
        if self.max_tokens < 0 or self.max_wall_s <= 0:
            raise ConfigError("limits: max_tokens must be >= 0 and max_wall_s > 0")

    def env_options(self) -> dict[str, Any]:
        """The env's own limits, set to match (pass to `repogym.env.make`)."""
        return {"max_steps": self.max_steps, "time_budget_s": self.max_wall_s}


@dataclass
class _State:
    """The attempt so far (mutable, private to one run)."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    started: float
    steps: list[StepRecord] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    policy_s: float = 0.0
    env_s: float = 0.0
    loop_s: float = 0.0
    last_info: dict[str, Any] = field(default_factory=dict)
    ended: bool = False


@dataclass(frozen=True)
class AgentLoop:
    """Runs attempts of one policy with fixed sampling, limits and prompts."""

    policy: Policy
    sampling: SamplingParams = field(default_factory=SamplingParams)
    limits: AgentLimits = field(default_factory=AgentLimits)
    prompts: Prompts = field(default_factory=load_prompts)

    def run(
        self, env: AgentEnv, task: Task, attempt: int = 0, metadata: dict[str, Any] | None = None
    ) -> Trajectory:
        """One attempt, start to finish; the trajectory says how it ended."""
        started = time.perf_counter()
        loop = self._for_attempt(attempt)
        observation, _ = env.reset()
        tools = env.tool_schemas()
        messages = [
            {"role": "system", "content": self.prompts.system(tools)},
            {"role": "user", "content": self.prompts.problem(
                str(observation), task.instance_id, task.repo, task.problem_statement)},
        ] if tools else [{"role": "user", "content": str(observation)}]  # fmt: skip
        state = _State(messages, tools, started)
        reset_s = time.perf_counter() - started
        outcome, detail = loop._turns(env, task, attempt, state)
        return loop._trajectory(task, attempt, state, outcome, detail, reset_s, metadata or {})

    def _for_attempt(self, attempt: int) -> AgentLoop:
        """With a seed, attempt k samples with seed + k: a group of N differs, and reruns reproduce it."""
        if self.sampling.seed is None:
            return self
        return dataclasses.replace(
            self, sampling=dataclasses.replace(self.sampling, seed=self.sampling.seed + attempt)
        )

    def _turns(self, env: AgentEnv, task: Task, attempt: int, state: _State) -> tuple[AttemptOutcome, str]:
        for index in range(self.limits.max_steps + 1):
            if limit := self._exhausted(state):
                return self._stop_early(env, state, limit)
            request = PolicyRequest(
                state.messages, state.tools, self.sampling, task.instance_id, attempt, task
            )
            policy_started = time.perf_counter()
            try:
                turn = self.policy.act(request)
            except PolicyUnavailable as exc:
                state.policy_s += time.perf_counter() - policy_started
                if (
                    exc.kind == "context"
                ):  # the conversation outgrew the model: a token budget, graded as such
                    outcome, _ = self._stop_early(env, state, AttemptOutcome.MAX_TOKENS)
                    return outcome, str(exc)
                return _policy_outcome(exc), str(exc)
            policy_s = time.perf_counter() - policy_started
            state.policy_s += policy_s
            self._step(env, state, index, turn, policy_s)
            if state.ended:
                return _ended_outcome(state.last_info), state.last_info.get("truncated_by") or "submitted"
        return (
            AttemptOutcome.INFRA_ERROR,
            f"the env did not end the episode after {self.limits.max_steps} steps",
        )

    def _exhausted(self, state: _State) -> AttemptOutcome | None:
        if self.limits.max_tokens and state.prompt_tokens + state.completion_tokens >= self.limits.max_tokens:
            return AttemptOutcome.MAX_TOKENS
        if time.perf_counter() - state.started >= self.limits.max_wall_s:
            return AttemptOutcome.WALL_TIME
        return None

    def _stop_early(
        self, env: AgentEnv, state: _State, outcome: AttemptOutcome
    ) -> tuple[AttemptOutcome, str]:
        """The loop's own limit came first: have the env grade the current diff, as its truncation does.

        The env has no 'truncate now' call, so the loop submits on the policy's behalf; the submit
        is not added to the messages (the policy did not write it).
        """
        env_started = time.perf_counter()
        _, _, _, _, info = env.step(
            {"id": "limit", "type": "function", "function": {"name": "submit", "arguments": "{}"}}
        )
        state.env_s += time.perf_counter() - env_started
        state.last_info, state.ended = info, True
        return outcome, f"{outcome.value} budget exhausted; the current diff was graded"

    def _step(self, env: AgentEnv, state: _State, index: int, turn: AssistantTurn, policy_s: float) -> None:
        loop_started = time.perf_counter()
        state.prompt_tokens += turn.prompt_tokens
        state.completion_tokens += turn.completion_tokens
        parsed = _calls_of(turn, state.tools) if state.tools else ParsedReply()  # agentless: the text is the answer
        calls = tuple(call.with_id(f"call_{index}_{n}") for n, call in enumerate(parsed.calls))
        message: dict[str, Any] = {"role": "assistant", "content": turn.text}
        if calls:
            message["tool_calls"] = [call.to_openai() for call in calls]
        state.messages.append(message)
        errors = list(parsed.errors)
        if turn.finish_reason == "length":
            errors.append("reply_truncated")
        env_s = 0.0
        loop_s = time.perf_counter() - loop_started
        if calls:
            env_s, env_errors = self._run_calls(env, state, calls)
            errors.extend(env_errors)
        elif not state.tools:
            env_s = self._run_answer(env, state, turn.text, errors)
        else:
            errors.append("no_tool_call" if not parsed.errors else "unreadable_tool_call")
            env_s = self._run_text(env, state, turn.text, errors)
        loop_started = time.perf_counter()
        state.steps.append(
            StepRecord(
                index=index, tool_calls=len(calls), call_source=parsed.source, format_errors=tuple(errors),
                prompt_tokens=turn.prompt_tokens, completion_tokens=turn.completion_tokens, policy_s=policy_s,
                env_s=env_s, loop_s=loop_s + (time.perf_counter() - loop_started), finish_reason=turn.finish_reason,
                completion_token_ids=turn.completion_token_ids, logprobs=turn.logprobs,
            )
        )  # fmt: skip
        state.env_s += env_s
        state.loop_s += state.steps[-1].loop_s

    def _run_calls(
        self, env: AgentEnv, state: _State, calls: tuple[ToolCall, ...]
    ) -> tuple[float, list[str]]:
        env_s, errors = 0.0, []
        for call in calls:
            if state.ended:
                state.messages.append({"role": "tool", "tool_call_id": call.id, "content": NOT_RUN})
                continue
            started = time.perf_counter()
            observation, _, terminated, truncated, info = env.step(call.to_openai())
            env_s += time.perf_counter() - started
            if info.get("format_error"):
                errors.append(f"env: {info['format_error']}")
            state.messages.append({"role": "tool", "tool_call_id": call.id, "content": str(observation)})
            state.last_info, state.ended = info, bool(terminated or truncated)
        return env_s, errors

    def _run_answer(self, env: AgentEnv, state: _State, text: str, errors: list[str]) -> float:
        """Agentless: the reply is the answer; the env grades it and ends (a malformed one is a format error)."""
        started = time.perf_counter()
        _, _, terminated, truncated, info = env.step(text)
        state.last_info, state.ended = info, bool(terminated or truncated)
        if info.get("format_error"):
            errors.append(f"env: {info['format_error']}")
        return time.perf_counter() - started

    def _run_text(self, env: AgentEnv, state: _State, text: str, errors: list[str]) -> float:
        """A reply without a readable call still steps the env: its answer is the format-error observation."""
        started = time.perf_counter()
        observation, _, terminated, truncated, info = env.step(text)
        env_s = time.perf_counter() - started
        state.last_info, state.ended = info, bool(terminated or truncated)
        if info.get("tool") and not info.get("format_error"):
            # The env read a call the parser did not (e.g. a bare `submit`): not a format error after all.
            errors.clear()
            state.messages.append({"role": "user", "content": str(observation)})
        else:
            reason = "; ".join(errors)
            state.messages.append(
                {"role": "user", "content": self.prompts.format_error(str(observation), reason)}
            )
        return env_s

    def _trajectory(
        self, task: Task, attempt: int, state: _State, outcome: AttemptOutcome, detail: str,
        reset_s: float, metadata: dict[str, Any],
    ) -> Trajectory:  # fmt: skip
        info = state.last_info if state.ended else {}
        grade, breakdown = info.get("grade"), info.get("reward")
        timings = {
            "total_s": time.perf_counter() - state.started,
            "reset_s": reset_s,
            "policy_s": state.policy_s,
            "env_s": state.env_s,
            "loop_s": state.loop_s,
            **{f"env_{k}": float(v) for k, v in (info.get("timings") or {}).items()},
        }
        return Trajectory(
            instance_id=task.instance_id, attempt=attempt, policy_id=self.policy.policy_id, messages=state.messages,
            outcome=outcome, resolved=bool(grade is not None and grade.resolved),
            reward=float(breakdown.total) if breakdown is not None else 0.0,
            reward_breakdown=breakdown.to_dict() if breakdown is not None else {},
            grade=grade.to_dict() if grade is not None else None, final_patch=str(info.get("patch") or ""),
            sampling=self.sampling.to_dict(), tools=state.tools, steps=state.steps,
            prompt_tokens=state.prompt_tokens, completion_tokens=state.completion_tokens,
            format_errors=sum(1 for step in state.steps if step.format_errors),
            timings=timings, detail=detail, metadata=metadata,
        )  # fmt: skip


def _calls_of(turn: AssistantTurn, tools: list[dict[str, Any]]) -> ParsedReply:
    if turn.tool_calls:
        return ParsedReply(turn.tool_calls, "native", tuple(_broken_arguments(turn.tool_calls)))
    return parse_tool_calls(turn.text, tools)


def _broken_arguments(calls: tuple[ToolCall, ...]) -> list[str]:
    """Native calls whose arguments are not a JSON object: sent to the env anyway (it explains), flagged here."""
    broken = []
    for call in calls:
        try:
            ok = isinstance(json.loads(call.arguments or "{}"), dict)
        except json.JSONDecodeError:
            ok = False
        if not ok:
            broken.append(f"broken_json: {call.name}({call.arguments[:80]})")
    return broken


def _policy_outcome(exc: PolicyUnavailable) -> AttemptOutcome:
    return {
        "unreachable": AttemptOutcome.POLICY_UNREACHABLE,
        "http_error": AttemptOutcome.POLICY_HTTP_ERROR,
    }.get(exc.kind, AttemptOutcome.POLICY_ERROR)


def _ended_outcome(info: dict[str, Any]) -> AttemptOutcome:
    return {
        None: AttemptOutcome.SUBMITTED,
        "max_steps": AttemptOutcome.MAX_STEPS,
        "time_budget": AttemptOutcome.WALL_TIME,
    }.get(info.get("truncated_by"), AttemptOutcome.MAX_STEPS)
