"""`mine`: turn a repository's history into candidate tasks, accounting for every commit.

The walk, in order:

1. stream the first-parent line (one `git log`); each commit is a candidate
   (merges are diffed against their first parent), except the root commit;
   commits that arrived through a merge's other parents are counted as
   `in_merged_branch` (their change is part of the merge's candidate);
2. the "paths" filters, on paths and messages only;
3. the patches of the survivors, from one `git diff-tree --stdin` fed during
   the walk, split into code and test patches, then the "patch" filters;
4. the surviving merges checked against git's automatic merge (see
   `repogym.mining.merges`: mostly from the graph and one batched tree diff),
   while the patches are split;
5. duplicates (the oldest copy is kept);
6. each change classified as fix / feature / refactor / removal (`repogym.mining.kinds`);
   kinds not in `MiningConfig.kinds` are counted as kind_<kind>; then `max_candidates`
   (the newest are kept);
7. problem statements and hints from the PR export, or the cleaned message
   (`repogym.mining.statements`), and Task rows (source=mined,
   FAIL_TO_PASS/PASS_TO_PASS empty until validation); a statement that quotes
   the fix's added lines is flagged;
8. secrets and personal data redacted, then (with `issue_writer`) statements
   rewritten by a model, a rewrite that quotes the fix rejected.

Reverts are always newer than what they revert and the walk goes newest first,
so by the time a reverted commit is reached, the revert has been seen.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from repogym.dataset import save_tasks
from repogym.files import write_json
from repogym.mining.config import MiningConfig
from repogym.mining.filters import (
    ORDERED_FILTERS,
    Candidate,
    FilterContext,
    PathSummary,
    RevertedCommits,
    first_rejection,
    make_context,
)
from repogym.mining.funnel import Funnel, FunnelCounter
from repogym.mining.gitcmd import GitJob, remote_url, resolve_revision
from repogym.mining.history import (
    Commit,
    GraphCommit,
    PatchFetcher,
    iter_first_parent,
    parse_graph,
    start_list_commits,
)
from repogym.mining.issue_writer import make_issue_writer, rewrite_statements
from repogym.mining.kinds import ChangeClassification, ChangeKind
from repogym.mining.merges import MergeChecks, MergeGraph
from repogym.mining.prs import (
    PrExport,
    describe_change,
    load_pr_export,
    pr_number_from_message,
)
from repogym.mining.split import PathRules, split_patch
from repogym.mining.stages import QUOTES_FIX, classify_and_keep, quotes_fix_flag, redact
from repogym.mining.statements import leaks_fix
from repogym.task import Source, Task

SCAN_STEPS = (
    ("in_merged_branch", "scan", "came in through a merge's other parent (part of that merge's candidate)"),
    ("root_commit", "scan", "has no parent to diff against"),
)
LIMIT_STEPS = (("over_max", "limit", "beyond max_candidates (the newest candidates are kept)"),)
KIND_STEPS = tuple(
    (
        f"kind_{kind.value}",
        "classify",
        f"classified as a {kind.value}, a kind not kept (MiningConfig.kinds / --kinds)",
    )
    for kind in ChangeKind
)


@dataclass(frozen=True)
class MiningResult:
    """The candidate tasks, newest first, and where every scanned commit went."""

    tasks: tuple[Task, ...]
    funnel: Funnel
    elapsed_s: float

    @property
    def commits_per_s(self) -> float:
        return self.funnel.scanned / self.elapsed_s if self.elapsed_s > 0 else 0.0


def repo_name_from_url(url: str) -> str | None:
    """ "owner/name" from a remote URL; None for a local path.

    >>> repo_name_from_url("git@github.com:psf/requests.git"), repo_name_from_url("https://h.io/grp/sub/tool/")
    ('psf/requests', 'sub/tool')
    >>> repo_name_from_url("/srv/git/tool.git") is None
    True
    """
    match = re.match(
        r"^(?:[a-z+]+://[^/]+/|[^/:@]+@[^:/]+:)(?:.*/)?([^/]+)/([^/]+?)(?:\.git)?/?$", url.strip()
    )
    return f"{match.group(1)}/{match.group(2)}" if match else None


def default_repo_name(repo: Path) -> str:
    """From the origin remote's URL, else "local/<folder>"."""
    return repo_name_from_url(remote_url(repo)) or f"local/{repo.name}"


