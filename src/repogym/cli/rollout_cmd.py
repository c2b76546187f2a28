"""`repogym rollout` (N attempts of a policy per task, stored as trajectories) and `repogym serve` (a model over HTTP)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from repogym.cli.common import check_sandbox, console, err_console, exits_on_error, print_json
from repogym.errors import ConfigError
from repogym.files import write_json
from repogym.serve.server import ServeConfig

_SERVE_DEFAULTS = ServeConfig()


def register(app: typer.Typer) -> None:
    app.command("rollout")(rollout_command)
    app.command("serve")(serve_command)


@exits_on_error
def rollout_command(
    tasks_file: Path = typer.Argument(..., help="Task file (JSONL, JSON or parquet)."),
    policy: str = typer.Option(
        ...,
        "--policy",
        help="scripted:gold | scripted:FILE | hf:PATH | openai:MODEL | human | a dotted path.",
    ),
    n: int = typer.Option(1, "-n", help="Attempts per task (a GRPO group)."),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (re-running with it resumes)."),
    jobs: int = typer.Option(1, "--jobs", "-j", help="Attempts at once (threads; CPUs of a local Ray)."),
    executor: str = typer.Option("local", "--executor", help="local (thread pool) or ray."),
    ray_address: str = typer.Option(None, "--ray-address", help="With --executor ray: a running cluster."),
    keep: str = typer.Option(
        "all", "--keep", help="all, or resolved (writes the rejection-sampled SFT set)."
    ),
    base_url: str = typer.Option(
        "", "--base-url", help="openai: the endpoint, e.g. http://127.0.0.1:8000/v1."
    ),
    api_key_env: str = typer.Option(
        "OPENAI_API_KEY", "--api-key-env", help="openai: env var with the API key."
    ),
    repos_dir: Path = typer.Option(None, "--repos-dir", help="Folder of owner__name clones for tasks."),
    instance: list[str] = typer.Option([], "--instance", "-i", help="Only this task (repeatable)."),
    max_steps: int = typer.Option(30, "--max-steps", help="Policy turns (env steps) per attempt."),
    max_tokens: int = typer.Option(
        1_000_000, "--max-tokens", help="Prompt+completion tokens per attempt; 0 = off."
    ),
    max_wall_s: float = typer.Option(1800.0, "--max-wall-s", help="Seconds per attempt."),
    reply_tokens: int = typer.Option(1024, "--reply-tokens", help="Longest reply, in tokens."),
    temperature: float = typer.Option(0.0, "--temperature", help="Sampling temperature (0 = greedy)."),
    top_p: float = typer.Option(1.0, "--top-p", help="Nucleus sampling."),
    seed: int = typer.Option(None, "--seed", help="Sampling seed."),
    concurrency: int = typer.Option(8, "--concurrency", help="openai: requests in flight; hf: batch size."),
    timeout_s: float = typer.Option(120.0, "--timeout-s", help="openai: seconds per HTTP request."),
    max_retries: int = typer.Option(
        4, "--max-retries", help="openai: retries of a request (timeouts, 429, 5xx), with backoff."
    ),
    logprobs: bool = typer.Option(
        False, "--logprobs", help="openai: record token log-probabilities and ids."
    ),
    prompts: Path = typer.Option(None, "--prompts", help="Folder of template overrides (system.md, ...)."),
    reward_config: Path = typer.Option(
        None, "--reward-config", help="YAML whose `reward:` composes the reward."
    ),
    sandbox: str = typer.Option(
        "bwrap", "--sandbox", callback=check_sandbox, help="bwrap (isolated) or local (NO isolation)."
    ),
    mode: str = typer.Option(
        "agent", "--mode", help="agent (tool calls, many turns) or agentless (one SEARCH/REPLACE answer)."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Run N attempts of a policy on every task; store each as a trajectory the moment it finishes.

    Records are the *.jsonl files under --out (one row per attempt, `instance_id` and `attempt` at
    the top). A run killed at any point and started again with the same command skips what is
    done. Failures of single attempts (endpoint down, no tool call, never submits, env build
    failed) are counted in the summary; only bad arguments stop the run.

    Exit status: 0 when attempts ran and were graded (resolved or not); 1 when every attempt run
    now ended without a graded patch (endpoint unreachable, env build failed, ...): nothing was
    produced, and the message says the first reason; 2 on bad arguments.

    Examples:
      repogym rollout tasks.jsonl --policy scripted:gold -n 1 --out runs/gold
      repogym rollout tasks.jsonl --policy openai:tiny --base-url http://127.0.0.1:8000/v1 -n 4 --out runs/tiny -j 4
      repogym rollout tasks.jsonl --policy hf:ckpt --executor ray -j 2 -n 8 --keep resolved --out runs/sft
      repogym rollout tasks.jsonl --policy hf:runs/rl --mode agentless -n 4 --temperature 1 --out runs/al
    """
    from repogym.agent.loop import AgentLimits
    from repogym.agent.policies import PolicyConfig, SamplingParams
    from repogym.rollout.run import RolloutConfig

    config = RolloutConfig(
        tasks=str(tasks_file),
        policy=PolicyConfig(
            spec=policy, base_url=base_url, api_key_env=api_key_env, timeout_s=timeout_s, max_retries=max_retries,
            concurrency=concurrency, logprobs=logprobs,
        ),
        out=str(out), n=n, jobs=jobs, executor=executor, ray_address=ray_address, keep=keep,
        instance_ids=tuple(instance),
        settings_sampling=SamplingParams(temperature=temperature, top_p=top_p, max_tokens=reply_tokens, seed=seed),
        limits=AgentLimits(max_steps=max_steps, max_tokens=max_tokens, max_wall_s=max_wall_s),
        sandbox=sandbox, repos_dir=str(repos_dir) if repos_dir else None,
        prompts_dir=str(prompts) if prompts else None, reward=_reward(reward_config),
        mode=mode,
    )  # fmt: skip
    summary = run_with_progress(config)
    write_json(out / "summary.json", summary.to_dict())
    if json_out:
        print_json(summary.to_dict())
    else:
        console.print(summary_table(summary))
    if summary.produced_nothing:
        err_console.print(
            f"error: produced nothing: none of the {summary.ran_now} attempt(s) run now reached grading; "
            f"the first said {summary.first_failure}",
            markup=False,
            soft_wrap=True,
        )
        raise typer.Exit(1)


