"""`repogym serve`: a local model as an OpenAI-compatible chat-completions endpoint (with tool calls)."""

from __future__ import annotations

from typing import Annotated

import typer

from repogym.cli.common import add_command, console, err_console, print_json
from repogym.cli.options import ModelDir
from repogym.serve.server import ServeConfig, make_server

_SERVE_DEFAULTS = ServeConfig()


def register(app: typer.Typer) -> None:
    add_command(app, "serve", serve_command)


def serve_command(
    model_dir: ModelDir,
    port: Annotated[int, typer.Option("--port", "-p", help="TCP port (0 picks a free one).")] = 8000,
    host: Annotated[str, typer.Option("--host", help="Address to bind; loopback unless you mean otherwise.")] = "127.0.0.1",
    name: Annotated[str, typer.Option("--name", help="Model name clients send (default: the folder's name).")] = "",
    device: Annotated[str, typer.Option("--device", help="torch device (default: cuda when available, else cpu).")] = "",
    max_batch: Annotated[int, typer.Option("--max-batch", help="Requests generated together (continuous batching).")] = _SERVE_DEFAULTS.max_batch,
    max_queue: Annotated[int, typer.Option("--max-queue", help="Requests waiting at most; more get 503 + Retry-After (0 = unbounded).")] = _SERVE_DEFAULTS.max_queue,
    request_timeout_s: Annotated[float, typer.Option("--request-timeout-s", help="Answer 504 and drop a request after this long (0 = never).")] = _SERVE_DEFAULTS.request_timeout_s,
    json_out: Annotated[bool, typer.Option("--json", help="Print {model, base_url} as one JSON object once serving (for scripts using --port 0); logs go to stderr.")] = False,
) -> None:  # fmt: skip
    """Serve a local model as an OpenAI-compatible chat-completions endpoint (with tool calls).

    Requests share one continuously batched decode loop. A client that disconnects has its request
    cancelled at the next token; a full queue answers 503 with Retry-After; a request older than
    --request-timeout-s (keep it below the clients' timeout, 120 s for `rollout`) answers 504.
    GET /health reports the queue, the rows in flight and the counters.

    Example: python -m repogym.train.tiny /tmp/tiny && repogym serve /tmp/tiny --port 8000

    Then: repogym rollout tasks.jsonl --policy openai:tiny --base-url http://127.0.0.1:8000/v1 ...
          curl http://127.0.0.1:8000/health
    """
    limits = ServeConfig(max_batch=max_batch, max_queue=max_queue, request_timeout_s=request_timeout_s)
    with err_console.status(f"loading {model_dir}..."):
        server = make_server(
            str(model_dir), host=host, port=port, model_name=name, device=device, serve=limits
        )
    # Scripts that start the server with --port 0 read this line (or the JSON object) for the URL.
    if json_out:
        print_json({"model": server.model_name, "base_url": server.base_url})
    else:
        console.print(f"serving {server.model_name} at {server.base_url}", markup=False)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
