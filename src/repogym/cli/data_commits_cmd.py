"""`repogym data commits REPO --out FILE`: CommitPackFT-style SFT rows from a repository's history."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from repogym.cli.common import add_command, console, err_console, print_json, subgroup
from repogym.cli.options import Json
from repogym.config import validate_config
from repogym.mining.config import MiningConfig
from repogym.mining.gitcmd import resolve_revision
from repogym.privacy import ScrubConfig
from repogym.synth.commits import commit_rows, write_commit_data


def register(app: typer.Typer) -> None:
    add_command(subgroup(app, "data"), "commits", commits_command)


def commits_command(
    repo: Annotated[Path, typer.Argument(help="The git repository.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="SFT rows (JSONL): messages = instruction + context, answer.")],
    answer: Annotated[str, typer.Option("--answer", help="'diff' (the commit's diff) or 'new' (the changed code after it).")] = "diff",
    branch: Annotated[str, typer.Option("--branch", "-b", help="Branch, tag or sha whose first-parent line is read.")] = "HEAD",
    since: Annotated[str, typer.Option("--since", help="Only commits on or after this ISO date (UTC).")] = "",
    until: Annotated[str, typer.Option("--until", help="Only commits on or before this ISO date (UTC).")] = "",
    max_rows: Annotated[int, typer.Option("--max", min=0, help="At most N commits (the newest); 0 = all.")] = 0,
    repo_name: Annotated[str, typer.Option("--repo-name", help='"owner/name" for the rows (default: from the origin URL).')] = "",
    license_check: Annotated[bool, typer.Option("--license-check/--no-license-check", help="Drop repositories whose licence is not on the allowlist.")] = True,
    funnel: Annotated[Path | None, typer.Option("--funnel", help="Funnel JSON (default: OUT.funnel.json).")] = None,
    json_out: Json = False,
) -> None:  # fmt: skip
    """CommitPackFT-style rows: the commit message as the instruction, the changed code before it as context,
    the diff (or the new code) as the answer; bots, merges, docs-only and too-large commits are left out, and
    secrets, personal data and licences go through the privacy stage.

    Example: repogym data commits ../calc --out commits.jsonl --answer diff --since 2024-01-01
    """
    if answer not in ("diff", "new"):
        raise typer.BadParameter(f"--answer {answer!r}: choose 'diff' or 'new'")
    mining = validate_config(
        {
            "branch": branch,
            "since": since,
            "until": until,
            "max_candidates": max_rows,
            "repo_name": repo_name,
        },
        MiningConfig,
        source="repogym data commits options",
    )
    resolve_revision(repo, mining.branch)
    with err_console.status("reading the history"):
        data = commit_rows(repo, mining, ScrubConfig(check_license=license_check), answer=answer)  # type: ignore[arg-type]
    funnel_path = funnel or out.with_name(out.name + ".funnel.json")
    count = write_commit_data(data, out, funnel_path)
    if json_out:
        print_json(
            {"out": str(out), "rows": count, "funnel_path": str(funnel_path), "funnel": data.funnel.to_dict()}
        )
        return
    console.print(data.funnel.table(title=f"commit data funnel: {repo}"))
    console.print(f"[green]wrote[/] {count} rows to {out}; funnel in {funnel_path}", markup=False)
