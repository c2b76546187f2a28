"""Every planted bug of every library, checked by running the generated repos' own test suites.

For each library kind, one repo with all of its bugs: the suite passes at HEAD,
with every bug planted (so no existing test covers them), and at each fix commit;
at each fix's base commit with the fix's test files checked out, exactly the
FAIL_TO_PASS tests fail, and they pass at the fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from repogym.samples import LIBRARIES, FixKind, SampleRepo, generate_repo

from ..support.pytest_servers import PytestServers, SuiteRun, checkout

pytestmark = pytest.mark.xdist_group("samples-planted-fixes")

KINDS = LIBRARIES.names()


@dataclass(frozen=True)
class FixRuns:
    at_fix: SuiteRun
    """The whole suite at the fix commit."""
    at_base_with_tests: SuiteRun
    """The fix's test files, run at the base commit with the fix's versions of them."""


@dataclass(frozen=True)
class RepoRuns:
    repo: SampleRepo
    head: SuiteRun
    all_bugs_planted: SuiteRun
    fixes: dict[str, FixRuns]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, suite_runner: PytestServers) -> dict[str, RepoRuns]:
    root = tmp_path_factory.mktemp("planted")
    repos = {
        kind: generate_repo(
            root / kind, seed=11 + index, library=kind, n_bug_fixes=len(LIBRARIES.get(kind).bugs)
        )
        for index, kind in enumerate(KINDS)
    }
    jobs: list[tuple[Path, tuple[str, ...]]] = []
    for kind, repo in repos.items():
        work = root / f"{kind}-work"
        first_base = repo.fixes[0].base_commit  # fixes are in history order: all bugs in, none fixed
        jobs.append((checkout(repo.path, repo.head, work / "head"), ()))
        jobs.append((checkout(repo.path, first_base, work / "planted"), ()))
        for fix in repo.fixes:
            jobs.append((checkout(repo.path, fix.fix_commit, work / f"{fix.slug}-fix"), ()))
            base = checkout(
                repo.path, fix.base_commit, work / f"{fix.slug}-base", fix.fix_commit, fix.test_files
            )
            jobs.append((base, fix.test_files))
    results = iter(suite_runner.run_many(jobs))
    out = {}
    for kind, repo in repos.items():
        head, planted = next(results), next(results)
        fixes = {fix.slug: FixRuns(next(results), next(results)) for fix in repo.fixes}
        out[kind] = RepoRuns(repo, head, planted, fixes)
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_suite_passes_at_head(runs: dict[str, RepoRuns], kind: str) -> None:
    head = runs[kind].head
    assert head.exit_code == 0, head.with_outcome("failed")
    assert len(head.outcomes) >= 12


@pytest.mark.parametrize("kind", KINDS)
def test_no_existing_test_notices_the_planted_bugs(runs: dict[str, RepoRuns], kind: str) -> None:
    planted = runs[kind].all_bugs_planted
    assert planted.exit_code == 0, planted.with_outcome("failed")


@pytest.mark.parametrize("kind", KINDS)
def test_suite_passes_at_each_fix_commit(runs: dict[str, RepoRuns], kind: str) -> None:
    for slug, fix_runs in runs[kind].fixes.items():
        assert fix_runs.at_fix.exit_code == 0, (slug, fix_runs.at_fix.with_outcome("failed"))


@pytest.mark.parametrize("kind", KINDS)
def test_fail_to_pass_is_exactly_what_flips(runs: dict[str, RepoRuns], kind: str) -> None:
    for fix in runs[kind].repo.fixes:
        fix_runs = runs[kind].fixes[fix.slug]
        before, after = fix_runs.at_base_with_tests, fix_runs.at_fix
        flipped = before.with_outcome("failed") & after.with_outcome("passed")
        assert flipped == set(fix.FAIL_TO_PASS), fix.slug
        assert before.with_outcome("failed") == set(fix.FAIL_TO_PASS), fix.slug
        assert set(fix.PASS_TO_PASS) <= before.with_outcome("passed") & after.with_outcome("passed"), fix.slug
        # The validator runs the fix's test files: those are FAIL_TO_PASS plus PASS_TO_PASS, nothing else.
        assert set(before.outcomes) == set(fix.FAIL_TO_PASS) | set(fix.PASS_TO_PASS), fix.slug


def test_both_fix_kinds_were_exercised(runs: dict[str, RepoRuns]) -> None:
    kinds = {fix.kind for repo_runs in runs.values() for fix in repo_runs.repo.fixes}
    assert kinds == {FixKind.COMMIT, FixKind.PR}