def instance_id(repo_name: str, pr_number: int | None, sha: str) -> str:
    """SWE-bench's id form: owner__name-<PR number or short sha>.

    >>> instance_id("psf/requests", 12, "ab" * 20), instance_id("local/my tool", None, "ab" * 20)
    ('psf__requests-12', 'local__my-tool-abababababab')
    """
    return f"{_id_prefix(repo_name)}-{pr_number if pr_number is not None else sha[:12]}"


@functools.lru_cache(maxsize=64)
def _id_prefix(repo_name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "-", repo_name.replace("/", "__", 1))


def mine(
    repo: str | os.PathLike[str],
    config: MiningConfig | None = None,
    prs: PrExport | str | os.PathLike[str] | None = None,
    progress: Callable[[int], None] | None = None,
) -> MiningResult:
    """Mine candidate tasks from `repo` (see the module docstring); `progress` receives commits scanned so far."""
    with _collector_paused():
        return _mine(repo, config or MiningConfig(), prs, progress)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while mining.

    Mining builds hundreds of thousands of small acyclic objects that live to the
    end; each collection pass walks all of them again, which cost about 40% of
    the run. Reference counting still frees everything; nothing here makes cycles.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _mine(
    repo: str | os.PathLike[str],
    config: MiningConfig,
    prs: PrExport | str | os.PathLike[str] | None,
    progress: Callable[[int], None] | None,
) -> MiningResult:
    started = time.perf_counter()
    root = Path(repo).resolve()
    tip = resolve_revision(root, config.branch)
    export = load_pr_export(prs) if isinstance(prs, str | os.PathLike) else prs
    repo_name = config.repo_name or default_repo_name(root)
    counter = _counter(config)
    context = make_context(config)
    with _GraphListing(root, tip, config) as listing, PatchFetcher(root) as fetcher:
        survivors, mainline = _scan(root, tip, config, export, repo_name, counter, progress, listing, fetcher)
        graph = listing.graph()
        merge_graph = MergeGraph.build(mainline, graph)
        merges = [
            c.commit for c in survivors if c.commit.is_merge and "merge_conflict" not in config.skip_filters
        ]
        with MergeChecks(root, merges, merge_graph, graph, config.merge_check_workers) as checks:
            survivors = _patch_stage(survivors, fetcher.stream(), context, counter)  # split as git writes
            survivors = _merge_stage(survivors, checks.results(), counter)
    # Scanned: the line, and what its merges brought in (not side commits of merges outside the window).
    brought_in = [sha for shas in reversed(merge_graph.brought_in.values()) for sha in shas]  # newest first
    for sha in brought_in:
        counter.drop("in_merged_branch", sha[:12])
    counter.scanned = len(mainline) + len(brought_in)
    survivors = _drop_duplicates(survivors, config, counter)
    kinds = classify_and_keep(survivors, config, export, counter)
    limit = config.max_candidates or len(survivors)
    for candidate in survivors[limit:]:
        counter.drop("over_max", candidate.instance_id)
    tasks = tuple(
        _to_task(c, root, repo_name, config, export, graph, merge_graph, kinds[c.instance_id])
        for c in survivors[:limit]
    )
    funnel = counter.freeze(task.instance_id for task in tasks)
    funnel = funnel.with_flags([quotes_fix_flag(tasks)])
    if config.redact_secrets:
        tasks, funnel = redact(tasks, funnel)
    if config.issue_writer:
        tasks, flags = rewrite_statements(
            tasks,
            make_issue_writer(
                config.issue_writer, config.issue_writer_base_url, config.issue_writer_max_tokens
            ),
        )
        funnel = funnel.with_flags(flags)
    return MiningResult(tasks, funnel, time.perf_counter() - started)


