"""`repogym eval run` (also `repogym eval TASKS`): pass@1 / pass@k of a policy with bootstrap intervals, SWE-bench files;
with `--select`, best@k of a best-of-n selection beside them; with `--route`, two policies and the routing curve."""

from __future__ import annotations

import dataclasses
import functools
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from repogym.cli.attempt_options import AttemptOptions
from repogym.cli.common import add_command, console, err_console, print_json, subgroup, track
from repogym.cli.options import BootstrapSeed, Json, OutDir, Resamples, Tasks
from repogym.cli.progress import LiveBars
from repogym.cli.route_options import RouteOptions, with_verifier
from repogym.errors import ConfigError
from repogym.evaluate.bestofn import SPELLINGS, Selection
from repogym.evaluate.bootstrap import BootstrapSettings
from repogym.evaluate.route_run import check_routed, run_routed_eval
from repogym.evaluate.run import EvalConfig, run_eval
from repogym.evaluate.scores import score_names
from repogym.verifier.score import check_diff_verifier, load_verifier, score_attempts


def register(app: typer.Typer) -> None:
    add_command(subgroup(app, "eval"), "run", eval_command)


def eval_command(
    tasks_file: Tasks,
    attempts: AttemptOptions,
    out: OutDir,
    routing: RouteOptions,
    k: Annotated[list[int] | None, typer.Option("--k", help="Also report pass@K (repeatable; 1 <= K <= n).")] = None,
    stage: Annotated[str, typer.Option("--stage", help="Label for the report: baseline, sft, grpo, ...")] = "",
    split: Annotated[str, typer.Option("--split", help="Label of the task split, e.g. heldout-functions.")] = "",
    model_name: Annotated[str, typer.Option("--model-name", help="model_name_or_path in predictions (default: the policy).")] = "",
    bootstrap: Resamples = 1000,
    bootstrap_seed: BootstrapSeed = 0,
    select: Annotated[str, typer.Option("--select", help=f"Best-of-n: pick one attempt per task by {SPELLINGS}; reports best@N (needs -n >= 2).")] = "",
    json_out: Json = False,
) -> None:  # fmt: skip
    """Roll a policy out N times per task; report pass@1 and pass@N with 95% bootstrap intervals.

    Scores are given overall and per repo, synth method, difficulty and split.

    OUT gets summary.json (keys include pass@1 and pass@N), rollout/ (the trajectories),
    predictions.jsonl (SWE-bench; each task's first attempt) and swebench_report.json (the shape
    `repogym grade --predictions` writes). Re-running the same command resumes the rollout.

    --select picks one attempt per task among the N and adds best@N to summary.json (and
    per_task[...].selection: the attempt, its score): verifier:V (highest p(YES) of the verifier in
    folder V), tests (most PASS_TO_PASS tests passed: only tests that exist before the fix), majority
    (the most common normalised diff) or hybrid:V (tests first, then the verifier V). An attempt
    without a diff never wins unless none has one; ties go to the earliest attempt.

    --route small=P1,large=P2 evaluates each policy alone on every task (OUT/small, OUT/large), then sends each
    task to the small policy unless --by predicts it fails: difficulty scores the task alone (the gold patch's
    lines, files and hunks, FAIL_TO_PASS count, statement length), verifier:V judges the small policy's attempt
    (risk 1 - p(YES)). The small policy keeps tasks whose risk is below --threshold (0: all to the large one, 1:
    all kept). OUT/summary.json is the routed run at that threshold, and its `routing` holds each policy alone and
    the curve over thresholds 0, 0.05, ..., 1: resolve rate, share sent to the large policy, tokens, seconds and
    cost (--price). The curve is routed offline over the two evals' stored attempts, so it runs and grades
    nothing more; re-running with another --by or --threshold recomputes it.

    Examples:
      repogym eval tasks.jsonl --policy scripted:gold -n 1 --out runs/eval-gold
      repogym eval heldout.jsonl --policy hf:ckpt/sft -n 4 --temperature 0.8 --stage sft --split heldout-functions --out runs/eval-sft
      repogym eval heldout.jsonl --policy hf:ckpt/sft -n 8 --temperature 0.8 --select hybrid:runs/verifier --out runs/eval-best8
      repogym eval heldout.jsonl --route small=hf:ckpt/sft,large=openai:qwen2.5-coder-32b --base-url http://127.0.0.1:8000/v1 --by verifier:runs/verifier --threshold 0.4 --price large=0.8/0.8 --out runs/eval-route
    """
    route = routing.parsed(attempts)
    if route is not None and select:
        raise ConfigError("--select: picks an attempt among n, --route a policy per task; use one")
    config = EvalConfig(
        tasks=str(tasks_file), out=str(out), n=attempts.n, ks=tuple(k or ()), stage=stage, split=split,
        model_name=model_name, policy=route.small if route else attempts.policy_config(), mode=attempts.mode,
        context=attempts.context,
        env_options=attempts.env_options(), jobs=attempts.jobs, executor=attempts.executor,
        ray_address=attempts.ray_address, instance_ids=attempts.instance_ids, sandbox=attempts.sandbox,
        repos_dir=attempts.repos, prompts_dir=attempts.prompts_dir, reward=attempts.reward(),
        sampling=attempts.sampling(), limits=attempts.limits(),
        bootstrap=BootstrapSettings(resamples=bootstrap, seed=bootstrap_seed),
        select=None if route else _selection(select, attempts.n),
    )  # fmt: skip
    if route is not None:
        check_routed(config, route)
        route = with_verifier(route)
    track("attempts stored")
    if attempts.n > 1 and attempts.temperature == 0 and not attempts.policy.startswith("scripted:"):
        err_console.print(
            "note: --temperature 0 makes the n attempts alike (greedy); pass@k > 1 then says little"
        )
    with LiveBars() as bars:
        if route is None:
            summary = run_eval(config, notify=bars.say, progress=bars)
        else:
            summary = run_routed_eval(config, route, notify=bars.say, progress=bars)
    if json_out:
        print_json(summary)
        return
    console.print(summary_table(summary))
    if route is not None:
        console.print(routing_table(summary["routing"]))
    console.print(Text(f"wrote {out}/summary.json, predictions.jsonl, swebench_report.json"), soft_wrap=True)


