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
from dataclasses import dataclass

from repogym.mining.history import (
    Commit,
    GraphCommit,
    merge_tree_differs,
    parse_diff_entries,
    start_diff_entries,
    start_merge_tree,
)


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


class MergeChecks:
    """Answers, for each two-parent merge, whether its tree differs from git's automatic merge.

    The cheap answers are known at once; the git work (one batched tree diff,
    and merge-tree for the rest, at most `width` at a time) starts at
    construction and runs while the caller does other work; `results()` collects.
    Octopus merges are not checked: git's octopus strategy refuses conflicts, so
    only hand edits could slip through.
    """

    def __init__(
        self,
        repo: str | os.PathLike[str],
        merges: Sequence[Commit],
        merge_graph: MergeGraph,
        graph: dict[str, GraphCommit],
        width: int = 4,
    ) -> None:
        self._repo, self._width = repo, width
        self._answers: dict[str, bool] = {}
        self._diverged: list[tuple[Commit, str]] = []
        self._by_git: list[Commit] = []
        for merge in merges:
            if len(merge.parents) != 2:
                self._answers[merge.sha] = False
                continue
            base, second = merge_graph.bases.get(merge.sha), graph.get(merge.parents[1])
            if base is None or second is None:
                self._by_git.append(merge)
            elif base == merge.parents[0]:  # the branch was up to date: git's merge is the branch's tree
                self._answers[merge.sha] = merge.tree != second.tree
            else:
                self._diverged.append((merge, base))
        pairs = [
            pair
            for merge, base in self._diverged
            for pair in ((merge.parents[1], base), (merge.parents[0], base))
        ]
        self._diff_job = start_diff_entries(repo, pairs) if pairs else None
        self._running = [(merge, start_merge_tree(repo, merge)) for merge in self._by_git[:width]]
        self._started = len(self._running)

    def results(self) -> dict[str, bool]:
        if self._diff_job is not None:
            entries = parse_diff_entries(self._diff_job.output()[1], 2 * len(self._diverged))
            for index, (merge, _) in enumerate(self._diverged):
                branch_side, main_side = entries[2 * index], entries[2 * index + 1]
                if branch_side.keys() & main_side.keys():  # both sides changed a file: git merges contents
                    self._by_git.append(merge)
                    continue
                merged = {change.path: (change.new_mode, change.new_blob) for change in merge.changes}
                self._answers[merge.sha] = merged != branch_side
            self._diff_job = None
        queue = self._by_git[self._started :]
        self._started = len(self._by_git)
        while self._running or queue:
            while queue and len(self._running) < self._width:
                merge = queue.pop(0)
                self._running.append((merge, start_merge_tree(self._repo, merge)))
            merge, job = self._running.pop(0)
            self._answers[merge.sha] = merge_tree_differs(job, merge)
        return self._answers

    def close(self) -> None:
        """Stop git jobs still running (after an error elsewhere)."""
        for _, job in self._running:
            job.close()
        if self._diff_job is not None:
            self._diff_job.close()

    def __enter__(self) -> MergeChecks:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
