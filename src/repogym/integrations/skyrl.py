"""SkyRL's environment over repogym's sandbox: `RepogymTextEnv`, a skyrl-gym `BaseTextEnv`; imports without it.

skyrl-gym 0.4.0 (skyrl_gym/envs/base_text_env.py, skyrl_gym/envs/registration.py) builds one env per
trajectory by name, `skyrl_gym.make(env_class, env_config=..., extras=row)`, where `extras` is the dataset
row without its prompt (skyrl/train/dataset/dataset.py). `register()` adds `repogym` to its registry (SkyRL's
entrypoint calls it inside its Ray task, as SkyRL's own tutorial registers an env); the class is made with
skyrl-gym's base when skyrl-gym first asks for it.

Rows are `repogym export verl`'s: SkyRL's dataset format is verl's plus `env_class` (set
`environment.env_class=repogym` for the whole set) and `reward_spec`; the env reads the `GroundTruth` JSON
from `reward_spec.ground_truth` or, as the verl export writes it, `reward_model.ground_truth`.

- agentless rows: one turn; the reply is scored as `AgentlessEnv.step` scores it, and the episode ends.
- agent rows: `init` opens a sandbox episode of the task (`repogym.integrations.episodes`); each reply's
  tool calls run in it and their output comes back as a user message; the episode ends on `submit`, or
  at SkyRL's `max_turns` (its diff graded as RepoEnv grades a truncated episode); `close` closes it.

A trajectory SkyRL stops for length (its input past `max_input_length`) is never stepped again and the env
is not told: its diff is not graded, and its reward is whatever its steps returned. Were that 0.0, it would
tie with an empty submission (0.0) and beat a submitted patch that does not compile (-0.5 with the defaults):
nothing would teach a policy to end its episode, and one holding a broken edit would do better by talking
until the budget runs out than by submitting it. So the reward SkyRL
sees is repogym's reward shifted up by the reward's floor (`ComposedReward.floor`, the lowest total any
attempt can get: -1.6 in agent mode, -2.6 agentless, with the defaults): every step before the last
earns 0.0, the last `score - floor` >= 0, and a trajectory cut anywhere earns 0.0, no more than the worst
graded attempt (and less than giving up with an empty submission). The shift is the same for every trajectory, so GRPO's group-normalised advantages are
those of repogym's reward; SkyRL's `zero_reward_on_non_stop` (0.0 for a trajectory stopped for length)
then means what it says. It holds in both of SkyRL's reward modes (the last step's reward, or the sum of
per-turn rewards), which the env cannot tell apart.

The final step's metadata holds the verdict as repogym grades it (`score`: the unshifted reward, `acc`,
`format_error`, `outcome`) and `get_metrics` the numeric part for SkyRL's logs.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from typing import Any

from repogym.env.base import build_reward
from repogym.errors import DatasetError
from repogym.integrations.episodes import EPISODES
from repogym.integrations.rows import GroundTruth, Mode, Verdict, answer_verdict

#: The env_class rows name (`environment.env_class=repogym`).
ENV_ID = "repogym"
ENTRY_POINT = f"{__name__}:RepogymTextEnv"
#: Turns an agent episode gets when SkyRL gives none (its generator sets `extras["max_turns"]`).
DEFAULT_MAX_TURNS = 30

_log = logging.getLogger(__name__)


@functools.cache
def reward_floor(mode: Mode) -> float:
    """The lowest total the mode's reward can give (the bridges grade with the env's default reward)."""
    return build_reward(None, mode.value).floor


def skyrl_reward(verdict: Verdict, mode: Mode) -> float:
    """What SkyRL is given for an ended episode: repogym's reward minus its floor (see the module), never
    below the 0.0 a trajectory cut for length gets; a component outside its documented [-1, 1] is logged.

    >>> skyrl_reward(Verdict(-0.5), Mode.AGENT), skyrl_reward(Verdict(1.0), Mode.AGENT)
    (1.1, 2.6)
    """
    shifted = verdict.score - reward_floor(mode)
    if shifted < 0.0:
        _log.warning(
            "repogym reward %.3f is below its floor %.3f (a component outside [-1, 1]): given to SkyRL as 0.0",
            verdict.score,
            reward_floor(mode),
        )
        return 0.0
    return round(shifted, 12)


def register() -> None:
    """Add `repogym` to skyrl-gym's registry (again is a no-op: skyrl-gym refuses a second registration)."""
    import skyrl_gym

    if ENV_ID not in skyrl_gym.registry:
        skyrl_gym.register(id=ENV_ID, entry_point=ENTRY_POINT)


