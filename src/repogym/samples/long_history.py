"""A long synthetic git history, built in seconds with `git fast-import`, for mining benchmarks and tests.

The repository is a toy package (`pkg/mod_NN.py`, `tests/test_mod_NN.py`, docs,
a lock file) whose history mixes what real histories hold: fixes with a test,
refactors without one, tests-only and docs-only commits, dependabot bumps,
PR branches merged with "Merge pull request #N" (a few of them edited by hand
in the merge, "evil merges"), reverts and re-lands. The code is not meant to
run; the history is meant to be mined. Deterministic from the seed: the same
arguments give the same commit shas.

    python -m repogym.samples.long_history /tmp/long --commits 20000
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from repogym.hostgit import GIT_CONFIG, git, git_environment, run_git

MODULES = 40
FUNCTIONS = 12
DOCS = 8
DEPENDENCIES = 10
START_TIME = 1_600_000_000
AUTHORS = ("Ada Lovelace", "Grace Hopper", "Alan Turing", "Barbara Liskov", "Edsger Dijkstra")
#: Mainline events and their weights; a "pr" event makes two branch commits and a merge.
EVENTS = {
    "fix": 40,
    "refactor": 13,
    "tests_only": 6,
    "docs": 13,
    "bot": 10,
    "pr": 12,
    "revert": 4,
    "reland": 2,
}


@dataclass(frozen=True)
class LongHistory:
    """What was generated."""

    path: Path
    commits: int
    """All commits, branch commits included."""
    first_parent: int
    """Commits on main's first-parent line."""
    events: dict[str, int]
    """Mainline events by kind (see EVENTS; "evil_merge" counts the hand-edited merges among "pr")."""
    elapsed_s: float


class _Tree:
    """File contents as small integer tables, rendered to text on demand."""

    def __init__(self) -> None:
        self.code = [[k for k in range(FUNCTIONS)] for _ in range(MODULES)]
        self.tests = [[k for k in range(FUNCTIONS)] for _ in range(MODULES)]
        self.docs = [[0] * 6 for _ in range(DOCS)]
        self.deps = [0] * DEPENDENCIES
        self.cases = [0] * MODULES

    def copy(self) -> _Tree:
        other = _Tree.__new__(_Tree)
        other.code = [list(row) for row in self.code]
        other.tests = [list(row) for row in self.tests]
        other.docs = [list(row) for row in self.docs]
        other.deps = list(self.deps)
        other.cases = list(self.cases)
        return other

    def render(self, path: str) -> str:
        if path.startswith("pkg/mod_"):
            values = self.code[int(path[8:10])]
            return "".join(f"def f{k}(x):\n    return x + {v}\n\n\n" for k, v in enumerate(values))
        if path.startswith("tests/test_mod_"):
            number = int(path[15:17])
            body = "".join(
                f"def test_f{k}():\n    assert mod.f{k}(1) == {1 + v}\n\n\n"
                for k, v in enumerate(self.tests[number])
            )
            cases = f"def test_cases():\n    assert {self.cases[number]} >= 0\n"
            return f"from pkg import mod_{number:02d} as mod\n\n\n" + body + cases
        if path.startswith("docs/guide_"):
            values = self.docs[int(path[11:12])]
            return "".join(f"Section {k}: the value is {v}.\n" for k, v in enumerate(values))
        if path == "poetry.lock":
            return "".join(
                f'[[package]]\nname = "dep{k}"\nversion = "1.{v}"\n\n' for k, v in enumerate(self.deps)
            )
        raise KeyError(path)

    def all_paths(self) -> list[str]:
        return [
            *(f"pkg/mod_{i:02d}.py" for i in range(MODULES)),
            *(f"tests/test_mod_{i:02d}.py" for i in range(MODULES)),
            *(f"docs/guide_{i}.md" for i in range(DOCS)),
            "poetry.lock",
        ]


