"""Asking a model for text: the `TextModel` seam, its OpenAI-compatible implementation, and the HTTP client under both.

Everything in repogym that asks a model to write text goes through here: mining's issue writer
(`repogym.mining.issue_writer`), synth's issue writer (`repogym.synth.issues`) and validate's setup
agent (`repogym.validate.setup_agent`), each a `TextModel` made by `make_text_model("openai:MODEL",
...)` with its own prompt and sampling. The `openai:` policy (`repogym.agent.backends.openai`) sends
its chat requests, tools and all, through the same `ChatEndpoint`.

Guarantees: requests go over urllib with a timeout; connection errors, timeouts, 429 and 5xx are
retried with exponential backoff and jitter (a `Retry-After` header is honoured, capped); a semaphore
bounds the requests in flight; the API key comes from an environment variable, never from a file or
the command line. Every failure is a `ModelUnavailable` whose `kind` says which: 'unreachable',
'http_error', or 'context' (a 400 saying the prompt does not fit: OpenAI's
`context_length_exceeded`, vLLM's "maximum context length"). Not guaranteed: anything about what the
model writes; each caller checks the text itself.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Protocol

from repogym.errors import ConfigError, RepogymError

RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
#: Backoff: BACKOFF_BASE_S * 2**retry, jittered, at most BACKOFF_CAP_S (also caps Retry-After).
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 30.0


class ModelUnavailable(RepogymError):
    """The endpoint gave no answer: unreachable, kept failing, or refused the request."""

    def __init__(self, message: str, kind: str = "error") -> None:
        super().__init__(message)
        self.kind = kind
        """'unreachable', 'http_error', 'context' or 'error'."""


class ChatEndpoint:
    """POSTs chat-completions bodies to an OpenAI-compatible endpoint, with retries; counts what it sent."""

    def __init__(
        self,
        base_url: str,
        *,
        what: str,
        api_key_env: str = "OPENAI_API_KEY",
        timeout_s: float = 120.0,
        max_retries: int = 4,
        concurrency: int = 8,
    ) -> None:
        """`base_url` (default: $OPENAI_BASE_URL), e.g. http://127.0.0.1:8000/v1; `what` names the option
        that chose this endpoint in errors (e.g. '--policy openai:tiny')."""
        base_url = base_url or os.environ.get("OPENAI_BASE_URL", "")
        if not base_url:
            raise ConfigError(f"{what}: give --base-url (e.g. http://127.0.0.1:8000/v1)")
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"--base-url {base_url!r}: must start with http:// or https://")
        if max_retries < 0 or concurrency < 1 or timeout_s <= 0:
            raise ConfigError(f"{what}: max_retries >= 0, concurrency >= 1 and timeout_s > 0 are required")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.api_key = os.environ.get(api_key_env, "") if api_key_env else ""
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self._slots = threading.BoundedSemaphore(concurrency)
        self.usage = {"requests": 0, "retries": 0, "timeouts": 0, "prompt_tokens": 0, "completion_tokens": 0}
        self._usage_lock = threading.Lock()

    def post(self, body: dict[str, Any]) -> dict[str, Any]:
        """The endpoint's JSON answer to `body`; ModelUnavailable once the retries are spent."""
        with self._slots:
            return self._post_with_retries(body)

    def count_tokens(self, response: dict[str, Any]) -> tuple[int, int]:
        """(prompt, completion) tokens of the response's `usage`, added to the counters."""
        usage = response.get("usage") or {}
        prompt, completion = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
        with self._usage_lock:
            self.usage["prompt_tokens"] += prompt
            self.usage["completion_tokens"] += completion
        return prompt, completion

    def _count(self, key: str) -> None:
        with self._usage_lock:
            self.usage[key] += 1

    def _post_with_retries(self, body: dict[str, Any]) -> dict[str, Any]:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last_error = ""
        kind = "unreachable"
        for retry in range(self.max_retries + 1):
            if retry:
                self._count("retries")
            self._count("requests")
            request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as reply:
                    return json.loads(reply.read().decode("utf-8"))
            except urllib.error.HTTPError as exc:
                detail = exc.read().decode("utf-8", errors="replace")[:300]
                if exc.code == 400 and _says_context_too_long(detail):
                    raise ModelUnavailable(f"HTTP 400: {detail}", kind="context") from None
                last_error, kind = f"HTTP {exc.code}: {detail}", "http_error"
                if exc.code not in RETRY_STATUSES:
                    break
                delay = _retry_after(exc.headers.get("Retry-After")) if exc.headers else None
            except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
                reason = getattr(exc, "reason", exc)
                if isinstance(reason, TimeoutError):
                    self._count("timeouts")
                    reason = f"no answer within {self.timeout_s:g} s"
                last_error, kind, delay = f"cannot reach {self.url}: {reason}", "unreachable", None
            except json.JSONDecodeError as exc:
                last_error, kind, delay = f"response is not JSON: {exc}", "http_error", None
            if retry < self.max_retries:
                time.sleep(delay if delay is not None else backoff_s(retry))
        raise ModelUnavailable(f"{last_error} (after {self.max_retries} retries)", kind=kind)


