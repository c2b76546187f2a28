"""`openai:MODEL`: any OpenAI-compatible chat-completions endpoint as a policy.

vLLM, SGLang, Ollama, `repogym serve` or a commercial API: the base URL comes
from `--base-url` (or $OPENAI_BASE_URL), the API key from an environment
variable (never from a file or the command line). The HTTP client, its retries
and backoff are `repogym.textmodel.ChatEndpoint`'s (shared with every model that
writes text); its failures become `PolicyUnavailable` with the same kind, so a
400 that says the context is too long ends the attempt as a token budget, not
an error. Token usage comes from the response's `usage`.

`endpoint_report()` describes the client's settings and what it went through
(requests, retries, timeouts), plus the server's own state when the endpoint is
`repogym serve` (its /health); `repogym rollout` prints it in its summary.
"""

from __future__ import annotations

import dataclasses
import json
import os
import urllib.request
from dataclasses import dataclass
from typing import Any

from repogym.agent.parsing import ToolCall
from repogym.agent.policies import (
    AssistantTurn,
    PolicyConfig,
    PolicyRequest,
    PolicyUnavailable,
    policy_backends,
)
from repogym.errors import ConfigError
from repogym.textmodel import ChatEndpoint, ModelUnavailable


class OpenAIPolicy:
    """Chat completions over HTTP, with tools."""

    def __init__(self, model: str, config: PolicyConfig) -> None:
        self.endpoint = ChatEndpoint(
            config.base_url,
            what=f"--policy openai:{model}",
            api_key_env=config.api_key_env,
            timeout_s=config.timeout_s,
            max_retries=config.max_retries,
            concurrency=config.concurrency,
        )
        self.model = model
        self.policy_id = f"openai:{model}"
        self.url = self.endpoint.url
        self.timeout_s = config.timeout_s
        self.max_retries = config.max_retries
        self.logprobs = config.logprobs

    @property
    def usage(self) -> dict[str, int]:
        """Requests, retries, timeouts and tokens so far."""
        return self.endpoint.usage

    def act(self, request: PolicyRequest) -> AssistantTurn:
        try:
            response = self.endpoint.post(self.request_body(request))
        except ModelUnavailable as exc:  # the agent loop's term for it, with the same kind
            raise PolicyUnavailable(str(exc), kind=exc.kind) from None
        return self.parse_response(response)

    def close(self) -> None:
        """Nothing held between requests (urllib opens a connection per request)."""

    def request_body(self, request: PolicyRequest) -> dict[str, Any]:
        sampling = request.sampling
        body: dict[str, Any] = {
            "model": self.model,
            "messages": request.messages,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
        }
        if request.tools:
            body["tools"] = request.tools
            body["tool_choice"] = "auto"
        if sampling.seed is not None:
            body["seed"] = sampling.seed
        if self.logprobs:
            body["logprobs"] = True
            body["return_token_ids"] = True
        return body

    def parse_response(self, response: dict[str, Any]) -> AssistantTurn:
        try:
            choice = response["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise PolicyUnavailable(
                f"{self.url}: response has no choices[0].message: {str(response)[:200]}"
            ) from None
        calls = tuple(
            ToolCall.from_openai(call, default_id=f"call_{index}")
            for index, call in enumerate(message.get("tool_calls") or [])
        )
        prompt_tokens, completion_tokens = self.endpoint.count_tokens(response)
        return AssistantTurn(
            text=message.get("content") or "",
            tool_calls=calls,
            finish_reason=str(choice.get("finish_reason") or "stop"),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            completion_token_ids=_optional_tuple(choice.get("token_ids"))
            or _token_ids(choice.get("logprobs")),
            logprobs=_logprobs(choice.get("logprobs")),
        )


@dataclass(frozen=True)
class EndpointReport:
    """How the openai policy was set up, what its requests went through, and the server's state if known."""

    policy: str
    base_url: str
    timeout_s: float
    max_retries: int
    requests: int | None = None
    """HTTP requests sent, retries included (None: counted in other processes, e.g. Ray workers)."""
    retries: int | None = None
    timeouts: int | None = None
    """Requests the client gave up on after `timeout_s`."""
    server: dict[str, Any] | None = None
    """The server's /health when it is `repogym serve` (None for other endpoints or when unreachable)."""

    def line(self) -> str:
        """One line, e.g. 'openai:tiny at http://127.0.0.1:8000/v1, timeout 120 s, 4 retries; server: 3 batches, ...'."""
        server = self.server_line()
        return self.client_line() + (f"; server: {server}" if server else "")

    def client_line(self) -> str:
        text = f"{self.policy} at {self.base_url}, timeout {self.timeout_s:g} s, {self.max_retries} retries"
        if self.requests is not None:
            text += f" (sent {self.requests} requests: {self.retries} retries, {self.timeouts} timed out)"
        return text

    def server_line(self) -> str:
        """The server's counters ('' when the endpoint is not repogym serve)."""
        if not self.server:
            return ""
        get = self.server.get
        return (
            f"{get('batches', 0)} batches (mean {get('mean_batch', 0):g} rows), {get('completed', 0)} completed, "
            f"{get('cancelled', 0)} cancelled, {get('timed_out', 0)} timed out, {get('rejected', 0)} rejected "
            f"(queue full), now {get('state', '?')}"
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def endpoint_report(config: PolicyConfig, policy: OpenAIPolicy | None = None) -> EndpointReport:
    """The report for an openai policy (its counters when `policy` is the instance that ran)."""
    base_url = (config.base_url or os.environ.get("OPENAI_BASE_URL", "")).rstrip("/")
    usage = policy.usage if policy is not None else {}
    return EndpointReport(
        policy=config.spec, base_url=base_url, timeout_s=config.timeout_s, max_retries=config.max_retries,
        requests=usage.get("requests"), retries=usage.get("retries"), timeouts=usage.get("timeouts"),
        server=repogym_server_health(base_url),
    )  # fmt: skip


def repogym_server_health(base_url: str, timeout_s: float = 3.0) -> dict[str, Any] | None:
    """GET {base_url}/health when the endpoint is `repogym serve` (it says so); None otherwise."""
    if not base_url.startswith(("http://", "https://")):
        return None
    try:
        with urllib.request.urlopen(base_url.rstrip("/") + "/health", timeout=timeout_s) as reply:
            health = json.loads(reply.read().decode("utf-8"))
    except (OSError, ValueError):  # not there, not JSON: not ours
        return None
    return health if isinstance(health, dict) and health.get("server") == "repogym" else None


def _logprobs(block: Any) -> tuple[float, ...] | None:
    if not isinstance(block, dict) or not isinstance(block.get("content"), list):
        return None
    return tuple(float(item.get("logprob", 0.0)) for item in block["content"] if isinstance(item, dict))


def _token_ids(block: Any) -> tuple[int, ...] | None:
    """Token ids from logprobs entries that carry them (repogym serve does; OpenAI sends only text)."""
    if not isinstance(block, dict) or not isinstance(block.get("content"), list):
        return None
    ids = [item.get("token_id") for item in block["content"] if isinstance(item, dict)]
    return tuple(int(i) for i in ids) if ids and all(isinstance(i, int) for i in ids) else None


def _optional_tuple(value: Any) -> tuple[int, ...] | None:
    return tuple(int(x) for x in value) if isinstance(value, list) else None


@policy_backends.register("openai")
def make_openai_policy(argument: str, config: PolicyConfig) -> OpenAIPolicy:
    if not argument:
        raise ConfigError("--policy openai:MODEL: give the model name the endpoint serves, e.g. openai:tiny")
    return OpenAIPolicy(argument, config)
