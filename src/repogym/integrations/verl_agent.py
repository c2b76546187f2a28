"""verl's agent mode over repogym's tools: `RepogymTool` (a verl `BaseTool`) and `RepogymAgentLoop`.

The classes are made on first use with verl's bases (`verl.tools.base_tool.BaseTool`,
`verl.experimental.agent_loop.tool_agent_loop.ToolAgentLoop`, as verl 0.9.1 names them), so this module
imports without verl; verl finds them by name (the tool config's `class_name`, the agent-loop config's
`_target_`), which is where they are first made. Their logic lives in the plain classes below.

How a trajectory runs (verl 0.9.1's ToolAgentLoop makes, runs and releases a tool instance per call, and
never calls `calc_reward`):

1. `RepogymAgentLoop.run` reads the row's ground truth, opens a sandbox episode of the task
   (`repogym.integrations.episodes`) and gives its key to every tool through `tools_kwargs`;
2. verl's loop generates; each tool call becomes `RepoEnv.step` in that episode (in a worker thread:
   the sandbox blocks), its observation the tool's response; `submit` grades the diff at once;
3. when the loop ends (submitted, or verl's turn/token budget ran out) the episode is finished (an
   unsubmitted diff is graded then, as RepoEnv grades a truncated episode), its verdict put in the
   output's extra fields (`EPISODE_FIELD`) and the episode closed; verl's reward loop merges those
   fields into `extra_info`, and `repogym.integrations.verl.compute_score` returns the verdict.

`RepogymTool.calc_reward` finishes the episode and returns its reward too, for loops that call it.
A tool called outside repogym's agent loop has no episode and answers with an error message saying so.
"""

from __future__ import annotations

import asyncio
import functools
import uuid
from typing import Any

from repogym.env.tools import tools
from repogym.integrations.episodes import EPISODES, AgentEpisode
from repogym.integrations.verl import EPISODE_FIELD, GroundTruth, episode_stash

NO_EPISODE = (
    "This tool runs only inside repogym's agent loop: give the row agent_name 'repogym_agent' and set "
    "actor_rollout_ref.rollout.agent.agent_loop_config_path to the agent_loop.yaml `repogym export verl` wrote."
)


class ToolLogic:
    """What `RepogymTool` adds to verl's BaseTool: one repogym tool (`config["tool"]`) acting in the episode
    its instance was created for."""

    config: dict[str, Any]
    name: str

    def __init__(self, config: dict[str, Any], tool_schema: Any = None) -> None:
        self._episode_keys: dict[str, str | None] = {}
        """Tool instance -> the episode it acts in (an instance lives for one call in verl 0.9.1)."""
        super().__init__(config, tool_schema)  # type: ignore[call-arg]  # verl's BaseTool, after this class

    def get_openai_tool_schema(self) -> Any:
        """The tool's schema from repogym's registry (the tool config may leave `tool_schema` out)."""
        from verl.tools.schemas import OpenAIFunctionToolSchema

        return OpenAIFunctionToolSchema.model_validate(tools.get(self.config["tool"]).schema())

    async def create(
        self, instance_id: str | None = None, create_kwargs: dict[str, Any] | None = None, **kwargs: Any
    ) -> tuple[str, Any]:
        from verl.tools.schemas import ToolResponse

        instance = instance_id or uuid.uuid4().hex
        self._episode_keys[instance] = (create_kwargs or {}).get("episode")
        return instance, ToolResponse()

    async def execute(self, instance_id: str, parameters: Any, **kwargs: Any) -> tuple[Any, float, dict]:
        """The tool's observation in the episode; reward 0.0 (the episode's grade is the reward)."""
        from verl.tools.schemas import ToolResponse

        episode = self._episode(instance_id)
        if episode is None:
            return ToolResponse(text=NO_EPISODE), 0.0, {}
        observation = await asyncio.to_thread(episode.call, self.name, parameters)
        return ToolResponse(text=observation), 0.0, {}

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """The episode's reward: its submitted grade's, or its diff graded now (0.0 outside an episode)."""
        episode = self._episode(instance_id)
        if episode is None:
            return 0.0
        return (await asyncio.to_thread(episode.finish)).score

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """Forget the instance; the episode stays open until the agent loop closes it."""
        self._episode_keys.pop(instance_id, None)

    def _episode(self, instance_id: str) -> AgentEpisode | None:
        return EPISODES.get(self._episode_keys.get(instance_id))


class AgentLoopLogic:
    """What `RepogymAgentLoop` adds to verl's ToolAgentLoop: one sandbox episode around the trajectory."""

    tools: dict[str, Any]

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> Any:
        """verl's tool loop inside an open episode; the output carries the episode's verdict (see above)."""
        truth = GroundTruth.from_json(kwargs["reward_model"]["ground_truth"])
        key = await asyncio.to_thread(EPISODES.open, truth)
        try:
            episode_kwargs = {name: {"create_kwargs": {"episode": key}} for name in self.tools}
            output = await super().run(sampling_params, **{**kwargs, "tools_kwargs": episode_kwargs})  # type: ignore[misc]
            episode = EPISODES.get(key)
            assert episode is not None, "the episode stays open until this loop closes it"
            verdict = await asyncio.to_thread(episode.finish)
            output.extra_fields[EPISODE_FIELD] = episode_stash(truth.instance_id, verdict)
            return output
        finally:
            await asyncio.to_thread(EPISODES.close, key)


@functools.cache
def tool_class() -> type:
    """`RepogymTool`: ToolLogic over verl's BaseTool."""
    from verl.tools.base_tool import BaseTool

    return type("RepogymTool", (ToolLogic, BaseTool), {"__module__": __name__, "__doc__": ToolLogic.__doc__})


@functools.cache
def agent_loop_class() -> type:
    """`RepogymAgentLoop`: AgentLoopLogic over verl's ToolAgentLoop."""
    from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop

    namespace = {"__module__": __name__, "__doc__": AgentLoopLogic.__doc__}
    return type("RepogymAgentLoop", (AgentLoopLogic, ToolAgentLoop), namespace)


_MADE_ON_FIRST_USE = {"RepogymTool": tool_class, "RepogymAgentLoop": agent_loop_class}


def __getattr__(name: str) -> type:
    """`RepogymTool` and `RepogymAgentLoop`, made with verl's bases when verl first asks for them."""
    if name in _MADE_ON_FIRST_USE:
        return _MADE_ON_FIRST_USE[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
