"""`repogym data sft SOURCES... --out FILE`: SFT chat rows from rollouts, gold demonstrations and chat rows."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from repogym.cli.common import add_command, console, err_console, print_json, subgroup
from repogym.cli.options import Jobs, Json, ReposDir
from repogym.cli.sandbox_option import Sandbox
from repogym.errors import ConfigError
from repogym.train.sft_data import SFTDataOptions, build_sft_data, write_sft_data


def register(app: typer.Typer) -> None:
    add_command(subgroup(app, "data"), "sft", data_sft_command)


def data_sft_command(
    sources: Annotated[list[Path], typer.Argument(help="Rollout folders, task files (gold demonstrations) or chat-row JSONL (e.g. data commits).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output JSONL of chat rows (`messages`, `tools`).")],
    gold: Annotated[str, typer.Option("--gold", help="Task files give: agentless (SWE-RL answers) or agent (tool calls).")] = "agentless",
    context: Annotated[str, typer.Option("--context", help="Agentless gold prompts: files (whole files) or window.")] = "files",
    window_lines: Annotated[int, typer.Option("--window-lines", help="With --context window: lines either side.")] = 3,
    localize: Annotated[str, typer.Option("--localize", help="With --context window: oracle (perfect fault localization), sbfl, or a dotted path.")] = "oracle",
    answer_format: Annotated[str, typer.Option("--answer-format", help="With --context window: search_replace (SWE-RL's blocks) or lines (the suspicious lines rewritten).")] = "search_replace",
    prompt_style: Annotated[str, typer.Option("--prompt-style", help="With --context window: full (the issue, then the code) or compact (the code only, for tiny models).")] = "full",
    max_chars: Annotated[int, typer.Option("--max-chars", help="Drop rows longer than this (all message text).")] = 32_000,
    max_tokens: Annotated[int | None, typer.Option("--max-tokens", help="Drop rows longer than this many tokens (needs --tokenizer).")] = None,
    tokenizer: Annotated[Path | None, typer.Option("--tokenizer", help="Model folder whose chat template counts tokens.")] = None,
    max_per_task: Annotated[int | None, typer.Option("--max-per-task", help="Rollouts: at most N resolved attempts per task.")] = None,
    held_out: Annotated[list[Path] | None, typer.Option("--held-out", help="Task file never to train on (repeatable): rows writing its fixed lines or fixed function bodies are dropped.")] = None,
    repos_dir: ReposDir = None,
    sandbox: Sandbox = "bwrap",
    jobs: Jobs = 1,
    json_out: Json = False,
) -> None:  # fmt: skip
    """Build SFT rows: resolved rollouts (rejection sampling), gold demonstrations, commit data; deduplicated.

    The summary (rows in, kept, dropped per reason, for each source) is printed and written to
    OUT.summary.json. Agentless gold rows use the env's own prompt, so pass the same --context,
    --window-lines, --localize, --answer-format and --prompt-style as the env you will evaluate in.
    The sandbox runs agent gold rollouts and sbfl; --jobs is how many agent gold rollouts run at once.
    --held-out FILE (the held-out splits' task files) drops every row whose answer writes one of their
    fixed lines or the body of one of their fixed functions; each guard's drops are a reason in the table.

    Example: repogym data sft runs/gold tasks.jsonl --out sft.jsonl --context window --window-lines 3
    """
    if gold not in ("agentless", "agent"):
        raise ConfigError(f"--gold {gold!r}: use agentless or agent")
    if context not in ("files", "window"):
        raise ConfigError(f"--context {context!r}: use files or window")
    if answer_format not in ("search_replace", "lines"):
        raise ConfigError(f"--answer-format {answer_format!r}: use search_replace or lines")
    if answer_format == "lines" and context != "window":
        raise ConfigError(
            "--answer-format lines rewrites the window's suspicious lines: add --context window"
        )
    if prompt_style not in ("full", "compact"):
        raise ConfigError(f"--prompt-style {prompt_style!r}: use full or compact")
    if prompt_style == "compact" and context != "window":
        raise ConfigError("--prompt-style compact shortens the window prompt: add --context window")
    options = SFTDataOptions(
        gold=gold, context=context, window_lines=window_lines, localize=localize,  # type: ignore[arg-type]
        answer_format=answer_format, prompt_style=prompt_style,  # type: ignore[arg-type]
        max_chars=max_chars, max_tokens=max_tokens, tokenizer=str(tokenizer) if tokenizer else None,
        max_per_task=max_per_task, repos_dir=str(repos_dir) if repos_dir else None, sandbox=sandbox, jobs=jobs,
        held_out=tuple(str(path) for path in held_out or ()),
    )  # fmt: skip
    progress = Progress(
        SpinnerColumn(), TextColumn("[bold]data sft[/] {task.fields[source]}"), MofNCompleteColumn(),
        TextColumn("rows read"), TimeElapsedColumn(), console=err_console,
    )  # fmt: skip
    with progress:
        bar = progress.add_task("rows", total=None, source="")
        data = build_sft_data(
            [str(s) for s in sources],
            options,
            out,
            on_row=lambda s: progress.update(bar, advance=1, source=s),
        )
    summary_path = write_sft_data(data, out)
    if json_out:
        print_json(data.summary())
        return
    table = Table(title=f"data sft -> {out} ({len(data.rows)} rows)")
    for column in ("source", "kind", "rows in", "kept", "dropped (why)"):
        table.add_column(column)
    for report in data.reports:
        why = ", ".join(f"{n} {reason}" for reason, n in report.dropped.most_common()) or "-"
        table.add_row(report.source, report.kind, str(report.rows_in), str(report.kept), why)
    console.print(table)
    if data.guarded is not None:
        guarded = data.guarded
        console.print(f"leakage guard over {guarded['held_out_tasks']} held-out tasks: {guarded['lines']} fixed lines, "
                      f"{guarded['bodies']} function bodies ({guarded['tasks_without_body']} tasks without one)")  # fmt: skip
    console.print(f"summary: {summary_path}", soft_wrap=True, markup=False)
    if not data.rows:
        raise ConfigError(f"{out}: no rows kept from {len(sources)} source(s); see the table for why")
