"""Merges on the mined line: what each one brought in, and whether git would have merged it so.

A merge candidate is only a clean task when its tree is exactly git's automatic
merge of its parents; otherwise someone resolved a conflict or edited the merge
by hand, and its first-parent diff mixes the PR's change with that resolution.

Spawning `git merge-tree` per merge costs a process each (2-3 ms), so the
common cases are decided from data already at hand:

1. `MergeGraph` walks every merge of the line, oldest first, over the commit
   graph. A branch is *simple* when everything it brought in is new (not merged
   before) and inside the mined window; its merge base is then the newest
   mainline commit it reaches.
2. When the base is the first parent (an up-to-date branch, or `--no-ff`), the
   automatic merge is the second parent's tree: compare tree ids.
3. Otherwise one batched `git diff-tree --stdin` lists what each side changed
   since the base. When the sides touch disjoint paths, the automatic merge
   takes the branch's version of exactly the branch's paths, so the merge is
   clean iff its first-parent diff is exactly those paths with those blobs.
4. Overlapping paths (git would merge file contents), non-simple branches and
   windows that cut a branch fall back to `git merge-tree --write-tree`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass

from repogym.mining.history import Commit, GraphCommit, diff_entries, merge_differs_from_automatic


@dataclass(frozen=True)
class MergeGraph:
    """For each merge of the mined line: the commits it brought in, and its merge base when the branch is simple."""

    brought_in: dict[str, tuple[str, ...]]
    bases: dict[str, str | None]
    """Merge sha -> the merge base of its parents, or None when the graph cannot tell it cheaply."""

    @classmethod
    def build(cls, mainline: Sequence[str], graph: dict[str, GraphCommit]) -> MergeGraph:
        """`mainline` is the first-parent line, newest first; `graph` every commit in the window."""
        position = {sha: index for index, sha in enumerate(mainline)}  # smaller is newer
        owner: set[str] = set()
        brought_in: dict[str, tuple[str, ...]] = {}
        bases: dict[str, str | None] = {}
        for sha in reversed(mainline):  # oldest first, so older merges own what they brought in
            node = graph.get(sha)
            if node is None or len(node.parents) < 2:
                continue
            own, newest_reached, simple = [], None, True
            stack, seen = list(node.parents[1:]), set()
            while stack:
                current = stack.pop()
                if current in seen:
                    continue
                seen.add(current)
                if current in position:
                    if newest_reached is None or position[current] < position[newest_reached]:
                        newest_reached = current
                elif current in owner or current not in graph:
                    simple = (
                        False  # merged before (an ancestor of the first parent too), or cut by the window
                    )
                else:
                    owner.add(current)
                    own.append(current)
                    stack.extend(graph[current].parents)
            brought_in[sha] = tuple(own)
            bases[sha] = newest_reached if simple else None
        return cls(brought_in, bases)


def check_merges(
    repo: str | os.PathLike[str],
    merges: Sequence[Commit],
    merge_graph: MergeGraph,
    graph: dict[str, GraphCommit],
    pool: Executor,
) -> dict[str, bool | Future[bool]]:
    """For each two-parent merge: does its tree differ from git's automatic merge? (a bool, or a Future of one).

    Octopus merges are not checked: git's octopus strategy refuses conflicts, so
    only hand edits could slip through.
    """
    results: dict[str, bool | Future[bool]] = {}
    diverged: list[tuple[Commit, str]] = []
    for merge in merges:
        if len(merge.parents) != 2:
            results[merge.sha] = False
            continue
        base, second = merge_graph.bases.get(merge.sha), graph.get(merge.parents[1])
        if base is None or second is None:
            results[merge.sha] = pool.submit(merge_differs_from_automatic, repo, merge)
        elif base == merge.parents[0]:
            results[merge.sha] = merge.tree != second.tree
        else:
            diverged.append((merge, base))
    if diverged:
        pending: dict[str, Future[bool]] = {merge.sha: Future() for merge, _ in diverged}
        results.update(pending)
        pool.submit(_check_diverged, repo, diverged).add_done_callback(lambda done: _settle(done, pending))
    return results


def _settle(done: Future[dict[str, bool]], pending: dict[str, Future[bool]]) -> None:
    """Hand the batch's answers (or its error) to each merge's own future."""
    error = done.exception()
    for sha, future in pending.items():
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(done.result()[sha])


def _check_diverged(repo: str | os.PathLike[str], diverged: list[tuple[Commit, str]]) -> dict[str, bool]:
    """Decide merges whose branch is behind the first parent, from what each side changed since the base."""
    pairs = [
        pair for merge, base in diverged for pair in ((merge.parents[1], base), (merge.parents[0], base))
    ]
    entries = diff_entries(repo, pairs)
    results: dict[str, bool] = {}
    for index, (merge, _) in enumerate(diverged):
        branch_side, main_side = entries[2 * index], entries[2 * index + 1]
        if branch_side.keys() & main_side.keys():  # both sides changed a file: git merges contents
            results[merge.sha] = merge_differs_from_automatic(repo, merge)
            continue
        merged = {change.path: (change.new_mode, change.new_blob) for change in merge.changes}
        results[merge.sha] = merged != branch_side
    return results
