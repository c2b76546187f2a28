"""The repository a synthetic task set lives in: the source's history once, and two small commits per bug.

Per bug, one `git fast-import` stream (for the whole batch) writes:

- `refs/repogym/synth/<id>`: the bug as a commit on top of REV (the clean commit), the record of what was
  injected where; `synth combine` stacks bugs from these;
- `refs/repogym/task/<id>`: the same tree as a parentless commit, the task's `base_commit`. An episode's
  `git log` / `git diff HEAD~1` would otherwise hand the solver the injected diff, which is the answer.

Authors, dates and messages are fixed, so the same bug always gets the same two shas: a re-run after an
interruption rewrites the same refs and adds nothing. Only the changed blob and trees are new objects; the
content-addressed checkout store (repogym.sandbox.workspace) shares every other file with REV's checkout.

The objects of REV (and of every other bug of the set) stay in this repository, which no episode sees: a
checkout's .git holds only what its base commit reaches (repogym.sandbox.history), here the parentless
commit's own tree (tests/sandbox/test_hostile_history.py scans a synthetic task's episode for the clean line).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from repogym.errors import RepoSourceError
from repogym.hostgit import git, run_git

_SIGNATURE = "repogym-synth <synth@repogym.invalid> 946684800 +0000"
_TASK_MESSAGE = "repogym task\n"


@dataclass(frozen=True)
class BugCommit:
    """What fast-import is asked to write for one bug."""

    instance_id: str
    parent: str
    """The commit the bug sits on (REV, or a combined bug's first part)."""
    files: dict[str, str]
    """Path -> buggy text of every changed file."""
    message: str


@dataclass(frozen=True)
class Written:
    bug_commit: str
    base_commit: str


class TaskRepo:
    """A bare repository beside the task files, holding the source's history and the bugs."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def ensure(self, source: Path, rev: str) -> None:
        """Create the repository (first use) and fetch `rev` from `source` when it lacks it."""
        with FileLock(str(self.path) + ".lock"):
            if not (self.path / "HEAD").exists():
                self.path.parent.mkdir(parents=True, exist_ok=True)
                git(self.path.parent, "init", "--quiet", "--bare", str(self.path))
            if not self.has(rev):
                # Local fetches hardlink nothing but copy only what is missing: the history once per task set.
                git(
                    self.path,
                    "fetch",
                    "--quiet",
                    "--no-tags",
                    str(source),
                    f"+{rev}:refs/repogym/clean/{rev}",
                )
            if not self.has(rev):
                raise RepoSourceError(f"{source}: commit {rev[:12]} could not be fetched into {self.path}")

    def has(self, commit: str) -> bool:
        return run_git(self.path, "cat-file", "-e", f"{commit}^{{commit}}").returncode == 0

    def tree_files(self, commit: str) -> dict[str, str]:
        """Path -> mode of every blob in `commit`."""
        listing = git(self.path, "ls-tree", "-r", "-z", "--full-tree", commit)
        files = {}
        for entry in listing.split("\0"):
            if entry:
                meta, path = entry.split("\t", 1)
                mode, kind, _ = meta.split(" ")
                if kind == "blob":
                    files[path] = mode
        return files

    def read(self, commit: str, path: str) -> str:
        return git(self.path, "show", f"{commit}:{path}")

    def write(self, bugs: list[BugCommit]) -> dict[str, Written]:
        """Write each bug's two commits in one fast-import run; returns their shas by instance id."""
        if not bugs:
            return {}
        modes: dict[str, dict[str, str]] = {}
        stream: list[bytes] = []
        mark = 0
        for bug in bugs:
            if bug.parent not in modes:
                modes[bug.parent] = self.tree_files(bug.parent)
            tree = git(self.path, "rev-parse", f"{bug.parent}^{{tree}}").strip()
            blobs = {}
            for path, text in sorted(bug.files.items()):
                mark += 1
                blobs[path] = mark
                stream += [b"blob\n", b"mark :%d\n" % mark, _data(text)]
            changes = [
                f"M {modes[bug.parent].get(path, '100644')} :{blob} {_quote(path)}\n".encode()
                for path, blob in blobs.items()
            ]
            stream += [
                f"commit refs/repogym/synth/{bug.instance_id}\n".encode(),
                f"committer {_SIGNATURE}\n".encode(),
                _data(bug.message),
                f"from {bug.parent}\n".encode(),
                *changes,
                b"\n",
                f"commit refs/repogym/task/{bug.instance_id}\n".encode(),
                f"committer {_SIGNATURE}\n".encode(),
                _data(_TASK_MESSAGE),
                f'M 040000 {tree} ""\n'.encode(),  # start from the parent's whole tree, with no parent commit
                *changes,
                b"\n",
            ]
        with FileLock(str(self.path) + ".lock"):
            done = run_git(self.path, "fast-import", "--quiet", "--force", input=b"".join(stream))
        if done.returncode != 0:
            raise RepoSourceError(
                f"{self.path}: git fast-import failed: {done.stderr.decode(errors='replace')[-800:]}"
            )
        return self._shas([bug.instance_id for bug in bugs])

    def _shas(self, ids: list[str]) -> dict[str, Written]:
        listing = git(
            self.path,
            "for-each-ref",
            "--format=%(objectname) %(refname)",
            "refs/repogym/synth/",
            "refs/repogym/task/",
        )
        refs = dict(reversed(line.split(" ", 1)) for line in listing.splitlines() if line)
        return {
            iid: Written(refs[f"refs/repogym/synth/{iid}"], refs[f"refs/repogym/task/{iid}"]) for iid in ids
        }


def _data(text: str) -> bytes:
    encoded = text.encode("utf-8", errors="surrogateescape")
    return b"data %d\n" % len(encoded) + encoded + b"\n"


def _quote(path: str) -> str:
    """fast-import's path syntax: C-style quotes when the path has a space, quote or newline."""
    if any(c in path for c in ' "\n\\') or path.startswith('"'):
        escaped = path.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return f'"{escaped}"'
    return path
