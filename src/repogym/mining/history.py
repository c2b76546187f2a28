"""Reading a git history fast: a few batch `git` processes, never one per commit.

- `iter_first_parent` streams one `git log --first-parent --raw -z` over the
  mined line: metadata and changed paths of every commit, no file contents.
- `list_commits` reads the whole graph (parents, trees, author times) in one
  `git log` without diffs, to account for commits that arrived through merges.
- `PatchFetcher` gets the patches of the commits that survive the path filters
  from one `git diff-tree --stdin`, fed during the walk and read as git writes.
- `diff_entries` lists what changed between many commit pairs in one
  `git diff-tree --stdin`; `merge_differs_from_automatic` runs
  `git merge-tree --write-tree` (no work tree, no index) for the few merges
  that need it (see `repogym.mining.merges`).

Every command runs through `repogym.mining.gitcmd` (user configuration that
would change the output is pinned). Author e-mails are never requested from git.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import IO, NamedTuple

from repogym.errors import RepoSourceError
from repogym.hostgit import GIT_CONFIG, git, git_environment
from repogym.mining.gitcmd import GitJob

_RECORD = "\x1e"
#: One commit's header: sha, parents, tree, author name, author time, commit time, message (raw, NUL-free).
_FORMAT = "%x1e%H%x00%P%x00%T%x00%an%x00%at%x00%ct%x00%B%x00"
_PATCH_OPTIONS = ("-p", "--binary", "-M", "--no-ext-diff", "--no-textconv", "--no-color")


class RawChange(NamedTuple):
    """One entry of `git log --raw`: a path changed by a commit, against its first parent.

    A NamedTuple rather than a frozen dataclass: a history has millions of these,
    and a tuple is built ten times faster.
    """

    status: str
    """A (added), D (deleted), M (modified), T (type changed)."""
    old_mode: str
    new_mode: str
    old_blob: str
    new_blob: str
    path: str

    @property
    def mode_only(self) -> bool:
        return self.status == "M" and self.old_blob == self.new_blob and self.old_mode != self.new_mode

    @property
    def submodule(self) -> bool:
        return "160000" in (self.old_mode, self.new_mode)


class Commit(NamedTuple):
    """A commit of the mined line, with what it changed against its first parent.

    A NamedTuple for the same reason as RawChange: one is built per commit.
    """

    sha: str
    parents: tuple[str, ...]
    tree: str
    author_name: str
    authored_at: int
    """Author time, seconds since the epoch."""
    committed_at: int
    """Commit time, seconds since the epoch."""
    message: str
    changes: tuple[RawChange, ...] = ()

    @property
    def subject(self) -> str:
        return self.message.partition("\n")[0].strip()

    @property
    def is_merge(self) -> bool:
        return len(self.parents) > 1


def _window(since: str, until: str) -> list[str]:
    return [*([f"--since={since}"] if since else []), *([f"--until={until}"] if until else [])]


def iter_first_parent(
    repo: str | os.PathLike[str], rev: str, since: str = "", until: str = ""
) -> Iterator[Commit]:
    """Stream the commits of `rev`'s first-parent line, newest first, each with its raw changes.

    One `git log` process; its output is parsed as it arrives, so memory stays flat.
    Merges are diffed against their first parent.
    """
    args = [
        "git", *GIT_CONFIG, "log", "--first-parent", "--diff-merges=first-parent", "--no-renames", "--raw",
        "-z", "--no-abbrev", "--encoding=UTF-8", f"--format={_FORMAT}", *_window(since, until), rev, "--",
    ]  # fmt: skip
    with subprocess.Popen(
        args, cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=git_environment()
    ) as process:
        yield from _parse_log(process.stdout)
        stderr = process.stderr.read().decode("utf-8", "replace") if process.stderr else ""
        if process.wait() != 0:
            raise RepoSourceError(f"{repo}: git log {rev} failed: {stderr.strip()[:500]}")


def _parse_log(stream: IO[bytes], chunk_size: int = 1 << 20) -> Iterator[Commit]:
    """Commits from `git log -z --raw --format=_FORMAT` output, parsed as it arrives.

    Records start with NUL + 0x1E (git ends each field with NUL; no field but the
    sha begins with 0x1E in any real history, and the sha is checked).
    """
    pending = b""
    while True:
        chunk = stream.read(chunk_size)
        records = (pending + chunk).split(b"\0\x1e")
        pending = records.pop() if chunk else b""
        for record in records:
            if record:
                yield _parse_record(record)
        if not chunk:
            return


def _parse_record(record: bytes) -> Commit:
    fields = record.lstrip(b"\x1e").split(b"\0")
    if len(fields) < 7 or len(fields[0]) not in (40, 64):
        raise RepoSourceError(f"unexpected git log output near {record[:80]!r}")
    changes = []
    for meta, path in zip(fields[8:-1:2], fields[9::2], strict=False):  # ":modes blobs status", path
        entry = meta.decode().lstrip("\n")
        if entry.startswith(":"):
            old_mode, new_mode, old_blob, new_blob, status = entry[1:].split(" ")
            changes.append(
                RawChange(
                    status[:1],
                    old_mode,
                    new_mode,
                    old_blob,
                    new_blob,
                    path.decode("utf-8", "surrogateescape"),
                )
            )
    return Commit(
        fields[0].decode(),
        tuple(fields[1].decode().split()),
        fields[2].decode(),
        fields[3].decode("utf-8", "replace"),
        int(fields[4]),
        int(fields[5]),
        fields[6].decode("utf-8", "replace"),
        tuple(changes),
    )


@dataclass(frozen=True)
class GraphCommit:
    """A commit of the whole graph: enough to account for it, date a merged branch and check a merge."""

    parents: tuple[str, ...]
    tree: str
    authored_at: int


def start_list_commits(repo: str | os.PathLike[str], rev: str, since: str = "", until: str = "") -> GitJob:
    """Start listing every commit reachable from `rev` in the window; `parse_graph` reads the output."""
    return GitJob(repo, ["log", "--no-abbrev", "--format=%H %T %at %P", *_window(since, until), rev, "--"])


def parse_graph(output: bytes) -> dict[str, GraphCommit]:
    graph: dict[str, GraphCommit] = {}
    for line in output.decode("ascii").splitlines():
        sha, tree, authored, *parents = line.split(" ")
        graph[sha] = GraphCommit(tuple(parents), tree, int(authored))
    return graph


def list_commits(
    repo: str | os.PathLike[str], rev: str, since: str = "", until: str = ""
) -> dict[str, GraphCommit]:
    """Every commit reachable from `rev` in the window (all parents followed), newest first."""
    return parse_graph(start_list_commits(repo, rev, since, until).output()[1])


class PatchFetcher:
    """Patches of commits against their first parent (`git diff --binary -M` form), from one `git diff-tree --stdin`.

    `submit` feeds git while the caller is still walking the history; `stream`
    then yields `(commit, patch)` in order, as git writes them. git prints each
    commit's sha on a line of its own before its patch (`--always`: even before
    an empty one); a 40-hex line cannot occur inside a patch (every patch line
    starts with a marker, and base85 lines never have 40 characters), so the
    output is cut at those lines.
    """

    def __init__(self, repo: str | os.PathLike[str]) -> None:
        self._job = GitJob(repo, ["diff-tree", "--stdin", "--always", "-r", *_PATCH_OPTIONS], feed=True)
        self._commits: list[Commit] = []
        self._lines: list[str] = []

    def submit(self, commit: Commit) -> None:
        if not commit.parents:
            return
        self._commits.append(commit)
        self._lines.append(f"{commit.sha} {commit.parents[0]}\n")
        if len(self._lines) == 256:  # one write per batch: git starts early, the walk is not slowed
            self._send()

    def _send(self) -> None:
        stdin = self._job.process.stdin
        if stdin is not None and self._lines:
            stdin.write("".join(self._lines).encode())
            stdin.flush()
        self._lines.clear()

    def stream(self) -> Iterator[tuple[Commit, bytes]]:
        self._send()
        commits = self._commits
        buffer, start, searched, index = b"", 0, 0, -1  # buffer[start:] follows commits[index]'s header
        for chunk in self._job.follow():
            buffer, searched, start = buffer[start:] + chunk, max(0, searched - start), 0
            while index + 1 < len(commits):
                header = commits[index + 1].sha.encode() + b"\n"
                if buffer.startswith(header, start):  # the first header, or one right after an empty patch
                    cut, skip = start, start + len(header)
                else:
                    found = buffer.find(b"\n" + header, max(start, searched - len(header)))
                    if found == -1:
                        searched = len(buffer)
                        break
                    cut, skip = found + 1, found + 1 + len(header)
                if index >= 0:
                    yield commits[index], buffer[start:cut]
                start, searched, index = skip, skip, index + 1
        if index != len(commits) - 1:
            raise RepoSourceError(f"git diff-tree answered {index + 1} of {len(commits)} commits")
        if commits:
            yield commits[index], buffer[start:]

    def close(self) -> None:
        self._job.close()

    def __enter__(self) -> PatchFetcher:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def iter_patches(repo: str | os.PathLike[str], commits: Sequence[Commit]) -> Iterator[tuple[Commit, bytes]]:
    """Each commit's patch against its first parent, in order, as git writes them (see PatchFetcher)."""
    with PatchFetcher(repo) as fetcher:
        for commit in commits:
            fetcher.submit(commit)
        yield from fetcher.stream()


