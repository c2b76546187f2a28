"""An OpenAI-compatible chat-completions server over a local transformers model, with tool calls.

`repogym serve MODEL_DIR` puts a checkpoint behind the same HTTP API as vLLM
or a commercial endpoint, so it is evaluated through the `openai` policy like
any served model. It listens on 127.0.0.1 unless told otherwise.

Supported: POST /v1/chat/completions (messages, tools, temperature, top_p,
max_tokens / max_completion_tokens, seed, logprobs, vLLM's return_token_ids),
GET /v1/models, GET /health (or /v1/health: the engine's counters). Not
supported (answered with 400): streaming, n > 1.

Under load: requests share one continuously batched decode loop (the `hf`
backend's engine); at most `max_queue` wait for a place in the batch, further
ones get 503 with a Retry-After header; a request still unanswered after
`request_timeout_s` is dropped and answered 504; a client that hangs up
(its own timeout, Ctrl-C) has its request cancelled at the next token, so
retries never queue behind abandoned work.
"""

from __future__ import annotations

import dataclasses
import json
import select
import socket
import threading
import time
import uuid
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from repogym.agent.backends.hf import ContextOverflow, HFPolicy
from repogym.agent.backends.hf_engine import Job, JobTimedOut, QueueFull
from repogym.agent.policies import AssistantTurn, PolicyConfig, PolicyRequest, SamplingParams
from repogym.errors import ConfigError

MAX_BODY_BYTES = 32 * 1024 * 1024
#: How often a waiting handler looks whether its client is still connected.
DISCONNECT_POLL_S = 0.05


@dataclass(frozen=True)
class ServeConfig:
    """How `repogym serve` behaves under load."""

    max_batch: int = 8
    """Requests generated together (rows of the decode loop)."""
    max_queue: int = 32
    """Requests waiting for a row at most; one more is answered 503 with Retry-After. 0 = unbounded."""
    request_timeout_s: float = 100.0
    """Seconds from arrival to answer; past it the request is dropped and answered 504. Keep it below
    the clients' own timeout (the openai policy's is 120 s), so they hear 504 before giving up. 0 = none."""

    def __post_init__(self) -> None:
        if self.max_batch < 1:
            raise ConfigError(f"--max-batch: must be >= 1, got {self.max_batch}")
        if self.max_queue < 0:
            raise ConfigError(f"--max-queue: must be >= 0 (0 = unbounded), got {self.max_queue}")
        if self.request_timeout_s < 0:
            raise ConfigError(f"--request-timeout-s: must be >= 0 (0 = none), got {self.request_timeout_s}")


