"""`repogym mine`: candidate tasks from a repository's git history, with a funnel of where every commit went."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from repogym.cli.common import add_command, console, err_console, nothing_produced, print_json
from repogym.cli.options import Json, OutTasks
from repogym.config import load_config, validate_config
from repogym.mining.config import MiningConfig
from repogym.mining.gitcmd import resolve_revision
from repogym.mining.history import count_first_parent
from repogym.mining.mine import mine_to_file

DEFAULT_KINDS = ["fix"]


def register(app: typer.Typer) -> None:
    add_command(app, "mine", mine_command)


def mine_command(
    repo: Annotated[Path, typer.Argument(help="The git repository (a working copy or a bare repository).")],
    out: OutTasks,
    prs: Annotated[Path | None, typer.Option("--prs", help="PR/issue export: JSONL in GitHub REST API shape (see repogym.mining.prs).")] = None,
    since: Annotated[str, typer.Option("--since", help="Only commits committed on or after this ISO date (UTC).")] = "",
    until: Annotated[str, typer.Option("--until", help="Only commits committed on or before this ISO date (UTC).")] = "",
    max_candidates: Annotated[int, typer.Option("--max", min=0, help="Write at most N candidates, newest first; 0 = all.")] = 0,
    branch: Annotated[str, typer.Option("--branch", "-b", help="Branch, tag or sha whose first-parent line is mined (default: HEAD).")] = "",
    funnel: Annotated[Path | None, typer.Option("--funnel", help="Also write the funnel report here as JSON.")] = None,
    repo_name: Annotated[str, typer.Option("--repo-name", help='"owner/name" for the tasks (default: from the origin URL, else local/<folder>).')] = "",
    config: Annotated[Path | None, typer.Option("--config", "-c", help="MiningConfig YAML (path rules, filters, sizes).")] = None,
    overrides: Annotated[list[str] | None, typer.Option("--set", help="Override a MiningConfig field: key=value (repeatable).")] = None,
    kinds: Annotated[str, typer.Option("--kinds", help="Change kinds to keep, comma-separated: fix, feature, refactor, removal (default: fix).")] = "",
    issue_writer: Annotated[str, typer.Option("--issue-writer", help="openai:MODEL rewrites problem statements without revealing the fix.")] = "",
    base_url: Annotated[str, typer.Option("--base-url", help="The issue writer's endpoint, e.g. http://127.0.0.1:8000/v1 ($OPENAI_BASE_URL).")] = "",
    json_out: Json = False,
) -> None:  # fmt: skip
    """Walk the history and write candidate tasks (code patch, test patch, problem statement); validate them next.

    Each candidate is classified as fix / feature / refactor / removal; only fixes are kept unless --kinds says
    otherwise, and the rest are counted in the funnel.

    Exit status 1 when no commit became a candidate (no file is written; the funnel says where each went),
    2 on bad arguments.

    Example: repogym mine ../calc --out candidates.jsonl --prs calc.prs.jsonl --since 2024-01-01 --funnel funnel.json
    """
    settings = load_config(config, overrides or [], model=MiningConfig)
    flags = {
        "since": since,
        "until": until,
        "max_candidates": max_candidates,
        "branch": branch,
        "repo_name": repo_name,
        "kinds": [part.strip() for part in kinds.split(",")] if kinds else [],
        "issue_writer": issue_writer,
        "issue_writer_base_url": base_url,
    }
    given = {key: value for key, value in flags.items() if value}
    if "kinds" not in given and "kinds" not in settings.model_fields_set:
        given["kinds"] = DEFAULT_KINDS  # the command mines bug fixes; the library keeps every kind
    settings = validate_config({**settings.model_dump(), **given}, MiningConfig, source="command line")
    resolve_revision(repo, settings.branch)  # a bad repository or branch fails before the progress bar
    total = count_first_parent(repo, settings.branch, settings.since, settings.until)
    with Progress(
        TextColumn("mining"), BarColumn(), MofNCompleteColumn(), TextColumn("commits"), TimeRemainingColumn(),
        console=err_console, transient=True, disable=json_out,
    ) as progress:  # fmt: skip
        task = progress.add_task("mining", total=total)
        result = mine_to_file(
            repo, out, settings, prs, funnel, progress=lambda done: progress.update(task, completed=done)
        )
    if json_out:
        print_json(result.funnel.to_dict())
    else:
        console.print(result.funnel.table(title=f"mining funnel: {repo}"))
    if not result.tasks:
        raise nothing_produced(
            f"no commit of {result.funnel.scanned} became a candidate; {out} was not written"
            + (f" (funnel in {funnel})" if funnel else "")
        )
    if json_out:
        return
    console.print(
        f"[green]wrote[/] {len(result.tasks)} candidates to {out} "
        f"({result.funnel.scanned} commits in {result.elapsed_s:.1f} s, {result.commits_per_s:,.0f} commits/s)"
        + (f"; funnel in {funnel}" if funnel else "")
    )