class _Writer:
    """Writes a fast-import stream: one `commit` command per call."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.mark = 0
        self.clock = START_TIME
        self.tips: dict[str, int] = {}

    def commit(self, ref: str, author: str, message: str, tree: _Tree, paths: list[str], **links: int) -> int:
        self.mark += 1
        self.clock += 613
        email = author.lower().replace(" ", ".") + "@example.invalid"
        parts = [
            f"commit {ref}\nmark :{self.mark}\n",
            f"author {author} <{email}> {self.clock} +0000\ncommitter {author} <{email}> {self.clock} +0000\n",
            _data(message),
        ]
        if "from_mark" in links:
            parts.append(f"from :{links['from_mark']}\n")
        if "merge_mark" in links:
            parts.append(f"merge :{links['merge_mark']}\n")
        for path in paths:
            parts.append(f"M 100644 inline {path}\n" + _data(tree.render(path)))
        self.stream.write("".join(parts).encode())
        self.tips[ref] = self.mark
        return self.mark


def _data(text: str) -> str:
    return f"data {len(text.encode())}\n{text}\n"


@dataclass
class _OpenPullRequest:
    number: int
    module: int
    function: int
    branch: _Tree
    tip: int
    """fast-import mark of the topic branch's last commit."""
    title: str


#: git as `repogym.hostgit` runs it, and not even the user's configuration may touch the history.
_NO_USER_CONFIG = {"GIT_CONFIG_GLOBAL": os.devnull}


def generate_long_history(path: str | Path, commits: int = 20_000, seed: int = 0) -> LongHistory:
    """Create a repository at `path` (which must not exist or be empty) with at least `commits` commits.

    Half of the PRs are merged at once (the branch is up to date); the others stay
    open while main moves on (never in the PR's function, so git merges them cleanly).
    """
    started = time.perf_counter()
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    git(None, "init", "-q", "-b", "main", str(root), env=_NO_USER_CONFIG)
    process = subprocess.Popen(
        ["git", *GIT_CONFIG, "fast-import", "--quiet", "--done"], cwd=root, stdin=subprocess.PIPE,
        env=git_environment(_NO_USER_CONFIG),
    )  # fmt: skip
    rng = random.Random(seed)
    writer = _Writer(process.stdin)
    tree = _Tree()
    events: Counter[str] = Counter()
    writer.commit("refs/heads/main", AUTHORS[0], "Initial import\n", tree, tree.all_paths())
    total, first_parent = 1, 1
    fixes: list[tuple[int, int, int, int, str]] = []  # (module, function, old, new, subject) of recent fixes
    reverted: list[tuple[int, int, int, int, str]] = []
    kinds, weights = list(EVENTS), list(EVENTS.values())
    open_pr: _OpenPullRequest | None = None
    while total < commits or open_pr is not None:
        if open_pr is not None and (rng.random() < 0.5 or total >= commits):
            events["evil_merge"] += _merge(writer, tree, open_pr, rng)
            open_pr, total, first_parent = None, total + 1, first_parent + 1
            continue
        kind = rng.choices(kinds, weights)[0]
        if kind in ("revert", "reland") and open_pr is not None:
            kind = "docs"  # they touch old fixes' functions, which could clash with the open PR
        if (
            (kind == "revert" and not fixes)
            or (kind == "reland" and not reverted)
            or (kind == "pr" and open_pr)
        ):
            kind = "fix"
        events[kind] += 1
        if kind == "pr":
            open_pr = _open_pull_request(writer, tree, rng, events["pr"])
            total += 2
            continue
        avoid = (open_pr.module, open_pr.function) if open_pr is not None else (-1, -1)
        message, paths = _single(kind, tree, rng, fixes, reverted, avoid)
        author = "dependabot[bot]" if kind == "bot" else rng.choice(AUTHORS)
        writer.commit("refs/heads/main", author, message, tree, paths)
        total, first_parent = total + 1, first_parent + 1
    writer.stream.write(b"done\n")
    process.stdin.close()
    if process.wait() != 0:
        raise RuntimeError(f"git fast-import failed in {root}")
    run_git(root, "update-ref", "-d", "refs/heads/topic", env=_NO_USER_CONFIG)
    git(root, "reset", "-q", "--hard", "main", env=_NO_USER_CONFIG)
    return LongHistory(root, total, first_parent, dict(events), time.perf_counter() - started)


def _bump(values: list[int], index: int, rng: random.Random) -> tuple[int, int]:
    old = values[index]
    values[index] = old + rng.randint(1, 9)
    return old, values[index]


