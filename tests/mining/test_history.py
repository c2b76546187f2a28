"""Reading history in batch: the first-parent walk, the graph, patches, tree diffs, merge checks."""

from __future__ import annotations

import subprocess

import pytest

from repogym.errors import RepoSourceError
from repogym.mining.gitcmd import resolve_revision
from repogym.mining.history import (
    diff_entries,
    fetch_patches,
    iter_first_parent,
    iter_patches,
    list_commits,
    merge_differs_from_automatic,
)
from repogym.mining.merges import MergeChecks, MergeGraph
from repogym.samples.long_history import generate_long_history

from ..support.git import commit_files


def _feature_branch(repo) -> tuple[str, str, str]:
    """main: init -> docs; feature: two commits; merged with --no-ff. Returns (first, second, merge)."""
    repo.checkout("feature", create=True)
    first = repo.write("pkg/calc.py", "def add(a, b):\n    return b + a\n").commit("Swap operands")
    second = repo.write("tests/test_calc.py", "def test_x():\n    pass\n").commit("Test it")
    repo.checkout("main")
    repo.write("docs/guide.md", "guide\n").commit("docs: guide")
    merge = repo.merge("feature", "Merge pull request #7 from dev/feature\n\nSwap operands")
    return first, second, merge


def test_first_parent_walk_is_newest_first_and_diffs_merges_against_first_parent(repo) -> None:
    first, second, merge = _feature_branch(repo)

    commits = list(iter_first_parent(repo.path, "HEAD"))

    assert commits[0].sha == merge and commits[0].is_merge
    assert {c.path for c in commits[0].changes} == {"pkg/calc.py", "tests/test_calc.py"}
    assert [c.subject for c in commits] == [
        "Merge pull request #7 from dev/feature",
        "docs: guide",
        "Initial import",
    ]
    assert first not in {c.sha for c in commits} and second not in {c.sha for c in commits}
    assert commits[-1].parents == ()
    assert commits[0].author_name == "Dev One"
    assert not any("email" in name for name in type(commits[0])._fields)


def test_graph_lists_every_commit_with_parents_and_trees(repo) -> None:
    first, second, merge = _feature_branch(repo)
    graph = list_commits(repo.path, "HEAD")
    assert len(graph) == int(repo.git("rev-list", "--count", "HEAD")) == 5
    assert graph[second].parents == (first,)
    assert graph[merge].tree == repo.git("rev-parse", f"{merge}^{{tree}}")


def test_since_and_until_limit_the_walk(repo) -> None:
    for n in range(4):
        repo.write("pkg/calc.py", f"X = {n}\n").commit(f"Change {n}")  # hourly from 2024-01-01T02:00
    shas = [c.sha for c in iter_first_parent(repo.path, "HEAD", since="2024-01-01T03:00:00+00:00")]
    assert len(shas) == 3
    shas = [c.sha for c in iter_first_parent(repo.path, "HEAD", until="2024-01-01T03:00:00+00:00")]
    assert len(shas) == 3


def test_fetched_patches_equal_git_diff(repo) -> None:
    _feature_branch(repo)
    commits = [c for c in iter_first_parent(repo.path, "HEAD") if c.parents]
    patches = fetch_patches(repo.path, commits)
    for commit in commits:
        expected = subprocess.run(
            ["git", "diff", "--binary", "-M", commit.parents[0], commit.sha],
            cwd=repo.path,
            capture_output=True,
        ).stdout
        assert patches[commit.sha] == expected


def test_patches_stream_in_order_for_hundreds_of_commits(tmp_path) -> None:
    history = generate_long_history(tmp_path / "long", commits=700, seed=3)
    commits = [c for c in iter_first_parent(history.path, "HEAD") if c.parents]
    commit_files(history.path, {}, "nothing")
    commits.insert(5, next(iter_first_parent(history.path, "HEAD")))  # an empty patch in the middle

    streamed = list(iter_patches(history.path, commits))

    assert [commit.sha for commit, _ in streamed] == [commit.sha for commit in commits]
    assert streamed[5][1] == b""
    for commit, patch in streamed[::50]:
        expected = subprocess.run(
            ["git", "diff", "--binary", "-M", commit.parents[0], commit.sha],
            cwd=history.path,
            capture_output=True,
        ).stdout
        assert patch == expected