class BadRequest(Exception):
    """A request the server refuses, with the OpenAI error code to send."""

    def __init__(self, message: str, code: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.code = code


class ChatServer(ThreadingHTTPServer):
    """The HTTP server; `policy` answers the requests."""

    daemon_threads = True

    def __init__(
        self,
        policy: HFPolicy,
        model_name: str,
        host: str = "127.0.0.1",
        port: int = 8000,
        config: ServeConfig | None = None,
    ) -> None:
        self.policy = policy
        self.model_name = model_name
        self.config = config or ServeConfig()
        self.started = int(time.time())
        self._started_monotonic = time.monotonic()
        self.gone_before_reply = 0
        """Clients that hung up after their reply was ready (it could not be sent)."""
        super().__init__((host, port), _Handler)

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/v1"

    def submit(self, body: dict[str, Any]) -> Job:
        """Queue a request; raises BadRequest (400) or QueueFull (503)."""
        request = parse_chat_request(body)
        try:
            return self.policy.submit(request, timeout_s=self.config.request_timeout_s or None)
        except ContextOverflow as exc:
            raise BadRequest(str(exc), code="context_length_exceeded") from None

    def health(self) -> dict[str, Any]:
        """What /health answers: liveness, the limits, and the engine's counters."""
        stats = self.policy.stats()
        if stats.in_flight or stats.queue_depth:
            full = self.config.max_queue and stats.queue_depth >= self.config.max_queue
            state = "queue_full" if full else "generating"
        else:
            state = "idle"
        return {
            "status": "ok", "server": "repogym", "state": state, "model": self.model_name,
            "uptime_s": round(time.monotonic() - self._started_monotonic, 1),
            **dataclasses.asdict(self.config), **dataclasses.asdict(stats),
            "gone_before_reply": self.gone_before_reply,
        }  # fmt: skip

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self.policy.close()


def parse_chat_request(body: Any) -> PolicyRequest:
    """A chat-completions body as a PolicyRequest; raises BadRequest naming the field."""
    if not isinstance(body, dict):
        raise BadRequest("body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise BadRequest("'messages' must be a non-empty list of message objects")
    if body.get("stream"):
        raise BadRequest("'stream': streaming is not supported by repogym serve")
    if int(body.get("n") or 1) != 1:
        raise BadRequest("'n': only n=1 is supported")
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        raise BadRequest("'tools' must be a list")
    try:
        sampling = SamplingParams(
            temperature=float(body.get("temperature", 1.0) if body.get("temperature") is not None else 1.0),
            top_p=float(body.get("top_p") or 1.0),
            max_tokens=int(body.get("max_completion_tokens") or body.get("max_tokens") or 256),
            seed=int(body["seed"]) if body.get("seed") is not None else None,
        )
    except (ConfigError, TypeError, ValueError) as exc:
        raise BadRequest(f"sampling: {exc}") from None
    return PolicyRequest(messages=messages, tools=tools, sampling=sampling)


def completion_response(turn: AssistantTurn, model_name: str, body: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
    if turn.tool_calls:
        message["tool_calls"] = [
            call.with_id(f"call_{uuid.uuid4().hex[:12]}").to_openai() for call in turn.tool_calls
        ]
    choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": turn.finish_reason}
    if body.get("logprobs") and turn.logprobs is not None:
        choice["logprobs"] = {"content": [{"token_id": t, "logprob": lp} for t, lp in _pairs(turn)]}
    if body.get("return_token_ids") and turn.completion_token_ids is not None:
        choice["token_ids"] = list(turn.completion_token_ids)
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model_name,
        "choices": [choice],
        "usage": {
            "prompt_tokens": turn.prompt_tokens,
            "completion_tokens": turn.completion_tokens,
            "total_tokens": turn.prompt_tokens + turn.completion_tokens,
        },
    }


def _pairs(turn: AssistantTurn) -> list[tuple[int, float]]:
    return list(zip(turn.completion_token_ids or (), turn.logprobs or (), strict=False))


class _Handler(BaseHTTPRequestHandler):
    server: ChatServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # one line per request would drown the rollout's progress bar

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/health", "/v1/health"):
            self._send(HTTPStatus.OK, self.server.health())
        elif self.path.rstrip("/") == "/v1/models":
            model = {
                "id": self.server.model_name,
                "object": "model",
                "created": self.server.started,
                "owned_by": "repogym",
            }
            self._send(HTTPStatus.OK, {"object": "list", "data": [model]})
        else:
            self._error(HTTPStatus.NOT_FOUND, f"no route {self.path}", "not_found")

    def do_POST(self) -> None:
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._error(HTTPStatus.NOT_FOUND, f"no route {self.path}", "not_found")
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self._error(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "request body too large", "invalid_request_error"
            )
            return
        try:
            body = json.loads(self.rfile.read(length) or b"null")
            job = self.server.submit(body)
            result = self._wait(job)
            if result is not None:
                turn = self.server.policy.turn(job, result)
                self._send(HTTPStatus.OK, completion_response(turn, self.server.model_name, body))
        except json.JSONDecodeError as exc:
            self._error(HTTPStatus.BAD_REQUEST, f"body is not JSON: {exc}", "invalid_request_error")
        except BadRequest as exc:
            self._error(HTTPStatus.BAD_REQUEST, str(exc), exc.code)
        except QueueFull as exc:
            retry_after = {"Retry-After": str(int(exc.retry_after_s))}
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, str(exc), "server_busy", retry_after)
        except JobTimedOut as exc:
            hint = "; ask for fewer max_tokens, or start the server with a larger --request-timeout-s"
            self._error(HTTPStatus.GATEWAY_TIMEOUT, str(exc) + hint, "timeout")
        except Exception as exc:  # a model error is the server's fault: say so, keep serving
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"{type(exc).__name__}: {exc}", "server_error")

    def _wait(self, job: Job) -> tuple[list[int], list[float]] | None:
        """The job's result; None (and the job cancelled) as soon as the client has hung up."""
        while True:
            try:
                return job.future.result(timeout=DISCONNECT_POLL_S)
            except FutureTimeout:
                if peer_closed(self.connection):
                    job.cancel("the client disconnected")
                    self.close_connection = True
                    return None

    def _error(
        self, status: HTTPStatus, message: str, code: str, headers: dict[str, str] | None = None
    ) -> None:
        self._send(status, {"error": {"message": message, "type": code, "code": code}}, headers)

    def _send(
        self, status: HTTPStatus, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client left in the last moment: not an error
            self.server.gone_before_reply += 1
            self.close_connection = True


def peer_closed(connection: socket.socket) -> bool:
    """Whether the other end has closed the connection (readable with nothing to read), without blocking.

    Bytes waiting (a pipelined next request) mean the client is still there.
    """
    try:
        readable, _, _ = select.select([connection], [], [], 0)
        if not readable:
            return False
        return connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:  # reset by peer, or already closed
        return True


def make_server(
    model_dir: str,
    host: str = "127.0.0.1",
    port: int = 8000,
    model_name: str = "",
    device: str = "",
    serve: ServeConfig | None = None,
) -> ChatServer:
    """Load the model and bind the port (port 0 picks a free one); call serve_forever() or start_in_thread()."""
    serve = serve or ServeConfig()
    config = PolicyConfig(spec=f"hf:{model_dir}", device=device, concurrency=serve.max_batch)
    policy = HFPolicy(model_dir, config, max_queue=serve.max_queue)
    return ChatServer(policy, model_name or policy.policy_id.removeprefix("hf:"), host, port, serve)


def start_in_thread(server: ChatServer) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, name="repogym-serve", daemon=True)
    thread.start()
    return thread