def _selection(spec: str, n: int) -> Selection | None:
    """`--select` checked, with its verifier loaded (a bad folder fails here, before any attempt runs)."""
    if not spec:
        return None
    selection = Selection.parse(spec, n)
    if not selection.verifier:
        return selection
    key = f"--select {selection.kind}:V"
    verifier = check_diff_verifier(load_verifier(selection.verifier, key=key), key)  # it scores diffs alone
    return dataclasses.replace(selection, verifier_scores=functools.partial(score_attempts, verifier))


def _cell(block: dict[str, Any], name: str) -> str:
    low, high = block["intervals"][name]
    return f"{block[name]:.1%} [{low:.1%}, {high:.1%}]"


def summary_table(summary: dict[str, Any]) -> Table:
    """pass@k (with best@n after pass@1 where a selection ran) with intervals, overall then per group."""
    names = score_names(summary)
    label = " ".join(x for x in (summary.get("stage"), summary.get("split")) if x)
    resamples = summary["bootstrap"]["resamples"]
    picked = f"; best@{summary['n']} by --select {summary['select']}" if summary.get("select") else ""
    table = Table(title=f"eval {label} ({summary['policy']}, n={summary['n']}{picked}; 95% bootstrap over tasks, "
                        f"{resamples} resamples)")  # fmt: skip
    for column in ("group", "tasks", *names):
        table.add_column(column, justify="left" if column == "group" else "right")
    table.add_row("[bold]all[/]", str(summary["tasks"]), *(_cell(summary, name) for name in names))
    for group, labels in summary["breakdown"].items():
        for name_of_label, block in labels.items():
            table.add_row(
                Text(f"{group}: {name_of_label}"), str(block["tasks"]), *(_cell(block, n) for n in names)
            )
    return table


def routing_table(routing: dict[str, Any]) -> Table:
    """The routing curve: each policy alone around the thresholds' rows, the run's own threshold in bold."""
    table = Table(title=f"routing {routing['route']} by {routing['by']} ({routing['tasks']} tasks; risk below the "
                        "threshold stays small, offline over the stored attempts)")  # fmt: skip
    for column in ("threshold", "to large", "resolve rate", "tokens", "seconds", "cost"):
        table.add_column(column, justify="right")

    def cells(row: dict[str, Any]) -> list[str]:
        cost = "–" if row["cost"] is None else f"{row['cost']:.4g}"
        return [f"{row['resolve_rate']:.1%}", f"{row['tokens']:,}", f"{row['seconds']:.1f}", cost]

    table.add_row("small alone", "0%", *cells(routing["small"]))
    for row in routing["curve"]:
        style = "bold" if row["threshold"] == routing["threshold"] else None
        table.add_row(f"{row['threshold']:g}", f"{row['share_to_large']:.0%}", *cells(row), style=style)
    table.add_row("large alone", "100%", *cells(routing["large"]))
    return table