def test_unknown_revision_and_non_repository_are_named(repo, tmp_path) -> None:
    with pytest.raises(RepoSourceError, match="no commit named 'nope'"):
        resolve_revision(repo.path, "nope")
    (tmp_path / "plain").mkdir()
    with pytest.raises(RepoSourceError, match="not a git repository"):
        resolve_revision(tmp_path / "plain", "HEAD")


def test_diff_entries_answer_every_pair_even_empty_ones(repo) -> None:
    base = repo.head()
    changed = repo.write("pkg/calc.py", "X = 1\n").commit("Change calc")
    empty = repo.commit("Nothing")
    entries = diff_entries(repo.path, [(changed, base), (empty, changed), (changed, base)])
    blob = repo.git("rev-parse", f"{changed}:pkg/calc.py")
    assert entries == [{"pkg/calc.py": ("100644", blob)}, {}, {"pkg/calc.py": ("100644", blob)}]


def _diverged(repo, main_file: str, main_text: str):
    """A branch off main that changes calc's add; main then changes `main_file`; returns the branch name."""
    repo.checkout("topic", create=True)
    repo.write("pkg/calc.py", "def add(a, b):\n    return b + a\n\n\ndef sub(a, b):\n    return a - b\n")
    repo.commit("Topic change")
    repo.checkout("main")
    repo.write(main_file, main_text).commit("Main moves on")
    return "topic"


def test_merge_checks_agree_with_git_merge_tree(repo) -> None:
    """Clean, hand-edited and conflicted merges, up to date and diverged: the cheap answer equals git's."""
    expected: dict[str, bool] = {}
    # diverged, other file: decided from tree diffs
    expected[repo.merge(_diverged(repo, "pkg/other.py", "Y = 1\n"), "Merge topic")] = False
    repo.git("branch", "-D", "topic")
    # diverged, same file, other lines: git merges contents (falls back to merge-tree)
    calc = repo.path.joinpath("pkg/calc.py").read_text().replace("a - b", "a - b  # main")
    expected[repo.merge(_diverged(repo, "pkg/calc.py", calc), "Merge topic 2")] = False
    repo.git("branch", "-D", "topic")
    # up to date, edited by hand in the merge
    repo.checkout("up", create=True).write("pkg/up.py", "U = 1\n").commit("Up")
    repo.checkout("main")
    repo.git("merge", "-q", "--no-ff", "--no-commit", "up")
    repo.write("pkg/evil.py", "E = 1\n")
    expected[repo.commit("Merge up, with an extra")] = True
    # diverged and conflicting, resolved by hand
    repo.checkout("clash", create=True).write("pkg/up.py", "U = 2\n").commit("Clash")
    repo.checkout("main").write("pkg/up.py", "U = 3\n").commit("Main clash")
    expected[repo.merge("clash", "Merge clash", resolve={"pkg/up.py": "U = 4\n"})] = True

    commits = list(iter_first_parent(repo.path, "HEAD"))
    graph = list_commits(repo.path, "HEAD")
    merges = [c for c in commits if c.is_merge]
    merge_graph = MergeGraph.build([c.sha for c in commits], graph)
    with MergeChecks(repo.path, merges, merge_graph, graph, width=1) as checks:
        answers = checks.results()
    assert answers == expected
    assert {m.sha: merge_differs_from_automatic(repo.path, m) for m in merges} == expected


def test_merge_graph_on_a_long_history_matches_git(tmp_path) -> None:
    history = generate_long_history(tmp_path / "long", commits=900, seed=5)
    commits = list(iter_first_parent(history.path, "HEAD"))
    graph = list_commits(history.path, "HEAD")
    merge_graph = MergeGraph.build([c.sha for c in commits], graph)
    merges = [c for c in commits if c.is_merge]
    for merge in merges:
        base = merge_graph.bases[merge.sha]
        assert (
            base
            == subprocess.run(
                ["git", "merge-base", *merge.parents], cwd=history.path, capture_output=True, text=True
            ).stdout.strip()
        )
        assert merge_graph.brought_in[merge.sha]  # each PR brought its branch commits
    assert sum(len(v) for v in merge_graph.brought_in.values()) == len(graph) - len(commits)
