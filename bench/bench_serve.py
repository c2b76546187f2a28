"""`repogym serve` under load: batched vs one at a time, and recovery after abandoned requests.

1. Throughput and latency: the same requests (the agent's real system prompt and a problem
   statement, greedy, `--tokens` new tokens each) from 1 client and from 8 concurrent clients,
   against a server with --max-batch 8 (continuous batching) and one with --max-batch 1 (one at a
   time), measured in the same run. Requests/s, tokens/s and p50/p95 latency, as ratios against
   the one-at-a-time server with 8 clients.
2. Recovery: 4 clients send 4,000-token requests and hang up after 1 s (their timeout), as the
   rollout's clients did in issue 9. Measured: how long until the server is idle again (/health),
   and the latency of a normal request sent right after, against the same request on an idle
   server. Without cancellation the server would first finish the abandoned work: the table gives
   that time too, as the abandoned tokens over the tokens/s measured in part 1 (an estimate, not a
   run: the old server cannot be rebuilt here).

All traffic is real HTTP on loopback against the real tiny model (random weights, built here).
Runs on the machine as it is; the load average is printed, since other work changes every number.

    .venv/bin/python bench/bench_serve.py [--requests 16] [--tokens 64] [--model DIR]
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _common import load_average, machine_line, markdown_table, percentile

from repogym.agent.prompts import load_prompts
from repogym.serve.server import ServeConfig, make_server, start_in_thread

ABANDONED_TOKENS = 4000


def messages(index: int) -> list[dict]:
    prompts = load_prompts(None)
    problem = f"Issue {index}: `add(2, 3)` returns -1; it should return 5. Fix calc/core.py."
    return [
        {"role": "system", "content": prompts.system([])},
        {"role": "user", "content": prompts.problem("", f"bench__{index}", "bench/calc", problem)},
    ]


def post(base_url: str, body: dict, timeout: float = 600) -> dict:
    request = urllib.request.Request(
        base_url + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=timeout) as reply:
        return json.loads(reply.read())


def health(base_url: str) -> dict:
    with urllib.request.urlopen(base_url + "/health", timeout=60) as reply:
        return json.loads(reply.read())


def load_run(model: str, max_batch: int, clients: int, requests: int, tokens: int) -> dict:
    """`requests` requests from `clients` threads; wall time, per-request latencies, server counters."""
    server = make_server(
        model, port=0, model_name="tiny", serve=ServeConfig(max_batch=max_batch, request_timeout_s=0)
    )
    start_in_thread(server)
    try:
        post(server.base_url, {"messages": messages(-1), "max_tokens": 2, "temperature": 0})  # warm-up

        def one(index: int) -> tuple[float, int]:
            started = time.perf_counter()
            reply = post(
                server.base_url, {"messages": messages(index), "max_tokens": tokens, "temperature": 0}
            )
            return time.perf_counter() - started, reply["usage"]["completion_tokens"]

        started = time.perf_counter()
        with ThreadPoolExecutor(clients) as pool:
            results = list(pool.map(one, range(requests)))
        wall = time.perf_counter() - started
        state = health(server.base_url)
    finally:
        server.stop()
    latencies = [latency for latency, _ in results]
    return {
        "max_batch": max_batch, "clients": clients, "requests": requests, "wall_s": wall,
        "tokens": sum(count for _, count in results), "p50": percentile(latencies, 50),
        "p95": percentile(latencies, 95), "mean_batch": state["mean_batch"],
    }  # fmt: skip


def hang_up_after(base_url: str, seconds: float, body: dict) -> None:
    """A client that sends a request and gives up after `seconds` (closes its socket), as a timeout does."""
    host, port = base_url.split("//", 1)[1].split("/", 1)[0].split(":")
    data = json.dumps(body).encode()
    with socket.create_connection((host, int(port))) as connection:
        head = (
            f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n"
        )
        connection.sendall(head.encode() + data)
        time.sleep(seconds)


def recovery_run(model: str, tokens: int, abandoners: int = 4) -> dict:
    server = make_server(
        model, port=0, model_name="tiny", serve=ServeConfig(max_batch=8, request_timeout_s=0)
    )
    start_in_thread(server)
    normal = {"messages": messages(0), "max_tokens": tokens, "temperature": 0}
    try:
        post(server.base_url, {**normal, "max_tokens": 2})  # warm-up
        started = time.perf_counter()
        post(server.base_url, normal)
        idle_latency = time.perf_counter() - started
        endless = {"messages": messages(1), "max_tokens": ABANDONED_TOKENS, "temperature": 0}
        tokens_before = health(server.base_url)["tokens_generated"]
        with ThreadPoolExecutor(abandoners) as pool:
            list(pool.map(lambda _: hang_up_after(server.base_url, 1.0, endless), range(abandoners)))
        gave_up = time.perf_counter()
        while (state := health(server.base_url))["in_flight"] or state["queue_depth"]:
            time.sleep(0.01)
        idle_after = time.perf_counter() - gave_up
        abandoned_generated = state["tokens_generated"] - tokens_before
        started = time.perf_counter()
        post(server.base_url, normal)
        latency_after = time.perf_counter() - started
        state = health(server.base_url)
    finally:
        server.stop()
    return {
        "abandoners": abandoners, "idle_after_s": idle_after, "idle_latency_s": idle_latency,
        "latency_after_s": latency_after, "cancelled": state["cancelled"],
        "abandoned_tokens_generated": abandoned_generated,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--requests", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--model", help="a model folder (default: build the tiny model in a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as tmp:
        model = args.model
        if not model:
            from repogym.train.tiny import build_tiny_model

            model = str(build_tiny_model(Path(tmp) / "tiny"))
        print(f"load average at the start: {load_average()}", file=sys.stderr)
        runs = [
            load_run(model, 1, 1, args.requests, args.tokens),
            load_run(model, 1, 8, args.requests, args.tokens),
            load_run(model, 8, 8, args.requests, args.tokens),
        ]
        recovery = recovery_run(model, args.tokens)
    print_tables(runs, recovery, args)


def print_tables(runs: list[dict], recovery: dict, args: argparse.Namespace) -> None:
    baseline = runs[1]["requests"] / runs[1]["wall_s"]
    rows = []
    for run in runs:
        rate = run["requests"] / run["wall_s"]
        mode = "one at a time" if run["max_batch"] == 1 else "continuous batching"
        rows.append((
            f"{mode} (--max-batch {run['max_batch']})", run["clients"], run["requests"], f"{run['wall_s']:.2f}",
            f"{rate:.2f}", f"{run['tokens'] / run['wall_s']:.0f}", f"{run['p50']:.2f}", f"{run['p95']:.2f}",
            f"{run['mean_batch']:g}", f"{rate / baseline:.2f}x",
        ))  # fmt: skip
    print(f"`bench/bench_serve.py --requests {args.requests} --tokens {args.tokens}`; {machine_line()}\n")
    header = ("server", "clients", "requests", "wall s", "requests/s", "tokens/s", "p50 s", "p95 s",
              "mean rows per step", "requests/s vs one at a time, 8 clients")  # fmt: skip
    print(markdown_table(header, rows))
    batched_tokens_s = runs[2]["tokens"] / runs[2]["wall_s"]
    backlog_s = recovery["abandoners"] * ABANDONED_TOKENS / batched_tokens_s
    print()
    print(markdown_table(
        ("after 4 clients hung up on 4,000-token requests", "seconds"),
        [
            ("until the server is idle again (/health)", f"{recovery['idle_after_s']:.2f}"),
            ("a normal request, right after", f"{recovery['latency_after_s']:.2f}"),
            ("the same request on an idle server (baseline)", f"{recovery['idle_latency_s']:.2f}"),
            ("without cancellation: the abandoned work first (estimate)", f"{backlog_s:.1f}"),
        ],
    ))  # fmt: skip
    print(
        f"\n{recovery['cancelled']} requests cancelled; the server generated "
        f"{recovery['abandoned_tokens_generated']} of the {recovery['abandoners'] * ABANDONED_TOKENS} tokens "
        "asked by the clients that hung up."
    )


if __name__ == "__main__":
    main()
