"""Generate sample repositories: `generate_repo` for one, `generate_suite` for several with different libraries."""

from __future__ import annotations

import datetime as dt
import random
import re
from collections.abc import Sequence
from pathlib import Path

from repogym.errors import ConfigError
from repogym.samples import people
from repogym.samples.fastimport import write_repository
from repogym.samples.libraries import LIBRARIES
from repogym.samples.licenses import license_info
from repogym.samples.model import CommitInfo, PlantedFix, PlantedSecret, SampleRepo
from repogym.samples.plan import Plan, fix_kinds, fix_tests
from repogym.samples.prs import write_export
from repogym.samples.scaffold import SampleProject
from repogym.samples.timeline import plan_history

_NAME = re.compile(r"^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$")
_DAY = 86400
_START_2021 = 1609459200  # 2021-01-01T00:00:00Z


def generate_repo(
    path: Path,
    *,
    seed: int = 0,
    name: str | None = None,
    license: str = "MIT",
    n_bug_fixes: int = 3,
    with_prs: bool = True,
    library: str | None = None,
    prs_path: Path | None = None,
) -> SampleRepo:
    """Create a sample library with a git history at `path` (absent or empty); the same arguments give the same shas.

    `library` picks the kind (see `repogym.samples.libraries.LIBRARIES`; default: chosen by the seed).
    With `with_prs`, the PR/issue export goes to `prs_path` (default: `<path>.prs.jsonl` beside the repo).
    """
    path = Path(path)
    rng = random.Random(seed)
    spec = LIBRARIES.get(library or rng.choice(LIBRARIES.names()))
    name = name or rng.choice(spec.names)
    if not _NAME.match(name):
        raise ConfigError(f"name: {name!r} is not a valid project name (lower-case letters, digits, - and _)")
    if not 1 <= n_bug_fixes <= len(spec.bugs):
        raise ConfigError(
            f"n_bug_fixes: {n_bug_fixes} is out of range; library {spec.kind!r} has 1 to {len(spec.bugs)}"
        )
    start = _START_2021 + rng.randrange(0, 900) * _DAY + 9 * 3600 + rng.randrange(3600)
    project = SampleProject(
        name=name,
        package=name.replace("-", "_"),
        owner=rng.choice(people.OWNERS),
        holder=f"The {name} developers",
        year=dt.datetime.fromtimestamp(start, dt.UTC).year,
        license=license_info(license),
    )
    bugs = rng.sample(spec.bugs, n_bug_fixes)
    plan = plan_history(spec, project, rng, bugs, fix_kinds(n_bug_fixes, with_prs, rng), start)
    shas = write_repository(path, plan)
    export = None
    if with_prs:
        export = Path(prs_path) if prs_path else path.with_name(path.name + ".prs.jsonl")
        base_url = f"https://github.com/{project.owner}/{name}"
        write_export(export, plan.pulls, plan.issues, base_url, shas)
    return _sample(path, plan, shas, seed, spec.kind, export)


def _sample(
    path: Path, plan: Plan, shas: dict[str, str], seed: int, library: str, export: Path | None
) -> SampleRepo:
    fixes = []
    for fix in plan.fixes:
        code, tests, docs, failing, passing = fix_tests(plan, fix)
        fixes.append(
            PlantedFix(
                slug=fix.bug.slug,
                kind=fix.kind,
                fix_commit=shas[fix.fix_key],
                base_commit=shas[fix.base_key],
                bug_commit=shas[fix.bug_key],
                title=fix.bug.fix_title,
                code_files=code,
                test_files=tests,
                doc_files=docs,
                FAIL_TO_PASS=failing,
                PASS_TO_PASS=passing,
                pr_number=fix.pr_number,
                issue_number=fix.issue_number,
                branch_commits=tuple(shas[key] for key in fix.branch_keys),
                contains_secret=fix.contains_secret,
            )
        )
    secret = plan.secret
    assert secret is not None  # plan_history always plants one
    project = plan.project
    return SampleRepo(
        path=path,
        name=project.name,
        package=project.package,
        library=library,
        seed=seed,
        license=project.license.spdx,
        github=f"{project.owner}/{project.name}",
        branch="main",
        head=shas[next(c.key for c in reversed(plan.commits) if c.ref == "main")],
        prs_path=export,
        fixes=tuple(fixes),
        secret=PlantedSecret(
            secret.value, secret.kind, secret.path, shas[secret.added_key], shas[secret.removed_key]
        ),
        commits=tuple(CommitInfo(shas[c.key], c.kind, c.message.splitlines()[0]) for c in plan.commits),
    )


def generate_suite(
    root: Path,
    *,
    seed: int = 0,
    n_repos: int = 3,
    license: str | Sequence[str] = "MIT",
    n_bug_fixes: int = 3,
    with_prs: bool = True,
    manifests: bool = True,
) -> list[SampleRepo]:
    """`n_repos` repositories under `root`, each a different library while there are kinds left.

    `license` may be a list, used in turn. With `manifests`, each repo's answer key is written
    to `<root>/<name>.manifest.json` and its PR export to `<root>/<name>.prs.jsonl`.
    """
    if n_repos < 1:
        raise ConfigError(f"n_repos: must be at least 1, got {n_repos}")
    licenses = [license] if isinstance(license, str) else list(license)
    if not licenses:
        raise ConfigError("license: give at least one SPDX id")
    kinds = LIBRARIES.names()
    root = Path(root)
    repos: list[SampleRepo] = []
    used: set[str] = set()
    for index in range(n_repos):
        kind = kinds[(seed + index) % len(kinds)]
        names = LIBRARIES.get(kind).names
        name = names[(seed + index // len(kinds)) % len(names)]
        if name in used:
            name = f"{name}-{index}"
        used.add(name)
        repo = generate_repo(
            root / name,
            seed=seed * 1000 + index,
            name=name,
            license=licenses[index % len(licenses)],
            n_bug_fixes=n_bug_fixes,
            with_prs=with_prs,
            library=kind,
        )
        if manifests:
            repo.write_manifest(root / f"{name}.manifest.json")
        repos.append(repo)
    return repos