def fetch_patches(repo: str | os.PathLike[str], commits: Sequence[Commit]) -> dict[str, bytes]:
    """Each commit's patch against its first parent, keyed by sha."""
    return {commit.sha: patch for commit, patch in iter_patches(repo, commits)}


def start_diff_entries(repo: str | os.PathLike[str], pairs: Sequence[tuple[str, str]]) -> GitJob:
    """Start listing, for each (new, old) commit pair, what changed from old to new; see `parse_diff_entries`.

    One `git diff-tree --stdin --always` for all pairs; `--always` prints every
    pair's header even when nothing changed, so answers line up with the pairs.
    """
    stdin = "".join(f"{new} {old}\n" for new, old in pairs).encode()
    args = ["diff-tree", "--stdin", "--always", "-r", "--raw", "-z", "--no-renames", "--no-abbrev"]
    return GitJob(repo, args, stdin=stdin)


def parse_diff_entries(output: bytes, expected: int) -> list[dict[str, tuple[str, str]]]:
    """`{path: (new mode, new blob)}` per pair, from `start_diff_entries` output."""
    answers: list[dict[str, tuple[str, str]]] = []
    fields = output.split(b"\0")
    index = 0
    while index < len(fields):
        field = fields[index]
        if field.startswith(b":"):
            _, new_mode, _, new_blob, _ = field[1:].decode().split(" ")
            answers[-1][fields[index + 1].decode("utf-8", "surrogateescape")] = (new_mode, new_blob)
            index += 2
            continue
        if field.strip():
            answers.append({})  # a pair's header: the new commit's sha
        index += 1
    if len(answers) != expected:
        raise RepoSourceError(f"git diff-tree answered {len(answers)} of {expected} pairs")
    return answers


