"""`repogym serve` under load, over real HTTP on loopback with the real tiny model (issue 9, item 3).

Clients that give up (their timeout, a closed socket) must not leave work behind them: the server
cancels their requests at the next token, so a retry or the next client is served at once. The
server's own counters (/health) are how the tests see what happened inside it. Waits are liveness
bounds (generous, for a loaded 2-core machine), never timings.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from repogym.agent.backends.openai import OpenAIPolicy, endpoint_report
from repogym.agent.policies import PolicyConfig, PolicyRequest, PolicyUnavailable, SamplingParams
from repogym.serve.server import ServeConfig, make_server, start_in_thread

MESSAGES = [{"role": "system", "content": "You fix bugs."}, {"role": "user", "content": "add() is wrong"}]
#: Long enough that no machine finishes it before the test hangs up (thousands of decode steps).
ENDLESS = 6000
LIVENESS_S = 120.0


@pytest.fixture
def serve(tiny_model):
    """Start a server with the given limits; every server started is stopped after the test."""
    started = []

    def start(**limits):
        server = make_server(str(tiny_model), port=0, model_name="tiny", serve=ServeConfig(**limits))
        start_in_thread(server)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def health(server) -> dict:
    with urllib.request.urlopen(server.base_url + "/health", timeout=30) as reply:
        return json.loads(reply.read())


def wait_for(server, predicate, what: str) -> dict:
    """Poll /health until `predicate(health)`; fail with the last health after LIVENESS_S."""
    deadline = time.monotonic() + LIVENESS_S
    while True:
        state = health(server)
        if predicate(state):
            return state
        if time.monotonic() > deadline:
            raise AssertionError(f"server never became {what}: {state}")
        time.sleep(0.05)


def body(max_tokens: int, **extra) -> bytes:
    return json.dumps({"model": "tiny", "messages": MESSAGES, "max_tokens": max_tokens, **extra}).encode()


def endless_body() -> bytes:
    """A request that runs until something stops it: greedy, where the seeded tiny model never picks its end
    token (6000 of 6000 tokens, measured); sampled at the server's default temperature 1.0 it drew the end token
    after 2,500-4,100 tokens, sometimes within a 3 s timeout on an idle machine."""
    return body(ENDLESS, temperature=0)


def send_raw(server, data: bytes) -> socket.socket:
    """A client that sends a request and does not read the answer (the test closes it to hang up)."""
    port = server.server_address[1]
    connection = socket.create_connection(("127.0.0.1", port), timeout=30)
    head = (
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\n\r\n"
    )
    connection.sendall(head.encode() + data)
    return connection


def post(server, data: bytes, timeout: float = LIVENESS_S):
    request = urllib.request.Request(
        server.base_url + "/chat/completions", data=data, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return reply.status, dict(reply.headers), json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), json.loads(exc.read())


def client(server, **options) -> OpenAIPolicy:
    return OpenAIPolicy("tiny", PolicyConfig(spec="openai:tiny", base_url=server.base_url, **options))


def idle(state: dict) -> bool:
    return state["in_flight"] == 0 and state["queue_depth"] == 0


def test_two_clients_that_time_out_and_retry_do_not_wedge_the_server(serve):
    server = serve()
    impatient = [client(server, timeout_s=0.5, max_retries=2) for _ in range(2)]
    endless = PolicyRequest(MESSAGES, [], SamplingParams(max_tokens=ENDLESS))
    with ThreadPoolExecutor(2) as pool:
        attempts = [pool.submit(policy.act, endless) for policy in impatient]
        for attempt in attempts:
            with pytest.raises(PolicyUnavailable, match=r"no answer within 0.5 s \(after 2 retries\)"):
                attempt.result()
    assert [policy.usage["timeouts"] for policy in impatient] == [3, 3]
    # Every try of both clients was cancelled when it hung up; none ran on to its 6000 tokens.
    state = wait_for(server, lambda s: idle(s) and s["cancelled"] == 6, "idle with 6 cancellations")
    assert state["completed"] == 0 and state["tokens_generated"] < ENDLESS
    # A normal request is served at once, not behind abandoned work.
    turn = client(server, timeout_s=60, max_retries=0).act(
        PolicyRequest(MESSAGES, [], SamplingParams(max_tokens=8))
    )
    assert 1 <= turn.completion_tokens <= 8
    assert health(server)["completed"] == 1


def test_a_disconnected_request_stops_generating(serve):
    server = serve()
    connection = send_raw(server, endless_body())
    wait_for(server, lambda s: s["in_flight"] == 1 and s["tokens_generated"] > 0, "generating")
    connection.close()
    state = wait_for(server, idle, "idle after the client left")
    assert state["cancelled"] == 1 and state["completed"] == 0
    stopped_at = state["tokens_generated"]
    assert stopped_at < ENDLESS
    time.sleep(0.3)
    assert health(server)["tokens_generated"] == stopped_at  # nothing runs on in the background


def test_a_full_queue_answers_503_with_retry_after_and_the_client_comes_back(serve):
    server = serve(max_batch=1, max_queue=1)
    running = send_raw(server, endless_body())
    wait_for(server, lambda s: s["in_flight"] == 1, "busy")
    waiting = send_raw(server, endless_body())
    wait_for(server, lambda s: s["queue_depth"] == 1, "queued")
    status, headers, reply = post(server, body(4))
    assert status == 503 and reply["error"]["code"] == "server_busy"
    assert int(headers["Retry-After"]) >= 1
    assert health(server)["state"] == "queue_full"
    # A client that retries gets in once the queue drains (here: both hogs hang up).
    patient = client(server, timeout_s=60, max_retries=6)
    later = ThreadPoolExecutor(1).submit(
        patient.act, PolicyRequest(MESSAGES, [], SamplingParams(max_tokens=4))
    )
    wait_for(server, lambda s: s["rejected"] >= 2, "refusing the patient client")
    running.close()
    waiting.close()
    assert 1 <= later.result(timeout=LIVENESS_S).completion_tokens <= 4
    assert patient.usage["retries"] >= 1
    state = wait_for(server, idle, "idle")
    assert state["cancelled"] == 2 and state["completed"] == 1


def test_a_request_past_the_server_timeout_is_answered_504_and_dropped(serve):
    server = serve(request_timeout_s=3)
    status, _, reply = post(server, endless_body())
    assert status == 504 and reply["error"]["code"] == "timeout"
    assert "3 s timeout" in reply["error"]["message"] and "dropped" in reply["error"]["message"]
    state = wait_for(server, idle, "idle")
    assert state["timed_out"] == 1 and state["completed"] == 0 and state["tokens_generated"] < ENDLESS
    # The server goes on serving. A short request may itself hit the 3 s timeout when the machine is
    # loaded (seen at load 20), so it gets a few tries: a wedged server would answer none of them.
    answers = []
    for _ in range(5):
        status, _, reply = post(server, body(1))
        answers.append(status)
        if status == 200:
            break
    assert answers[-1] == 200 and reply["usage"]["completion_tokens"] >= 1, answers


def test_requests_with_different_settings_share_the_batch_and_a_long_one_blocks_none(serve):
    server = serve(max_batch=4)
    settings = [
        SamplingParams(max_tokens=4),
        SamplingParams(temperature=1.0, top_p=0.9, max_tokens=6, seed=11),
        SamplingParams(temperature=0.7, max_tokens=3, seed=5),
    ]
    policy = client(server, timeout_s=LIVENESS_S, max_retries=0, logprobs=True)
    alone = [policy.act(PolicyRequest(MESSAGES, [], sampling)).completion_token_ids for sampling in settings]
    long_one = send_raw(server, endless_body())
    wait_for(server, lambda s: s["in_flight"] == 1, "generating the long request")
    with ThreadPoolExecutor(3) as pool:
        together = list(pool.map(lambda s: policy.act(PolicyRequest(MESSAGES, [], s)), settings))
    # The short requests finished while the long one was still generating: they joined its batch.
    state = health(server)
    assert state["in_flight"] == 1 and state["peak_batch"] >= 2 and state["completed"] == 6
    # Each row samples with its own seed and settings: the same tokens alone or in a batch.
    assert [turn.completion_token_ids for turn in together] == alone
    long_one.close()
    wait_for(server, idle, "idle")


def test_the_rollout_report_carries_the_client_settings_and_the_server_state(serve):
    server = serve()
    policy = client(server, timeout_s=45, max_retries=3)
    policy.act(PolicyRequest(MESSAGES, [], SamplingParams(max_tokens=2)))
    report = endpoint_report(policy_config(server, timeout_s=45, max_retries=3), policy)
    assert report.server["server"] == "repogym" and report.server["completed"] == 1
    line = report.line()
    assert line.startswith(f"openai:tiny at {server.base_url}, timeout 45 s, 3 retries (sent 1 requests")
    assert "; server: 1 batches" in line and "0 cancelled" in line and "now idle" in line


def test_an_endpoint_that_is_not_repogym_reports_no_server_state():
    http_server = _plain_http_server()
    try:
        url = f"http://127.0.0.1:{http_server.server_address[1]}/v1"
        report = endpoint_report(PolicyConfig(spec="openai:m", base_url=url))
        assert report.server is None and report.requests is None and "server:" not in report.line()
    finally:
        http_server.shutdown()
        http_server.server_close()


def policy_config(server, **options) -> PolicyConfig:
    return PolicyConfig(spec="openai:tiny", base_url=server.base_url, **options)


def _plain_http_server():
    """An endpoint whose /health is someone else's (vLLM answers 200 with an empty body)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

    http_server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=http_server.serve_forever, daemon=True).start()
    return http_server