class TextModel(Protocol):
    """Writes text for a system prompt and a user prompt; raises ModelUnavailable when it cannot answer."""

    name: str
    """Recorded with what it wrote, e.g. 'openai:qwen2.5-coder-7b'."""

    def write(self, system: str, user: str) -> str: ...


@dataclass(frozen=True)
class TextSampling:
    """How a text model samples; seeded, so a rerun asks the same question the same way."""

    temperature: float = 0.0
    max_tokens: int = 512
    seed: int = 0


class OpenAITextModel:
    """A `TextModel` behind an OpenAI-compatible chat-completions endpoint (vLLM, `repogym serve`, an API)."""

    def __init__(self, model: str, endpoint: ChatEndpoint, sampling: TextSampling) -> None:
        self.model = model
        self.name = f"openai:{model}"
        self.endpoint = endpoint
        self.sampling = sampling

    @property
    def usage(self) -> dict[str, int]:
        """Requests, retries, timeouts and tokens so far (the endpoint's counters)."""
        return self.endpoint.usage

    def write(self, system: str, user: str) -> str:
        body = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "temperature": self.sampling.temperature,
            "top_p": 1.0,
            "max_tokens": self.sampling.max_tokens,
            "seed": self.sampling.seed,
        }
        response = self.endpoint.post(body)
        try:
            message = response["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            raise ModelUnavailable(
                f"{self.endpoint.url}: response has no choices[0].message: {str(response)[:200]}"
            ) from None
        self.endpoint.count_tokens(response)
        return message.get("content") or ""


def make_text_model(
    spec: str,
    base_url: str,
    *,
    option: str,
    sampling: TextSampling,
    timeout_s: float = 120.0,
    max_retries: int = 2,
    concurrency: int = 2,
) -> OpenAITextModel:
    """The model of `spec`, 'openai:MODEL' (the only kind today); `option` names the flag in errors.

    >>> make_text_model("claude:x", "http://127.0.0.1:1/v1", option="--issue-writer", sampling=TextSampling())
    Traceback (most recent call last):
    ...
    repogym.errors.ConfigError: --issue-writer 'claude:x': only 'openai:MODEL' is supported (with --base-url URL), e.g. openai:qwen2.5-coder-7b
    """
    kind, _, model = spec.partition(":")
    if kind != "openai":
        raise ConfigError(
            f"{option} {spec!r}: only 'openai:MODEL' is supported (with --base-url URL), "
            "e.g. openai:qwen2.5-coder-7b"
        )
    if not model:
        raise ConfigError(f"{option} openai:MODEL: the model name is missing")
    endpoint = ChatEndpoint(
        base_url,
        what=f"{option} {spec}",
        timeout_s=timeout_s,
        max_retries=max_retries,
        concurrency=concurrency,
    )
    return OpenAITextModel(model, endpoint, sampling)


def _says_context_too_long(detail: str) -> bool:
    """Whether a 400's body says the prompt does not fit (OpenAI, vLLM and repogym serve phrase it so).

    >>> _says_context_too_long('{"error": {"code": "context_length_exceeded"}}')
    True
    >>> _says_context_too_long("This model's maximum context length is 4096 tokens."), _says_context_too_long("bad")
    (True, False)
    """
    return "context_length_exceeded" in detail or "maximum context length" in detail


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
