"""`repogym eval TASKS --policy P -n K --out DIR` (pass@k with intervals, SWE-bench files) and
`repogym eval compare A B` (paired per-task deltas).

`eval` is a group whose default command is `run`: `repogym eval TASKS ...` and `repogym eval run
TASKS ...` are the same, so the documented interface stays one verb while `compare` sits beside it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

from repogym.cli.common import check_sandbox, console, err_console, exits_on_error, print_json, track
from repogym.errors import ConfigError


class _DefaultRunGroup(TyperGroup):
    """A group that runs `run` when the first argument is not one of its commands."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(
    cls=_DefaultRunGroup,
    help="Measure a policy: pass@1 / pass@k with bootstrap intervals, SWE-bench predictions and report.\n\n"
    "`repogym eval TASKS ...` runs `repogym eval run TASKS ...` (see `repogym eval run --help`).\n\n"
    "Example: repogym eval tasks.jsonl --policy scripted:gold -n 4 --out runs/eval-gold\n\n"
    "Example: repogym eval compare runs/eval-baseline runs/eval-sft",
    no_args_is_help=True,
)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="eval")


@app.command("run")
@exits_on_error
def eval_command(
    tasks_file: Path = typer.Argument(..., help="Task file (JSONL, JSON or parquet)."),
    policy: str = typer.Option(
        ..., "--policy", help="scripted:gold | scripted:FILE | hf:PATH | openai:MODEL | a dotted path."
    ),
    n: int = typer.Option(1, "-n", help="Attempts per task; pass@1 and pass@n are reported."),
    out: Path = typer.Option(..., "--out", "-o", help="Eval folder (re-running with it resumes)."),
    k: list[int] = typer.Option([], "--k", help="Also report pass@K (repeatable; 1 <= K <= n)."),
    stage: str = typer.Option("", "--stage", help="Label for the report: baseline, sft, grpo, ..."),
    split: str = typer.Option("", "--split", help="Label of the task split, e.g. heldout-functions."),
    mode: str = typer.Option(
        "agent", "--mode", help="agent (tool calls) or agentless (one SEARCH/REPLACE answer)."
    ),
    context: str = typer.Option(None, "--context", help="Agentless context option, e.g. window."),
    env_option: list[str] = typer.Option([], "--env-option", help="An env option KEY=VALUE (repeatable)."),
    model_name: str = typer.Option(
        "", "--model-name", help="model_name_or_path in predictions (default: the policy)."
    ),
    jobs: int = typer.Option(1, "--jobs", "-j", help="Attempts at once."),
    executor: str = typer.Option("local", "--executor", help="local (thread pool) or ray."),
    base_url: str = typer.Option(
        "", "--base-url", help="openai: the endpoint, e.g. http://127.0.0.1:8000/v1."
    ),
    api_key_env: str = typer.Option(
        "OPENAI_API_KEY", "--api-key-env", help="openai: env var with the API key."
    ),
    repos_dir: Path = typer.Option(None, "--repos-dir", help="Folder of owner__name clones for tasks."),
    instance: list[str] = typer.Option([], "--instance", "-i", help="Only this task (repeatable)."),
    max_steps: int = typer.Option(30, "--max-steps", help="Policy turns per attempt."),
    max_wall_s: float = typer.Option(1800.0, "--max-wall-s", help="Seconds per attempt."),
    reply_tokens: int = typer.Option(1024, "--reply-tokens", help="Longest reply, in tokens."),
    temperature: float = typer.Option(
        0.0, "--temperature", help="Sampling temperature (pass@k > 1 wants > 0)."
    ),
    top_p: float = typer.Option(1.0, "--top-p", help="Nucleus sampling."),
    seed: int = typer.Option(None, "--seed", help="Sampling seed."),
    concurrency: int = typer.Option(8, "--concurrency", help="openai: requests in flight; hf: batch size."),
    bootstrap: int = typer.Option(1000, "--bootstrap", help="Bootstrap resamples for the 95% intervals."),
    bootstrap_seed: int = typer.Option(0, "--bootstrap-seed", help="Seed of the bootstrap."),
    sandbox: str = typer.Option(
        "bwrap", "--sandbox", callback=check_sandbox, help="bwrap or local (NO isolation)."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print summary.json instead of tables."),
) -> None:
    """Roll a policy out N times per task; report pass@1 and pass@N with 95% bootstrap intervals.

    Scores are given overall and per repo, synth method, difficulty and split.

    DIR gets summary.json (keys include pass@1 and pass@N), rollout/ (the trajectories),
    predictions.jsonl (SWE-bench; each task's first attempt) and swebench_report.json (the shape
    `repogym grade --predictions` writes). Re-running the same command resumes the rollout.

    Examples:
      repogym eval tasks.jsonl --policy scripted:gold -n 1 --out runs/eval-gold
      repogym eval heldout.jsonl --policy hf:ckpt/sft -n 4 --temperature 0.8 --stage sft --split heldout-functions --out runs/eval-sft
    """
    from repogym.agent.loop import AgentLimits
    from repogym.agent.policies import PolicyConfig, SamplingParams
    from repogym.cli.rollout_cmd import LiveBars
    from repogym.evaluate.bootstrap import BootstrapSettings
    from repogym.evaluate.run import EvalConfig, run_eval

    config = EvalConfig(
        tasks=str(tasks_file), out=str(out), n=n, ks=tuple(k), stage=stage, split=split, model_name=model_name,
        policy=PolicyConfig(spec=policy, base_url=base_url, api_key_env=api_key_env, concurrency=concurrency),
        mode=mode, context=context, env_options=parse_env_options(env_option), jobs=jobs, executor=executor,
        instance_ids=tuple(instance), sandbox=sandbox, repos_dir=str(repos_dir) if repos_dir else None,
        sampling=SamplingParams(temperature=temperature, top_p=top_p, max_tokens=reply_tokens, seed=seed),
        limits=AgentLimits(max_steps=max_steps, max_wall_s=max_wall_s),
        bootstrap=BootstrapSettings(resamples=bootstrap, seed=bootstrap_seed),
    )  # fmt: skip
    track("attempts stored")
    if n > 1 and temperature == 0 and not policy.startswith("scripted:"):
        err_console.print(
            "note: --temperature 0 makes the n attempts alike (greedy); pass@k > 1 then says little"
        )
    with LiveBars() as bars:
        summary = run_eval(config, notify=bars.say, progress=bars)
    if json_out:
        print_json(summary)
        return
    console.print(summary_table(summary))
    console.print(Text(f"wrote {out}/summary.json, predictions.jsonl, swebench_report.json"), soft_wrap=True)


def parse_env_options(pairs: list[str]) -> dict[str, Any]:
    """KEY=VALUE pairs, values read as YAML scalars.

    >>> parse_env_options(["observation_chars=4000", "tools=[bash, submit]"])
    {'observation_chars': 4000, 'tools': ['bash', 'submit']}
    """
    import yaml

    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--env-option {pair!r}: write KEY=VALUE, e.g. observation_chars=4000")
        options[key.strip()] = yaml.safe_load(value)
    return options


def _cell(block: dict[str, Any], name: str) -> str:
    low, high = block["intervals"][name]
    return f"{block[name]:.1%} [{low:.1%}, {high:.1%}]"


def summary_table(summary: dict[str, Any]) -> Table:
    """pass@k with intervals, overall then per group."""
    names = [f"pass@{k}" for k in summary["ks"]]
    label = " ".join(x for x in (summary.get("stage"), summary.get("split")) if x)
    resamples = summary["bootstrap"]["resamples"]
    table = Table(title=f"eval {label} ({summary['policy']}, n={summary['n']}; 95% bootstrap over tasks, "
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


@app.command("compare")
@exits_on_error
def compare_command(
    run_a: Path = typer.Argument(..., help="Eval folder A (the before)."),
    run_b: Path = typer.Argument(..., help="Eval folder B (the after)."),
    bootstrap: int = typer.Option(1000, "--bootstrap", help="Paired-bootstrap resamples."),
    bootstrap_seed: int = typer.Option(0, "--bootstrap-seed", help="Seed of the bootstrap."),
    out: Path = typer.Option(None, "--out", "-o", help="Also write the comparison as JSON here."),
    json_out: bool = typer.Option(False, "--json", help="Print the comparison as JSON instead of tables."),
) -> None:
    """Per-task resolve rate of B minus A on the tasks both measured, with a paired-bootstrap 95% interval.

    Example: repogym eval compare runs/eval-baseline runs/eval-sft --out sft-vs-baseline.json
    """
    from repogym.evaluate.bootstrap import BootstrapSettings
    from repogym.evaluate.compare import compare_runs
    from repogym.files import write_json

    comparison = compare_runs(run_a, run_b, BootstrapSettings(resamples=bootstrap, seed=bootstrap_seed))
    data = comparison.to_dict()
    if out is not None:
        write_json(out, data)
    if json_out:
        print_json(data)
        return
    low, high = comparison.interval
    console.print(Text(
        f"B - A = {comparison.mean_delta:+.1%} [{low:+.1%}, {high:+.1%}] over {len(comparison.deltas)} task(s) "
        f"(A {comparison.mean_a:.1%}, B {comparison.mean_b:.1%}; paired bootstrap, {bootstrap} resamples); "
        f"{data['improved']} improved, {data['regressed']} regressed"
    ), soft_wrap=True)  # fmt: skip
    changed = comparison.changed()
    if changed:
        table = Table(title="tasks that changed")
        for column in ("task", "A", "B", "B - A"):
            table.add_column(column, justify="left" if column == "task" else "right")
        for d in changed:
            table.add_row(Text(d.instance_id), f"{d.a:.0%}", f"{d.b:.0%}", f"{d.delta:+.0%}")
        console.print(table)
    for name, ids in (("only in A", comparison.only_a), ("only in B", comparison.only_b)):
        if ids:
            console.print(Text(f"{name} (not compared): {', '.join(ids)}"), soft_wrap=True)
