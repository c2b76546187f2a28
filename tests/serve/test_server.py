"""`repogym serve` and the `openai` backend, over real HTTP on loopback.

The model server is the real one over the tiny local model; the misbehaving endpoints (429, 500,
slow) are small real HTTP servers in this file, because the real server never misbehaves on cue.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from repogym.agent.backends.openai import OpenAIPolicy
from repogym.agent.parsing import ToolCall
from repogym.agent.policies import (
    AssistantTurn,
    PolicyConfig,
    PolicyRequest,
    PolicyUnavailable,
    SamplingParams,
)
from repogym.serve.server import completion_response, make_server, start_in_thread

MESSAGES = [{"role": "system", "content": "You fix bugs."}, {"role": "user", "content": "add() is wrong"}]
TOOLS = [{"type": "function", "function": {"name": "submit", "description": "Finish.",
                                           "parameters": {"type": "object", "properties": {}}}}]  # fmt: skip


@pytest.fixture(scope="module")
def server(tiny_model):
    server = make_server(str(tiny_model), port=0, model_name="tiny")
    start_in_thread(server)
    yield server
    server.stop()


def post(url: str, body: bytes) -> tuple[int, dict]:
    request = urllib.request.Request(
        url, data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def policy(base_url: str, **options) -> OpenAIPolicy:
    return OpenAIPolicy("tiny", PolicyConfig(spec="openai:tiny", base_url=base_url, **options))


def test_the_openai_backend_talks_to_the_served_model(server):
    assert server.base_url.startswith("http://127.0.0.1:")
    turn = policy(server.base_url).act(PolicyRequest(MESSAGES, TOOLS, SamplingParams(max_tokens=6)))
    assert turn.prompt_tokens > 50 and 1 <= turn.completion_tokens <= 6
    assert turn.finish_reason in ("length", "stop", "tool_calls")
    assert turn.logprobs is None  # not asked for
    asked = policy(server.base_url, logprobs=True).act(
        PolicyRequest(MESSAGES, TOOLS, SamplingParams(max_tokens=4))
    )
    assert len(asked.logprobs) == len(asked.completion_token_ids) == asked.completion_tokens
    with urllib.request.urlopen(server.base_url + "/models", timeout=10) as reply:
        assert json.loads(reply.read())["data"][0]["id"] == "tiny"


def test_logprobs_and_token_ids_on_request(server):
    body = {"model": "tiny", "messages": MESSAGES, "max_tokens": 4, "temperature": 0, "logprobs": True,
            "return_token_ids": True}  # fmt: skip
    status, reply = post(server.base_url + "/chat/completions", json.dumps(body).encode())
    assert status == 200
    choice = reply["choices"][0]
    assert (
        len(choice["token_ids"]) == len(choice["logprobs"]["content"]) == reply["usage"]["completion_tokens"]
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "body is not JSON"),
        (json.dumps({"messages": MESSAGES, "stream": True}).encode(), "streaming is not supported"),
        (json.dumps({"messages": []}).encode(), "'messages' must be a non-empty list"),
        (json.dumps({"messages": [{"role": "user", "content": "x " * 9000}], "max_tokens": 8}).encode(),
         "exceeds the model's 8192 positions"),
    ],
)  # fmt: skip
def test_bad_requests_get_a_400_that_says_why(server, body, message):
    status, reply = post(server.base_url + "/chat/completions", body)
    assert status == 400 and message in reply["error"]["message"]


def test_tool_calls_go_out_in_openai_shape():
    turn = AssistantTurn(tool_calls=(ToolCall("submit", "{}"),), finish_reason="tool_calls", prompt_tokens=3)
    reply = completion_response(turn, "tiny", {})
    call = reply["choices"][0]["message"]["tool_calls"][0]
    assert call["function"] == {"name": "submit", "arguments": "{}"} and call["id"].startswith("call_")
    assert reply["choices"][0]["finish_reason"] == "tool_calls" and reply["usage"]["total_tokens"] == 3


class Scripted(BaseHTTPRequestHandler):
    """Answers with the next status of `server.statuses`, then with a canned completion; records headers."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        server = self.server
        self.rfile.read(int(self.headers["Content-Length"]))
        with server.lock:
            server.seen.append(self.headers.get("Authorization"))
            status = server.statuses.pop(0) if server.statuses else 200
            server.in_flight += 1
            server.peak = max(server.peak, server.in_flight)
        time.sleep(server.hold_s)
        with server.lock:
            server.in_flight -= 1
        reply = {"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}],
                 "usage": {"prompt_tokens": 7, "completion_tokens": 2}} if status == 200 else {"error": "busy"}  # fmt: skip
        data = json.dumps(reply).encode()
        self.send_response(status)
        if status in (429, 503):
            self.send_header("Retry-After", server.retry_after)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def scripted_endpoint():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    server.statuses, server.seen, server.lock = [], [], threading.Lock()
    server.in_flight = server.peak = 0
    server.hold_s = 0.0
    server.retry_after = "0"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server, f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_429_and_503_are_retried_and_usage_is_recorded(scripted_endpoint, monkeypatch):
    server, url = scripted_endpoint
    server.statuses = [429, 503]
    monkeypatch.setenv("REPOGYM_TEST_KEY", "sk-test")
    client = policy(url, max_retries=3, api_key_env="REPOGYM_TEST_KEY")
    turn = client.act(PolicyRequest(MESSAGES, []))
    assert turn.text == "ok" and turn.prompt_tokens == 7
    assert client.usage == {
        "requests": 3,
        "retries": 2,
        "timeouts": 0,
        "prompt_tokens": 7,
        "completion_tokens": 2,
    }
    assert server.seen == ["Bearer sk-test"] * 3


