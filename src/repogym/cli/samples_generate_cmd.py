"""`repogym samples generate`: sample repositories with planted bug fixes, their PR exports and answer keys."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from repogym.cli.common import add_command, console, print_json, subgroup
from repogym.cli.options import Json, Seed
from repogym.samples import SampleRepo, generate_suite


def register(app: typer.Typer) -> None:
    add_command(subgroup(app, "samples"), "generate", generate)


def generate(
    out_dir: Annotated[Path, typer.Argument(metavar="OUT_DIR", help="Folder for the repositories, their PR exports and manifests.")],
    seed: Seed = 0,
    repos: Annotated[int, typer.Option("--repos", min=1, help="How many repositories (each a different library while kinds last).")] = 3,
    license: Annotated[list[str] | None, typer.Option("--license", help="SPDX id of the licence; repeat it to alternate (MIT, Apache-2.0, BSD-3-Clause, GPL-3.0-only). Default: MIT.")] = None,
    bug_fixes: Annotated[int, typer.Option("--bug-fixes", min=1, help="Planted bug fixes per repository (at most 6).")] = 3,
    prs: Annotated[bool, typer.Option("--prs/--no-prs", help="Land some fixes as merged PRs and write a PR/issue export.")] = True,
    json_out: Json = False,
) -> None:  # fmt: skip
    """Write sample repositories into OUT_DIR, with `<name>.prs.jsonl` and `<name>.manifest.json` beside each.

    Example: repogym samples generate /tmp/samples --seed 1 --repos 3 --license MIT --license GPL-3.0-only
    """
    generated = generate_suite(
        out_dir,
        seed=seed,
        n_repos=repos,
        license=license or ["MIT"],
        n_bug_fixes=bug_fixes,
        with_prs=prs,
        manifests=True,
    )
    if json_out:
        print_json([repo.to_dict() for repo in generated])
        return
    console.print(_repos_table(generated, out_dir))
    console.print(_fixes_table(generated))
    count = len(generated)
    console.print(
        f"[green]wrote[/] {count} repositor{'y' if count == 1 else 'ies'} with manifests to {out_dir}"
    )


def _repos_table(repos: list[SampleRepo], out_dir: Path) -> Table:
    table = Table(title=f"sample repositories in {out_dir}")
    for column in ("repo", "library", "licence", "commits", "head", "secret in"):
        table.add_column(column, no_wrap=True)
    for repo in repos:
        table.add_row(
            repo.name,
            repo.library,
            repo.license,
            str(len(repo.commits)),
            repo.head[:8],
            repo.secret.added_in[:8],
        )
    return table


def _fixes_table(repos: list[SampleRepo]) -> Table:
    table = Table(title="planted fixes")
    for column in ("repo", "fix", "kind", "PR / issue", "commit"):
        table.add_column(column, no_wrap=True)
    table.add_column("FAIL_TO_PASS", overflow="fold")
    for repo in repos:
        for fix in repo.fixes:
            link = f"#{fix.pr_number} / #{fix.issue_number}" if fix.pr_number else "-"
            tests = "\n".join(test.split("::")[-1] for test in fix.FAIL_TO_PASS)
            table.add_row(repo.name, fix.slug, fix.kind.value, link, fix.fix_commit[:8], tests)
    return table
