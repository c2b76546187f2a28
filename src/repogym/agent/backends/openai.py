"""`openai:MODEL`: any OpenAI-compatible chat-completions endpoint as a policy.

vLLM, SGLang, Ollama, `repogym serve` or a commercial API: the base URL comes
from `--base-url` (or $OPENAI_BASE_URL), the API key from an environment
variable (never from a file or the command line). Requests go over urllib with
a timeout; connection errors, timeouts, 429 and 5xx are retried with
exponential backoff and jitter (a `Retry-After` header is honoured, capped); a
semaphore bounds the requests in flight. Token usage comes from the response's
`usage`. A 400 that says the context is too long (OpenAI's
`context_length_exceeded`, vLLM's "maximum context length") is raised as kind
'context', so the agent loop ends the attempt as a token budget, not an error.

`endpoint_report()` describes the client's settings and what it went through
(requests, retries, timeouts), plus the server's own state when the endpoint is
`repogym serve` (its /health); `repogym rollout` prints it in its summary.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import threading
import time
import urllib.error
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

RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
#: Backoff: BACKOFF_BASE_S * 2**retry, jittered, at most BACKOFF_CAP_S (also caps Retry-After).
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 30.0


class OpenAIPolicy:
    """Chat completions over HTTP, with tools."""

    def __init__(self, model: str, config: PolicyConfig) -> None:
        base_url = config.base_url or os.environ.get("OPENAI_BASE_URL", "")
        if not base_url:
            raise ConfigError(f"--policy openai:{model}: give --base-url (e.g. http://127.0.0.1:8000/v1)")
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"--base-url {base_url!r}: must start with http:// or https://")
        if config.max_retries < 0 or config.concurrency < 1 or config.timeout_s <= 0:
            raise ConfigError(
                "openai policy: max_retries >= 0, concurrency >= 1 and timeout_s > 0 are required"
            )
        self.model = model
        self.policy_id = f"openai:{model}"
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.api_key = os.environ.get(config.api_key_env, "") if config.api_key_env else ""
        self.timeout_s = config.timeout_s
        self.max_retries = config.max_retries
        self.logprobs = config.logprobs
        self._slots = threading.BoundedSemaphore(config.concurrency)
        self.usage = {"requests": 0, "retries": 0, "timeouts": 0, "prompt_tokens": 0, "completion_tokens": 0}
        self._usage_lock = threading.Lock()

    def act(self, request: PolicyRequest) -> AssistantTurn:
        body = self.request_body(request)
        with self._slots:
            response = self._post_with_retries(body)
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
        usage = response.get("usage") or {}
        turn = AssistantTurn(
            text=message.get("content") or "",
            tool_calls=calls,
            finish_reason=str(choice.get("finish_reason") or "stop"),
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            completion_token_ids=_optional_tuple(choice.get("token_ids"))
            or _token_ids(choice.get("logprobs")),
            logprobs=_logprobs(choice.get("logprobs")),
        )
        with self._usage_lock:
            self.usage["prompt_tokens"] += turn.prompt_tokens
            self.usage["completion_tokens"] += turn.completion_tokens
        return turn

    def _post_with_retries(self, body: dict[str, Any]) -> dict[str, Any]:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last_error = ""
        kind = "unreachable"
        for retry in range(self.max_retries + 1):
            if retry:
                with self._usage_lock:
                    self.usage["retries"] += 1
            with self._usage_lock:
                self.usage["requests"] += 1
            request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as reply:
                    return json.loads(reply.read().decode("utf-8"))
            except urllib.error.HTTPError as exc:
                detail = exc.read().decode("utf-8", errors="replace")[:300]
                if exc.code == 400 and _says_context_too_long(detail):
                    raise PolicyUnavailable(f"HTTP 400: {detail}", kind="context") from None
                last_error, kind = f"HTTP {exc.code}: {detail}", "http_error"
                if exc.code not in RETRY_STATUSES:
                    break
                delay = _retry_after(exc.headers.get("Retry-After")) if exc.headers else None
            except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
                reason = getattr(exc, "reason", exc)
                if isinstance(reason, TimeoutError):
                    with self._usage_lock:
                        self.usage["timeouts"] += 1
                    reason = f"no answer within {self.timeout_s:g} s"
                last_error, kind, delay = f"cannot reach {self.url}: {reason}", "unreachable", None
            except json.JSONDecodeError as exc:
                last_error, kind, delay = f"response is not JSON: {exc}", "http_error", None
            if retry < self.max_retries:
                time.sleep(delay if delay is not None else backoff_s(retry))
        raise PolicyUnavailable(f"{last_error} (after {self.max_retries} retries)", kind=kind)


def _says_context_too_long(detail: str) -> bool:
    """Whether a 400's body says the prompt does not fit (OpenAI, vLLM and repogym serve phrase it so).

    >>> _says_context_too_long('{"error": {"code": "context_length_exceeded"}}')
    True
    >>> _says_context_too_long("This model's maximum context length is 4096 tokens."), _says_context_too_long("bad")
    (True, False)
    """
    return "context_length_exceeded" in detail or "maximum context length" in detail


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


def backoff_s(retry: int, rng: random.Random | None = None) -> float:
    """Seconds before retry number `retry` (0-based): exponential, full jitter in its upper half.

    >>> 0.25 <= backoff_s(0) <= 0.5 and 2.0 <= backoff_s(3) <= 4.0 and backoff_s(20) <= BACKOFF_CAP_S
    True
    """
    ceiling = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2**retry)
    return ceiling * (0.5 + 0.5 * (rng or random).random())


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta form only), capped.

    >>> _retry_after("2"), _retry_after("9999"), _retry_after("Wed, 21 Oct 2015 07:28:00 GMT")
    (2.0, 30.0, None)
    """
    try:
        return min(BACKOFF_CAP_S, max(0.0, float(value))) if value else None
    except ValueError:
        return None


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