def _single(
    kind: str, tree: _Tree, rng: random.Random, fixes: list, reverted: list, avoid: tuple[int, int] = (-1, -1)
) -> tuple[str, list[str]]:
    """One commit on main of the given kind, never on the `avoid` (module, function); returns (message, paths).

    Another function of the same module is fine: its lines are three lines away,
    so git merges both sides without a conflict.
    """
    module, function = rng.randrange(MODULES), rng.randrange(FUNCTIONS)
    if (module, function) == avoid:
        function = (function + 1) % FUNCTIONS
    code, test = f"pkg/mod_{module:02d}.py", f"tests/test_mod_{module:02d}.py"
    if kind == "fix":
        old, new = _bump(tree.code[module], function, rng)
        tree.tests[module][function] = new
        subject = f"Fix f{function} in mod_{module:02d}: off by {new - old}"
        fixes.append((module, function, old, new, subject))
        del fixes[:-20]
        return f"{subject}\n\nThe result was wrong for every input.\n", [code, test]
    if kind == "refactor":
        _bump(tree.code[module], function, rng)
        return f"Simplify f{function} in mod_{module:02d}\n", [code]
    if kind == "tests_only":
        tree.cases[module] += 1
        return f"Test more cases of mod_{module:02d}\n", [test]
    if kind == "docs":
        doc = rng.randrange(DOCS)
        _bump(tree.docs[doc], rng.randrange(6), rng)
        return f"docs: clarify guide {doc}\n", [f"docs/guide_{doc}.md"]
    if kind == "bot":
        dep = rng.randrange(DEPENDENCIES)
        old, new = _bump(tree.deps, dep, rng)
        return f"Bump dep{dep} from 1.{old} to 1.{new}\n", ["poetry.lock"]
    if kind == "revert":
        module, function, old, new, subject = fixes.pop()
        tree.code[module][function] = tree.tests[module][function] = old
        reverted.append((module, function, old, new, subject))
        return f'Revert "{subject}"\n\nIt broke callers.\n', [
            f"pkg/mod_{module:02d}.py",
            f"tests/test_mod_{module:02d}.py",
        ]
    module, function, old, new, subject = reverted.pop()  # reland: the very same change again
    if tree.code[module][function] != old:  # changed since the revert: the same diff is no longer possible
        return _single("fix", tree, rng, fixes, reverted, avoid)
    tree.code[module][function] = tree.tests[module][function] = new
    return f"{subject} (again)\n", [f"pkg/mod_{module:02d}.py", f"tests/test_mod_{module:02d}.py"]


def _open_pull_request(writer: _Writer, tree: _Tree, rng: random.Random, number: int) -> _OpenPullRequest:
    """A topic branch off main's tip: a code commit, then a test commit."""
    module, function = rng.randrange(MODULES), rng.randrange(FUNCTIONS)
    code, test = f"pkg/mod_{module:02d}.py", f"tests/test_mod_{module:02d}.py"
    branch = tree.copy()
    _, new = _bump(branch.code[module], function, rng)
    author = rng.choice(AUTHORS)
    main_tip = writer.tips["refs/heads/main"]
    writer.commit(
        "refs/heads/topic", author, f"Handle f{function} edge case\n", branch, [code], from_mark=main_tip
    )
    branch.tests[module][function] = new
    tip = writer.commit("refs/heads/topic", author, f"Test f{function} edge case\n", branch, [test])
    return _OpenPullRequest(
        number, module, function, branch, tip, f"Fix f{function} edge case in mod_{module:02d}"
    )


def _merge(writer: _Writer, tree: _Tree, pr: _OpenPullRequest, rng: random.Random) -> bool:
    """Merge the PR into main (main kept away from its function); one in ten is edited by hand. Returns evil."""
    module, function = pr.module, pr.function
    tree.code[module][function] = pr.branch.code[module][function]
    tree.tests[module][function] = pr.branch.tests[module][function]
    changed = [f"pkg/mod_{module:02d}.py", f"tests/test_mod_{module:02d}.py"]
    evil = rng.random() < 0.1
    if evil:  # a hand edit inside the merge: the result is not what git would merge
        other = (module + 1) % MODULES
        _bump(tree.code[other], 0, rng)
        changed.append(f"pkg/mod_{other:02d}.py")
    message = f"Merge pull request #{pr.number} from dev/topic-{pr.number}\n\n{pr.title}\n"
    writer.commit("refs/heads/main", "Grace Hopper", message, tree, changed, merge_mark=pr.tip)
    return evil


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--commits", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    history = generate_long_history(args.path, args.commits, args.seed)
    print(
        f"{history.commits} commits ({history.first_parent} on main) in {history.elapsed_s:.1f} s: {history.events}"
    )


if __name__ == "__main__":
    main()