def ground_truth_text(extras: Mapping[str, Any]) -> Any:
    """The GroundTruth JSON of a SkyRL row: `reward_spec.ground_truth` (SkyRL's key) or
    `reward_model.ground_truth` (verl's, which `repogym export verl` writes); DatasetError without either.

    >>> ground_truth_text({"reward_model": {"style": "rule", "ground_truth": "{}"}})
    '{}'
    """
    for key in ("reward_spec", "reward_model"):
        spec = extras.get(key)
        if isinstance(spec, Mapping) and "ground_truth" in spec:
            return spec["ground_truth"]
    raise DatasetError(
        f"extras: no reward_spec.ground_truth nor reward_model.ground_truth (keys: {sorted(extras)}); "
        "export the tasks with repogym export verl"
    )


class TextEnvLogic:
    """What `RepogymTextEnv` adds to skyrl-gym's BaseTextEnv: one row's task, played in repogym's sandbox."""

    turns: int
    max_turns: int

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        extras = extras or {}
        self.truth = GroundTruth.from_json(ground_truth_text(extras))
        self.turns = 0
        self.max_turns = int(extras.get("max_turns") or DEFAULT_MAX_TURNS)
        self.verdict: Verdict | None = None
        """The grade's verdict once the episode ended; None before."""
        self._episode_key: str | None = None

    def init(self, prompt: list[dict[str, str]]) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """The prompt unchanged; an agent row's episode opened and reset."""
        if self.truth.mode is Mode.AGENT and self._episode_key is None:
            self._episode_key = EPISODES.open(self.truth)
        return prompt, {}

    def step(self, action: str) -> dict[str, Any]:
        """One reply: scored (agentless), or its tool calls run in the episode (agent); see the module."""
        self.turns += 1
        if self.truth.mode is Mode.AGENTLESS:
            self.verdict = answer_verdict(self.truth, action)
            return self._ended()
        episode = EPISODES.get(self._episode_key)
        if episode is None:
            raise RuntimeError("RepogymTextEnv.step before init: skyrl-gym calls init(prompt) first")
        observation = episode.reply(str(action))
        if episode.verdict is None and self.turns >= self.max_turns:
            episode.finish()
        self.verdict = episode.verdict
        if self.verdict is not None:
            return self._ended()
        message = {"role": "user", "content": observation}
        return {"observations": [message], "reward": 0.0, "done": False, "metadata": {}}

    def close(self) -> None:
        """Close the agent episode (its sandbox episode goes); again is a no-op."""
        key, self._episode_key = self._episode_key, None
        if key is not None:
            EPISODES.close(key)

    def get_metrics(self) -> dict[str, Any]:
        """The verdict's numbers for SkyRL's logs (averaged over episodes by BaseTextEnv)."""
        if self.verdict is None:
            return {"turns": self.turns}
        return {
            "turns": self.turns,
            "resolved": float(self.verdict.resolved),
            "format_error": float(self.verdict.format_error),
        }

    def _ended(self) -> dict[str, Any]:
        assert self.verdict is not None
        return {
            "observations": [],
            "reward": skyrl_reward(self.verdict, self.truth.mode),
            "done": True,
            "metadata": self.verdict.to_dict(),
        }


@functools.cache
def text_env_class() -> type:
    """`RepogymTextEnv`: TextEnvLogic over skyrl-gym's BaseTextEnv."""
    from skyrl_gym.envs.base_text_env import BaseTextEnv

    namespace = {"__module__": __name__, "__doc__": TextEnvLogic.__doc__}
    return type("RepogymTextEnv", (TextEnvLogic, BaseTextEnv), namespace)


def __getattr__(name: str) -> type:
    """`RepogymTextEnv`, made with skyrl-gym's base when skyrl-gym first builds it."""
    if name == "RepogymTextEnv":
        return text_env_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