def run_with_progress(config):  # type: ignore[no-untyped-def]
    """`repogym rollout`'s run: plan (config errors surface here), then run with a live bar: done/total, rate,
    ETA, resolve rate. (The library's own stages report through callbacks instead: see `LiveBars`.)"""
    from repogym.rollout.run import plan_rollout, run_rollout

    with err_console.status("checking the configuration and loading the policy..."):
        plan = plan_rollout(config)
    if plan.skipped:
        err_console.print(
            f"resuming: {plan.skipped} attempt(s) already in {config.out}, {len(plan.jobs)} to run"
        )
    progress = _progress()
    bar = progress.add_task("rollout", total=len(plan.jobs), rate="", resolved="0/0")
    started, counts = time.monotonic(), {"done": 0, "resolved": 0}

    def on_result(trajectory) -> None:  # type: ignore[no-untyped-def]
        counts["done"] += 1
        counts["resolved"] += trajectory.resolved
        per_min = counts["done"] / max(time.monotonic() - started, 1e-9) * 60
        share = counts["resolved"] / counts["done"]
        resolved = f"{counts['resolved']}/{counts['done']} ({share:.0%})"
        progress.update(bar, advance=1, rate=f"{per_min:.1f}/min", resolved=resolved)

    with progress:
        return run_rollout(config, on_result=on_result, plan=plan)


class LiveBars:
    """The library's progress callbacks (`(what, done, total)`) drawn as rich bars on stderr: a bar per count
    (`what` up to its first ':', the rest shown beside it), live from the first count until `pause()`.

    Printing a line (`say`) or handing the terminal to a trainer's own bar pauses them first: rich allows one
    live display at a time. Use it as a context manager so the bars end with the command."""

    def __init__(self) -> None:
        self._live: Progress | None = None
        self._bars: dict[str, Any] = {}

    def __call__(self, what: str, done: int, total: int) -> None:
        if self._live is None:
            self._live = Progress(
                TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                TextColumn("ETA"), TimeRemainingColumn(), console=err_console,
            )  # fmt: skip
            self._live.start()
            self._bars = {}
        # "synth calcium: injecting": one bar per repository, its step in the text
        key = what.split(":", 1)[0]
        if key not in self._bars:
            self._bars[key] = self._live.add_task(what, total=total or None)
        self._live.update(self._bars[key], description=what, completed=done, total=total or None)

    def pause(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def say(self, line: str) -> None:
        """Print a line on stderr below the bars drawn so far."""
        self.pause()
        err_console.print(Text(line), soft_wrap=True)

    def __enter__(self) -> LiveBars:
        return self

    def __exit__(self, *exc: object) -> None:
        self.pause()


def _progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TextColumn("resolved {task.fields[resolved]}"),
        console=err_console,
    )