def test_the_client_waits_as_long_as_retry_after_says(scripted_endpoint, monkeypatch):
    import repogym.textmodel as openai_backend

    server, url = scripted_endpoint
    server.statuses, server.retry_after = [503, 503], "2"
    waited = []
    monkeypatch.setattr(
        openai_backend.time, "sleep", waited.append
    )  # record the waits instead of sleeping them
    assert policy(url, max_retries=2).act(PolicyRequest(MESSAGES, [])).text == "ok"
    assert [delay for delay in waited if delay] == [
        2.0,
        2.0,
    ]  # (the scripted server's own sleep(0) shows too)


def test_a_context_overflow_is_reported_as_a_token_budget_not_an_http_error(server):
    huge = [{"role": "user", "content": "x " * 9000}]
    with pytest.raises(PolicyUnavailable, match="exceeds the model's 8192 positions") as caught:
        policy(server.base_url, max_retries=3).act(PolicyRequest(huge, [], SamplingParams(max_tokens=8)))
    assert caught.value.kind == "context"  # the agent loop then ends the attempt as max_tokens and grades it


def test_an_endpoint_that_keeps_failing_is_an_http_error_after_the_retries(scripted_endpoint):
    server, url = scripted_endpoint
    server.statuses = [500] * 5
    with pytest.raises(PolicyUnavailable, match=r"HTTP 500.*after 1 retries") as caught:
        policy(url, max_retries=1).act(PolicyRequest(MESSAGES, []))
    assert caught.value.kind == "http_error" and len(server.seen) == 2


def test_a_client_error_is_not_retried(scripted_endpoint):
    server, url = scripted_endpoint
    server.statuses = [401]
    with pytest.raises(PolicyUnavailable, match="HTTP 401"):
        policy(url, max_retries=3).act(PolicyRequest(MESSAGES, []))
    assert len(server.seen) == 1


def test_an_unreachable_endpoint_is_reported_as_such():
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(PolicyUnavailable, match="cannot reach") as caught:
        policy(f"http://127.0.0.1:{port}/v1", max_retries=0, timeout_s=5).act(PolicyRequest(MESSAGES, []))
    assert caught.value.kind == "unreachable"


def test_the_concurrency_limit_bounds_requests_in_flight(scripted_endpoint):
    from concurrent.futures import ThreadPoolExecutor

    server, url = scripted_endpoint
    server.hold_s = 0.15
    client = policy(url, concurrency=2)
    with ThreadPoolExecutor(6) as pool:
        turns = list(pool.map(client.act, [PolicyRequest(MESSAGES, [])] * 6))
    assert [t.text for t in turns] == ["ok"] * 6
    assert server.peak == 2