def mine_to_file(
    repo: str | os.PathLike[str],
    out: str | os.PathLike[str],
    config: MiningConfig | None = None,
    prs: PrExport | str | os.PathLike[str] | None = None,
    funnel_path: str | os.PathLike[str] | None = None,
    progress: Callable[[int], None] | None = None,
) -> MiningResult:
    """`mine`, then write the candidates (atomically, format from the suffix) and the funnel JSON.

    No candidates, no candidates file: an empty task file is not a valid input to the next stage.
    """
    result = mine(repo, config, prs, progress)
    if result.tasks:
        save_tasks(result.tasks, out)
    if funnel_path is not None:
        write_json(funnel_path, result.funnel.to_dict())
    return result


def _counter(config: MiningConfig) -> FunnelCounter:
    filters = [
        (f.name, "filter", f.description + (" (switched off)" if f.name in config.skip_filters else ""))
        for f in ORDERED_FILTERS
    ]
    return FunnelCounter(declared=[*SCAN_STEPS, *filters, *KIND_STEPS, *LIMIT_STEPS])


class _GraphListing:
    """The whole commit graph, listed by git beside the walk once a merge shows up.

    A linear history (squash or rebase merges) has no commits off its
    first-parent line, and skips the listing.
    """

    def __init__(self, root: Path, tip: str, config: MiningConfig) -> None:
        self._root, self._tip, self._config = root, tip, config
        self._job: GitJob | None = None

    def merge_seen(self) -> None:
        if self._job is None:
            self._job = start_list_commits(self._root, self._tip, self._config.since, self._config.until)

    def graph(self) -> dict[str, GraphCommit]:
        """Every commit in the window; empty when no merge was seen (the first-parent line is all there is)."""
        return parse_graph(self._job.output()[1]) if self._job is not None else {}

    def __enter__(self) -> _GraphListing:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._job is not None:
            self._job.close()


def _scan(
    root: Path,
    tip: str,
    config: MiningConfig,
    export: PrExport | None,
    repo_name: str,
    counter: FunnelCounter,
    progress: Callable[[int], None] | None,
    listing: _GraphListing,
    fetcher: PatchFetcher,
) -> tuple[list[Candidate], list[str]]:
    """Walk the first-parent line and apply the "paths" filters; returns survivors and the line, newest first."""
    rules = PathRules(config)
    reverted = RevertedCommits()
    context = make_context(config, reverted)  # sees reverts as they stream in (they come first)
    mainline: list[str] = []
    used_ids: set[str] = set()
    survivors: list[Candidate] = []
    for commit in iter_first_parent(root, tip, config.since, config.until):
        mainline.append(commit.sha)
        if progress is not None and len(mainline) % 512 == 0:
            progress(len(mainline))
        reverted.note(commit.message)
        if commit.is_merge:
            listing.merge_seen()
        if not commit.parents:
            counter.drop("root_commit", commit.sha[:12])
            continue
        candidate = _candidate(commit, export, repo_name, used_ids, rules)
        reason = first_rejection(candidate, context, "paths")
        if reason is None:
            survivors.append(candidate)
            fetcher.submit(commit)  # git starts on its patch while the walk goes on
        else:
            counter.drop(reason, candidate.instance_id)
    if progress is not None:
        progress(len(mainline))
    return survivors, mainline


def _candidate(
    commit: Commit, export: PrExport | None, repo_name: str, used_ids: set[str], rules: PathRules
) -> Candidate:
    pull = export.pull_for(commit.sha, commit.subject) if export is not None else None
    # With an export, a "(#N)" that is not one of its pulls is an issue reference, not a PR number.
    number = (
        pull.number if pull is not None else pr_number_from_message(commit.subject, squash=export is None)
    )
    task_id = instance_id(repo_name, number, commit.sha)
    if task_id in used_ids:  # the same PR number twice (a re-land): the short sha keeps ids unique
        task_id = instance_id(repo_name, None, commit.sha)
    used_ids.add(task_id)
    return Candidate(commit, task_id, pull, number, PathSummary.of(commit, rules))