def summary_table(summary) -> Table:  # type: ignore[no-untyped-def]
    """The end-of-run table: rates, means, and a count for every way an attempt ended."""
    table = Table(title="rollout summary", show_header=True)
    table.add_column("metric")
    table.add_column("value", justify="right")
    rows = [
        ("attempts (ran now / already done)", f"{summary.attempts} ({summary.ran_now} / {summary.skipped})"),
        ("resolve rate", f"{summary.resolve_rate:.1%} ({summary.resolved}/{summary.attempts})"),
        ("tasks resolved at least once", f"{summary.tasks_resolved}/{summary.tasks}"),
        ("mean reward", f"{summary.mean_reward:+.3f}"),
        *((f"  mean {name}", f"{value:+.3f}") for name, value in summary.mean_components.items()),
        ("mean steps", f"{summary.mean_steps:.1f}"),
        ("mean tokens", f"{summary.mean_tokens:.0f}"),
        ("trajectories kept", str(summary.kept)),
        *((f"attempt outcome: {name}", str(count)) for name, count in sorted(summary.outcomes.items())),
        *((f"grade: {name}", str(count)) for name, count in sorted(summary.grade_outcomes.items())),
        *((f"format error: {name}", str(count)) for name, count in sorted(summary.format_errors.items())),
        *_endpoint_rows(summary.endpoint),
    ]
    for metric, value in rows:
        table.add_row(metric, value)
    return table


def _endpoint_rows(endpoint) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """The openai policy's settings and traffic, and the server's counters when it is `repogym serve`."""
    if endpoint is None:
        return []
    rows = [("policy", endpoint.client_line())]
    if endpoint.server:
        rows.append(("server (repogym serve)", endpoint.server_line()))
    return rows


def _reward(path: Path | None) -> dict | None:  # type: ignore[type-arg]
    if path is None:
        return None
    from repogym.config import load_yaml

    data = load_yaml(path)
    reward = data.get("reward") if isinstance(data, dict) else None
    if not isinstance(reward, dict):
        raise ConfigError(
            f"--reward-config {path}: no `reward:` mapping in it (see examples/ for the seed's)"
        )
    return reward


@exits_on_error
def serve_command(
    model_dir: Path = typer.Argument(
        ..., help="A transformers model folder (config.json, weights, tokenizer)."
    ),
    port: int = typer.Option(8000, "--port", "-p", help="TCP port (0 picks a free one)."),
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Address to bind; loopback unless you mean otherwise."
    ),
    name: str = typer.Option("", "--name", help="Model name clients send (default: the folder's name)."),
    device: str = typer.Option("", "--device", help="torch device (default: cuda when available, else cpu)."),
    max_batch: int = typer.Option(
        _SERVE_DEFAULTS.max_batch, "--max-batch", help="Requests generated together (continuous batching)."
    ),
    max_queue: int = typer.Option(
        _SERVE_DEFAULTS.max_queue,
        "--max-queue",
        help="Requests waiting at most; more get 503 + Retry-After (0 = unbounded).",
    ),
    request_timeout_s: float = typer.Option(
        _SERVE_DEFAULTS.request_timeout_s,
        "--request-timeout-s",
        help="Answer 504 and drop a request after this long (0 = never).",
    ),
) -> None:
    """Serve a local model as an OpenAI-compatible chat-completions endpoint (with tool calls).

    Requests share one continuously batched decode loop. A client that disconnects has its request
    cancelled at the next token; a full queue answers 503 with Retry-After; a request older than
    --request-timeout-s (keep it below the clients' timeout, 120 s for `rollout`) answers 504.
    GET /health reports the queue, the rows in flight and the counters.

    Example: python -m repogym.train.tiny /tmp/tiny && repogym serve /tmp/tiny --port 8000

    Then: repogym rollout tasks.jsonl --policy openai:tiny --base-url http://127.0.0.1:8000/v1 ...
          curl http://127.0.0.1:8000/health
    """
    from repogym.serve.server import make_server

    limits = ServeConfig(max_batch=max_batch, max_queue=max_queue, request_timeout_s=request_timeout_s)
    with err_console.status(f"loading {model_dir}..."):
        server = make_server(
            str(model_dir), host=host, port=port, model_name=name, device=device, serve=limits
        )
    # Scripts that start the server with --port 0 read this line for the URL.
    console.print(f"serving {server.model_name} at {server.base_url}", markup=False)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
