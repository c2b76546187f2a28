"""OpenRLHF's reward function and agent executor over repogym's sandbox; the module imports without OpenRLHF.

OpenRLHF 0.11.2 loads user code from two files named on its command line (openrlhf/cli/train_ppo_ray.py,
openrlhf/trainer/ray/vllm_engine.py, openrlhf/utils/agent.py); `repogym export openrlhf` writes both,
each importing from here:

- `--reward.remote_url reward_func.py` (agentless rows): OpenRLHF's `SingleTurnAgentExecutor` calls
  `reward_func(queries, prompts, labels)` per completion, with the prompt and completion decoded together
  (`queries`), the templated prompt and the row's label (its `GroundTruth` JSON). The completion, the query
  past its prompt, is scored as `AgentlessEnv.step` scores it (gold 2.0, malformed -1.0).
- `--train.agent_func_path agent_func.py` (agent rows): `AgentExecutor` is OpenRLHF's
  `MultiTurnAgentExecutor` (generate, `AgentInstance.step(action_text)`, append the feedback, until done or
  the token budget is spent) run inside one sandbox episode of the row's task
  (`repogym.integrations.episodes`): opened before the first generation, each reply's tool calls run in it,
  graded on `submit` (or, when the budget ran out first, the diff graded as RepoEnv grades a truncated
  episode), closed always.

Both give OpenRLHF the same three things: `rewards` (the env's reward: the advantage's input), `scores`
(1.0 when resolved, else 0.0: what `--algo.dynamic_filtering_enable` filters groups on) and numeric
`extra_logs`. A row that cannot be graded scores 0.0, logged, never success.

The agent's feedback turns are written in ChatML with Qwen's `<tool_response>` wrapping, as OpenRLHF's
own multi-turn example writes its turns (examples/python/agent_func_gem_multiturn.py): a policy with
another chat template needs `tool_turn` changed.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from typing import Any

from repogym.errors import RepogymError
from repogym.integrations.episodes import EPISODES
from repogym.integrations.rows import GroundTruth, Mode, Verdict, answer_verdict, not_graded

IM_START, IM_END = "<|im_start|>", "<|im_end|>"
#: How much of a prompt's end finds it in a query whose prompt OpenRLHF cut from the left to fit.
PROMPT_TAIL = 256
#: The numeric logs of every verdict (OpenRLHF turns each into a tensor; an outcome's name cannot be one).
LOG_NAMES = ("repogym_resolved", "repogym_format_error")
NO_EPISODE = "This agent runs only inside repogym's AgentExecutor (--train.agent_func_path agent_func.py)."

#: The episode of the trajectory being executed: set by the executor, read by the instance it makes.
_EPISODE_KEY: contextvars.ContextVar[str | None] = contextvars.ContextVar("repogym_episode", default=None)


def reward_func(queries: list[str], prompts: list[str], labels: list[Any], **kwargs: Any) -> dict[str, Any]:
    """OpenRLHF's reward of each completion of agentless rows, graded in repogym's sandbox."""
    import torch

    verdicts = [
        _answer_verdict(query, prompt, label)
        for query, prompt, label in zip(queries, prompts, labels, strict=True)
    ]
    logs = [_logs(verdict) for verdict in verdicts]
    return {
        "rewards": torch.tensor([verdict.score for verdict in verdicts]),
        "scores": torch.tensor([float(verdict.resolved) for verdict in verdicts]),
        "extra_logs": {name: torch.tensor([log[name] for log in logs]) for name in LOG_NAMES},
    }


def completion_of(query: str, prompt: str) -> str | None:
    """The completion in an OpenRLHF query: the text past the prompt, found as the query's start or, for a
    prompt OpenRLHF cut from the left to fit, past the prompt's last PROMPT_TAIL characters; None without it.

    >>> completion_of("<user>fix it<assistant><solution>x</solution>", "<user>fix it<assistant>")
    '<solution>x</solution>'
    >>> completion_of("it<assistant>answer", "<user>fix it<assistant>") is None
    True
    """
    if query.startswith(prompt):
        return query[len(prompt) :]
    tail = prompt[-PROMPT_TAIL:]
    end = query.find(tail) if len(prompt) > PROMPT_TAIL else -1
    return query[end + len(tail) :] if end >= 0 else None


def tool_turn(observation: str, action_text: str) -> str:
    """The feedback after an assistant reply: its end (when the text lacks it), the observation as a tool
    response, the next assistant turn's start.

    >>> tool_turn("ok", "<tool_call>...</tool_call>")
    '<|im_end|>\\n<|im_start|>user\\n<tool_response>\\nok\\n</tool_response><|im_end|>\\n<|im_start|>assistant\\n'
    """
    close = "" if action_text.rstrip().endswith(IM_END) else f"{IM_END}\n"
    response = f"{IM_START}user\n<tool_response>\n{observation}\n</tool_response>{IM_END}\n"
    return f"{close}{response}{IM_START}assistant\n"


class InstanceLogic:
    """What `AgentInstance` adds to OpenRLHF's AgentInstanceBase: the model's replies acted in the episode
    of the trajectory its executor is running (made by OpenRLHF with no arguments, once per trajectory)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._episode_key = _EPISODE_KEY.get()

    async def reset(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """The prompt unchanged: the executor opened and reset the episode already."""
        return {"observation": states["observation"]}

    async def step(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """One reply's tool calls run in the episode; done once it submitted, rewarded with its grade then."""
        import torch

        episode = EPISODES.get(self._episode_key)
        action_text = str(states["action_text"])
        if episode is None:
            observation, verdict = NO_EPISODE, Verdict(0.0)
        else:
            observation = await asyncio.to_thread(episode.reply, action_text)
            verdict = episode.verdict
        done = verdict is not None
        return {
            "rewards": torch.tensor(verdict.score if verdict else 0.0),
            "scores": torch.tensor(float(verdict.resolved) if verdict else 0.0),
            "environment_feedback": "" if done else tool_turn(observation, action_text),
            "done": done,
            "sampling_params": states.get("sampling_params"),
            "extra_logs": _logs(verdict) if verdict else {},
        }


class ExecutorLogic:
    """What `AgentExecutor` adds to OpenRLHF's MultiTurnAgentExecutor: one sandbox episode around the
    trajectory, and its verdict as the trajectory's reward whether it submitted or ran out of tokens."""

    async def execute(
        self,
        prompt: Any,
        label: Any,
        sampling_params: Any,
        max_length: int,
        hf_tokenizer: Any,
        llm_engine: Any,
        images: Any = None,
    ) -> dict[str, Any]:
        """OpenRLHF's multi-turn loop inside an open episode (see the module docstring); RepogymError for a
        label that is not an agent row's ground truth or a task whose runtime cannot be set up."""
        truth = GroundTruth.from_json(label)
        key = await asyncio.to_thread(EPISODES.open, truth)
        bound = _EPISODE_KEY.set(key)
        try:
            output: dict[str, Any] = await super().execute(  # type: ignore[misc]
                prompt, label, sampling_params, max_length, hf_tokenizer, llm_engine, images
            )
            episode = EPISODES.get(key)
            assert episode is not None, "the episode stays open until this executor closes it"
            verdict = await asyncio.to_thread(episode.finish)
        finally:
            _EPISODE_KEY.reset(bound)
            await asyncio.to_thread(EPISODES.close, key)
        scores = float(verdict.resolved)
        return {**output, "reward": verdict.score, "scores": scores, "extra_logs": _logs(verdict)}


def _answer_verdict(query: Any, prompt: Any, label: Any) -> Verdict:
    try:
        truth = GroundTruth.from_json(label)
    except RepogymError as exc:
        return not_graded(f"{exc}")
    if truth.mode is Mode.AGENT:
        return not_graded(
            f"{truth.instance_id}: an agent row is played by --train.agent_func_path agent_func.py, "
            "not scored by reward_func"
        )
    completion = completion_of(str(query), str(prompt))
    if completion is None:
        return not_graded(
            f"{truth.instance_id}: the query does not hold its prompt, so no completion was found"
        )
    return answer_verdict(truth, completion)


def _logs(verdict: Verdict) -> dict[str, float]:
    return dict(zip(LOG_NAMES, (float(verdict.resolved), float(verdict.format_error)), strict=True))


@functools.cache
def agent_instance_class() -> type:
    """`AgentInstance`: InstanceLogic over OpenRLHF's AgentInstanceBase."""
    from openrlhf.utils.agent import AgentInstanceBase

    namespace = {"__module__": __name__, "__doc__": InstanceLogic.__doc__}
    return type("AgentInstance", (InstanceLogic, AgentInstanceBase), namespace)


@functools.cache
def agent_executor_class() -> type:
    """`AgentExecutor`: ExecutorLogic over OpenRLHF's MultiTurnAgentExecutor, with repogym's AgentInstance."""
    from openrlhf.utils.agent import MultiTurnAgentExecutor

    def __init__(self: Any) -> None:  # OpenRLHF makes it without arguments
        MultiTurnAgentExecutor.__init__(self, agent_instance_class())

    namespace = {"__module__": __name__, "__doc__": ExecutorLogic.__doc__, "__init__": __init__}
    return type("AgentExecutor", (ExecutorLogic, MultiTurnAgentExecutor), namespace)


_MADE_ON_FIRST_USE = {"AgentExecutor": agent_executor_class, "AgentInstance": agent_instance_class}


def __getattr__(name: str) -> type:
    """`AgentExecutor` and `AgentInstance`, made with OpenRLHF's bases when agent_func.py imports them."""
    if name in _MADE_ON_FIRST_USE:
        return _MADE_ON_FIRST_USE[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
