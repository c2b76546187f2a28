"""An OpenAI-compatible chat-completions server over a local transformers model, with tool calls.

`repogym serve MODEL_DIR` puts a checkpoint behind the same HTTP API as vLLM
or a commercial endpoint, so it is evaluated through the `openai` policy like
any served model. It listens on 127.0.0.1 unless told otherwise.

Supported: POST /v1/chat/completions (messages, tools, temperature, top_p,
max_tokens / max_completion_tokens, seed, logprobs, vLLM's return_token_ids),
GET /v1/models, GET /health. Not supported (answered with 400): streaming,
n > 1. Requests are batched by the `hf` backend underneath.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from repogym.agent.backends.hf import ContextOverflow, HFPolicy
from repogym.agent.policies import AssistantTurn, PolicyConfig, PolicyRequest, SamplingParams
from repogym.errors import ConfigError

MAX_BODY_BYTES = 32 * 1024 * 1024


class BadRequest(Exception):
    """A request the server refuses, with the OpenAI error code to send."""

    def __init__(self, message: str, code: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.code = code


class ChatServer(ThreadingHTTPServer):
    """The HTTP server; `policy` answers the requests."""

    daemon_threads = True

    def __init__(self, policy: HFPolicy, model_name: str, host: str = "127.0.0.1", port: int = 8000) -> None:
        self.policy = policy
        self.model_name = model_name
        self.started = int(time.time())
        super().__init__((host, port), _Handler)

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/v1"

    def completion(self, body: dict[str, Any]) -> dict[str, Any]:
        request = parse_chat_request(body)
        try:
            turn = self.policy.act(request)
        except ContextOverflow as exc:
            raise BadRequest(str(exc), code="context_length_exceeded") from None
        return completion_response(turn, self.model_name, body)

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
            self._send(HTTPStatus.OK, {"status": "ok"})
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
            self._send(HTTPStatus.OK, self.server.completion(body))
        except json.JSONDecodeError as exc:
            self._error(HTTPStatus.BAD_REQUEST, f"body is not JSON: {exc}", "invalid_request_error")
        except BadRequest as exc:
            self._error(HTTPStatus.BAD_REQUEST, str(exc), exc.code)
        except Exception as exc:  # a model error is the server's fault: say so, keep serving
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"{type(exc).__name__}: {exc}", "server_error")

    def _error(self, status: HTTPStatus, message: str, code: str) -> None:
        self._send(status, {"error": {"message": message, "type": code, "code": code}})

    def _send(self, status: HTTPStatus, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def make_server(
    model_dir: str,
    host: str = "127.0.0.1",
    port: int = 8000,
    model_name: str = "",
    config: PolicyConfig | None = None,
) -> ChatServer:
    """Load the model and bind the port (port 0 picks a free one); call serve_forever() or start_in_thread()."""
    policy = HFPolicy(model_dir, config or PolicyConfig(spec=f"hf:{model_dir}"))
    return ChatServer(policy, model_name or policy.policy_id.removeprefix("hf:"), host, port)


def start_in_thread(server: ChatServer) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, name="repogym-serve", daemon=True)
    thread.start()
    return thread