def diff_entries(
    repo: str | os.PathLike[str], pairs: Sequence[tuple[str, str]]
) -> list[dict[str, tuple[str, str]]]:
    """For each (new, old) commit pair, `{path: (new mode, new blob)}` of what changed from old to new."""
    if not pairs:
        return []
    return parse_diff_entries(start_diff_entries(repo, pairs).output()[1], len(pairs))


def start_merge_tree(repo: str | os.PathLike[str], merge: Commit) -> GitJob:
    """Start `git merge-tree --write-tree` on a two-parent merge's parents (no work tree, no index)."""
    return GitJob(repo, ["merge-tree", "--write-tree", "--no-messages", *merge.parents[:2]])


def merge_tree_differs(job: GitJob, merge: Commit) -> bool:
    """Whether the merge's tree differs from what the started merge-tree job computed.

    Exit 1 means conflicts; any other failure (a shallow clone without the merge
    base) fails closed: a merge git cannot recompute is not a clean task.
    """
    status, out = job.output(ok=range(256))
    return status != 0 or out.split(b"\n", 1)[0].strip().decode() != merge.tree


def merge_differs_from_automatic(repo: str | os.PathLike[str], merge: Commit) -> bool:
    """True when a two-parent merge's tree is not what git's automatic merge of its parents gives.

    That covers merges that had conflicts, merges edited by hand ("evil merges"),
    and, failing closed, merges git cannot recompute. Octopus merges are not
    checked: git's octopus strategy refuses conflicts, so only hand edits could
    slip through.
    """
    if len(merge.parents) != 2:
        return False
    return merge_tree_differs(start_merge_tree(repo, merge), merge)


def count_first_parent(repo: str | os.PathLike[str], rev: str, since: str = "", until: str = "") -> int:
    """How many commits `iter_first_parent` will yield (for a progress bar)."""
    return int(
        git(repo, "rev-list", "--first-parent", "--count", *_window(since, until), rev, "--").strip() or 0
    )
