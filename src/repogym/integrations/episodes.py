"""Agent-mode trajectories under a trainer: one `RepoEnv` episode each, open from the first call to the grade.

verl's tool agent loop makes, runs and releases a tool instance for every single call, so a tool call
carries no episode of its own. The episode belongs to the trajectory: repogym's agent loop
(`repogym.integrations.verl_agent`) opens it (`EPISODES.open`) before the first generation, hands its key
to every tool call, grades it when the trajectory ends (`AgentEpisode.finish`) and closes it
(`EPISODES.close`) whatever happened in between, so no sandbox episode outlives its trajectory.

Grading is `RepoEnv`'s own: `submit()` grades the episode's diff in a fresh sandbox episode and composes
the env's reward; a trajectory that ends without submitting (the trainer's turn or token budget ran out)
has its diff graded the same way at `finish`, as RepoEnv grades a truncated episode. Calls after the grade
are answered with `ENDED` and change nothing.

Trainers whose loop hands the environment the model's text (OpenRLHF, SkyRL) act through `reply`: each
tool call the text holds is run in order, as repogym's own agent loop runs them.
"""

from __future__ import annotations

import functools
import threading
import uuid
from typing import Any

from repogym.agent.parsing import parse_tool_calls
from repogym.agent.prompts import load_prompts
from repogym.env.repo_env import RepoEnv
from repogym.errors import ConfigError
from repogym.integrations.rows import GroundTruth, Mode, Verdict
from repogym.integrations.task_envs import ENVS
from repogym.train.rl_reward import scored_from_info

SUBMITTED = "Submitted: your changes are being graded by the hidden tests."
ENDED = "The episode is over: your changes were submitted and are graded by the hidden tests."
_SUBMIT = {"type": "function", "function": {"name": "submit", "arguments": {}}}


class AgentEpisode:
    """One trajectory's RepoEnv, reset and running; calls are serialised (a trainer may run them in parallel)."""

    def __init__(self, truth: GroundTruth, env: RepoEnv) -> None:
        self.truth = truth
        self.env = env
        self._lock = threading.Lock()
        self._verdict: Verdict | None = None

    @property
    def verdict(self) -> Verdict | None:
        """The grade's verdict once the episode submitted (or was finished); None while it runs."""
        with self._lock:
            return self._verdict

    def call(self, tool: str, arguments: Any) -> str:
        """Run one tool call in the episode; its observation (a malformed call's explains the error)."""
        return self.act({"type": "function", "function": {"name": tool, "arguments": arguments}})[0]

    def act(self, action: Any) -> tuple[str, str | None]:
        """One step with any action `RepoEnv.step` reads: its observation, and the format error the env found
        in it (None when it ran one tool call, or when the episode had ended)."""
        with self._lock:
            if self._verdict is not None:
                return ENDED, None
            observation, _, terminated, truncated, info = self.env.step(action)
            if terminated or truncated:  # submit(): the diff was graded in a fresh episode
                self._verdict = Verdict.of(scored_from_info(info))
                return SUBMITTED, None
            return str(observation), info.get("format_error")

    def reply(self, text: str) -> str:
        """The observation of a model's text reply: each tool call in it run in order (what the parser
        cannot read is reported, as repogym's agent loop reports it); a reply without a readable call is
        stepped as text (the env still reads a bare `submit`), and a format error answered with the
        agent's format-error prompt."""
        parsed = parse_tool_calls(text, self.env.tool_schemas())
        if parsed.calls:
            return "\n\n".join(self.call(call.name, call.arguments) for call in parsed.calls)
        observation, format_error = self.act(text)
        if format_error is None:
            return observation
        return _prompts().format_error(observation, "; ".join(parsed.errors) or "no tool call")

    def finish(self) -> Verdict:
        """The episode's verdict: the submitted grade, or the diff graded now (the trajectory never submitted)."""
        with self._lock:
            if self._verdict is None:
                _, _, _, _, info = self.env.step(_SUBMIT)
                self._verdict = Verdict.of(scored_from_info(info, submitted=False))
            return self._verdict


class Episodes:
    """The open episodes of this process, by key; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[str, AgentEpisode] = {}

    def open(self, truth: GroundTruth) -> str:
        """Open and reset an episode of the row's task; its key. ConfigError for a row that is not agent mode."""
        if truth.mode is not Mode.AGENT:
            raise ConfigError(
                f"{truth.instance_id}: an agentless row has no episode; export agent rows with --mode agent"
            )
        env = ENVS.take(truth.task, truth.record, truth.mode, truth.sandbox)
        assert isinstance(env, RepoEnv), "agent mode makes RepoEnvs"
        env.reset()
        key = uuid.uuid4().hex
        with self._lock:
            self._open[key] = AgentEpisode(truth, env)
        return key

    def get(self, key: Any) -> AgentEpisode | None:
        with self._lock:
            return self._open.get(key) if isinstance(key, str) else None

    def close(self, key: str) -> None:
        """Close the episode (its sandbox episode goes) and put its env back for the task's next trajectory."""
        with self._lock:
            episode = self._open.pop(key, None)
        if episode is not None:
            ENVS.give(episode.env, episode.truth.record, episode.truth.mode, episode.truth.sandbox)

    def __len__(self) -> int:
        with self._lock:
            return len(self._open)


#: This process's open episodes.
EPISODES = Episodes()

#: The agent's prompts (the format-error message), read once per process.
_prompts = functools.cache(load_prompts)