def _patch_stage(
    survivors: list[Candidate],
    patches: Iterator[tuple[Commit, bytes]],
    context: FilterContext,
    counter: FunnelCounter,
) -> list[Candidate]:
    """Split each survivor's patch into code and tests as git writes it, then apply the "patch" filters."""
    rules = PathRules(context.config)
    kept: list[Candidate] = []
    for candidate, (_, raw) in zip(survivors, patches, strict=True):
        try:
            text, undecodable = raw.decode("utf-8"), False
        except UnicodeDecodeError:
            text, undecodable = raw.decode("utf-8", "surrogateescape"), True
        candidate = candidate.with_split(split_patch(text, rules), undecodable)
        reason = first_rejection(candidate, context, "patch")
        if reason is None:
            kept.append(candidate)
        else:
            counter.drop(reason, candidate.instance_id)
    return kept


def _merge_stage(
    survivors: list[Candidate], differs: dict[str, bool], counter: FunnelCounter
) -> list[Candidate]:
    kept = []
    for candidate in survivors:
        if differs.get(candidate.commit.sha, False):
            counter.drop("merge_conflict", candidate.instance_id)
        else:
            kept.append(candidate)
    return kept


def _drop_duplicates(
    survivors: list[Candidate], config: MiningConfig, counter: FunnelCounter
) -> list[Candidate]:
    """Keep the oldest candidate of each normalised diff (the original; later copies are re-lands)."""
    if "duplicate" in config.skip_filters:
        return survivors
    seen: set[str] = set()
    duplicates: set[str] = set()
    for candidate in reversed(survivors):  # oldest first
        fingerprint = candidate.split.fingerprint if candidate.split else candidate.commit.sha
        if fingerprint in seen:
            duplicates.add(candidate.commit.sha)
            counter.drop("duplicate", candidate.instance_id)
        seen.add(fingerprint)
    return [candidate for candidate in survivors if candidate.commit.sha not in duplicates]


def _iso(timestamp: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(timestamp))


def _to_task(
    candidate: Candidate,
    root: Path,
    repo_name: str,
    config: MiningConfig,
    export: PrExport | None,
    graph: dict[str, GraphCommit],
    merge_graph: MergeGraph,
    kind: ChangeClassification,
) -> Task:
    commit, split = candidate.commit, candidate.split
    brought_in = merge_graph.brought_in.get(commit.sha, ())
    # The fix existed from its first commit on: discussion after that is not a hint, it is the answer.
    fixed_at = min([commit.authored_at, *(graph[sha].authored_at for sha in brought_in)])
    statement = describe_change(commit.message, candidate.pull, export, fixed_at)
    quoted = leaks_fix(statement.text, split.code_patch) if split else []
    provenance = {
        "commit": commit.sha,
        "kind": candidate.kind,
        "pr_number": candidate.pr_number,
        "issue_numbers": list(statement.issue_numbers),
        "author": commit.author_name,
        "statement_source": statement.source,
        QUOTES_FIX: bool(quoted),
        "statement_quoted_lines": len(quoted),
        "change_kind": kind.kind.value,
        "change_kind_confidence": kind.confidence,
        "change_kind_cues": list(kind.cues),
        "branch": config.branch,
        "branch_commits": len(brought_in),
        "fixed_at": _iso(fixed_at),
        "patch_hash": split.fingerprint if split else "",
        "code_lines": split.code_lines if split else 0,
        "test_lines": split.test_lines if split else 0,
        "dropped_paths": [list(item) for item in split.dropped] if split else [],
    }
    return Task(
        instance_id=candidate.instance_id,
        repo=repo_name,
        base_commit=commit.parents[0],
        patch=split.code_patch if split else "",
        test_patch=split.test_patch if split else "",
        problem_statement=statement.text,
        hints_text=statement.hints,
        created_at=_iso(commit.committed_at),
        source=Source.MINED,
        repo_source=str(root),
        metadata={"mining": provenance},
    )
