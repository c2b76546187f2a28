"""The Policy seam: messages and tool schemas in, the next assistant message out.

A policy is anything that can write the next assistant turn of a chat: a
local transformers model (`hf:PATH`), an OpenAI-compatible endpoint
(`openai:MODEL`), a replay of given actions (`scripted:gold`,
`scripted:FILE.jsonl`), a person at the terminal (`human`) or a non-learned
baseline (`heuristic:swap`: one operator swapped in a suspicious line). They are named
by a spec string and built by `make_policy(PolicyConfig(spec=...))`; a dotted
path to a factory `fn(arg, config) -> Policy` also works.

Policies are called from many threads at once (one per running attempt), so
an implementation keeps no per-episode state: everything it needs is in the
`PolicyRequest`.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from repogym.agent.parsing import ToolCall
from repogym.errors import ConfigError, RepogymError
from repogym.registry import Registry

if TYPE_CHECKING:
    from repogym.task import Task


@dataclass(frozen=True)
class SamplingParams:
    """How to sample one reply; recorded in every trajectory."""

    temperature: float = 0.0
    """0 = greedy."""
    top_p: float = 1.0
    max_tokens: int = 512
    """Upper bound on one reply's length in tokens (a longer reply is cut: finish_reason 'length')."""
    seed: int | None = None
    """Sampling seed; backends that batch requests honour it per batch, not per request."""

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ConfigError(f"sampling.temperature: must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"sampling.top_p: must be in (0, 1], got {self.top_p}")
        if self.max_tokens < 1:
            raise ConfigError(f"sampling.max_tokens: must be >= 1, got {self.max_tokens}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class PolicyRequest:
    """Everything a policy may look at to write the next turn."""

    messages: list[dict[str, Any]]
    """The chat so far, as OpenAI chat messages."""
    tools: list[dict[str, Any]]
    """OpenAI function-calling schemas of the tools on offer."""
    sampling: SamplingParams = field(default_factory=SamplingParams)
    instance_id: str = ""
    attempt: int = 0
    task: Task | None = None
    """The task itself: only replaying policies (scripted:gold) read it; model policies must not."""

    @property
    def turn(self) -> int:
        """How many assistant turns came before this one."""
        return sum(1 for message in self.messages if message.get("role") == "assistant")


@dataclass(frozen=True)
class AssistantTurn:
    """One reply: its text and tool calls, and token facts when the backend knows them."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str = "stop"
    """'stop', 'tool_calls', or 'length' (the reply hit `max_tokens` and was cut)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    completion_token_ids: tuple[int, ...] | None = None
    logprobs: tuple[float, ...] | None = None
    """Log-probability of each completion token under the sampling distribution."""

    def message(self) -> dict[str, Any]:
        """The OpenAI assistant message for this turn."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            message["tool_calls"] = [call.to_openai() for call in self.tool_calls]
        return message


@runtime_checkable
class Policy(Protocol):
    """Writes the next assistant turn. Stateless across calls; safe to call from several threads."""

    policy_id: str
    """Names the policy in trajectories (e.g. 'openai:qwen2.5-coder-7b', 'scripted:gold')."""

    def act(self, request: PolicyRequest) -> AssistantTurn:
        """The next turn; raises `PolicyUnavailable` when the backend cannot answer at all."""
        ...

    def close(self) -> None:
        """Free what the policy holds (threads, models, connections)."""
        ...


class PolicyUnavailable(RepogymError):
    """The backend could not produce a turn (endpoint unreachable, kept failing, person quit).

    Raised by a backend, caught by the agent loop, recorded as the attempt's outcome.
    """

    def __init__(self, message: str, kind: str = "error") -> None:
        super().__init__(message)
        self.kind = kind
        """'unreachable', 'http_error' or 'error'."""


@dataclass(frozen=True)
class TokenPrice:
    """What a policy's tokens cost, per million: prompt (input) and completion (output) tokens priced apart, as
    hosted endpoints bill them. Any currency; a cost computed from it is in the same one."""

    input_per_1m: float
    output_per_1m: float

    def __post_init__(self) -> None:
        for name in ("input_per_1m", "output_per_1m"):
            value = getattr(self, name)
            if not value >= 0:  # also refuses NaN
                raise ConfigError(f"price.{name}: must be a number >= 0, got {value}")

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """The price of these tokens.

        >>> TokenPrice(2.5, 10.0).cost(prompt_tokens=400_000, completion_tokens=50_000)
        1.5
        """
        return (prompt_tokens * self.input_per_1m + completion_tokens * self.output_per_1m) / 1_000_000


@dataclass(frozen=True)
class PolicyConfig:
    """A policy spec plus its backend's options; picklable, so Ray workers can rebuild the policy."""

    spec: str
    """'scripted:gold', 'scripted:FILE.jsonl', 'hf:PATH', 'openai:MODEL', 'human', 'heuristic:swap' (a non-learned
    baseline), or a dotted path."""
    base_url: str = ""
    """openai: the endpoint's base URL, e.g. http://127.0.0.1:8000/v1 (default: $OPENAI_BASE_URL)."""
    api_key_env: str = "OPENAI_API_KEY"
    """openai: the environment variable holding the API key (unset or empty: no Authorization header)."""
    timeout_s: float = 120.0
    """openai: seconds to wait for one HTTP response."""
    max_retries: int = 4
    """openai: retries on connection errors, 429 and 5xx, with exponential backoff."""
    concurrency: int = 8
    """openai: requests in flight at once; hf: the largest generation batch."""
    logprobs: bool = False
    """openai: ask for log-probabilities and token ids (`logprobs`, vLLM's `return_token_ids`)."""
    device: str = ""
    """hf: torch device ('cpu', 'cuda', ...); empty = cuda when available."""
    price: TokenPrice | None = None
    """What its tokens cost (None: not priced); reports give money beside tokens and seconds where it is set."""

    @property
    def kind(self) -> str:
        return self.spec.partition(":")[0]

    @property
    def argument(self) -> str:
        return self.spec.partition(":")[2]


PolicyFactory = Callable[[str, PolicyConfig], Policy]

#: Backend name -> factory(argument, config). The backends register themselves on import.
policy_backends: Registry[PolicyFactory] = Registry("policy backend")

_BACKEND_MODULES = {
    "scripted": "repogym.agent.backends.scripted",
    "hf": "repogym.agent.backends.hf",
    "heuristic": "repogym.agent.backends.heuristic",
    "openai": "repogym.agent.backends.openai",
    "human": "repogym.agent.backends.human",
}


def make_policy(config: PolicyConfig | str) -> Policy:
    """Build the policy a spec names; a bad spec raises ConfigError/UnknownNameError before any attempt runs."""
    if isinstance(config, str):
        config = PolicyConfig(spec=config)
    kind, _, argument = config.spec.partition(":")
    if kind in _BACKEND_MODULES:
        importlib.import_module(_BACKEND_MODULES[kind])  # registers the backend (heavy deps load lazily)
        return policy_backends.get(kind)(argument, config)
    if "." not in kind and kind not in policy_backends:
        known = ", ".join(f"{name}:..." for name in _BACKEND_MODULES)
        raise ConfigError(
            f"--policy {config.spec!r}: unknown backend {kind!r}; use one of {known} or a dotted path"
        )
    factory = policy_backends.get(config.spec)
    return factory("", config)
