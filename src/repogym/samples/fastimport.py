"""Write a planned history into a new git repository with one `git fast-import` run.

Every author, committer, date and time zone is in the stream, and git runs
as `repogym.hostgit` runs it with the user's configuration switched off too, so
the same plan always gives the same commit shas. Three git processes per
repository in all (init, fast-import, checkout), whatever the history's length.
"""

from __future__ import annotations

import os
from pathlib import Path

from repogym.errors import ConfigError
from repogym.hostgit import git
from repogym.samples.plan import Plan, PlannedCommit

NULL_SHA = "0" * 40


#: Not even the user's git configuration (init.defaultBranch, core.autocrlf, ...) may touch a sample's history.
_NO_USER_CONFIG = {"GIT_CONFIG_GLOBAL": os.devnull}


def _data(payload: str) -> bytes:
    encoded = payload.encode("utf-8")
    return b"data %d\n" % len(encoded) + encoded + b"\n"


def _commit_block(
    commit: PlannedCommit, mark: int, marks: dict[str, int], parent_files: dict[str, str]
) -> bytes:
    message = commit.message if commit.message.endswith("\n") else commit.message + "\n"
    out = [
        f"commit refs/heads/{commit.ref}\nmark :{mark}\n".encode(),
        f"author {commit.author.signature(commit.when)}\n".encode(),
        f"committer {commit.committer.signature(commit.when)}\n".encode(),
        _data(message),
    ]
    if commit.parents:
        out.append(f"from :{marks[commit.parents[0]]}\n".encode())
        out += [f"merge :{marks[parent]}\n".encode() for parent in commit.parents[1:]]
    # The tree starts as the first parent's: write what differs from it.
    for path in sorted(set(parent_files) - set(commit.files)):
        out.append(f"D {path}\n".encode())
    for path, text in sorted(commit.files.items()):
        if parent_files.get(path) != text:
            out.append(f"M 100644 inline {path}\n".encode() + _data(text))
    out.append(b"\n")
    if commit.tag:
        out.append(f"reset refs/tags/{commit.tag}\nfrom :{mark}\n\n".encode())
    return b"".join(out)


def fast_import_stream(plan: Plan) -> bytes:
    """The fast-import stream of the whole plan; PR branches are deleted at the end, as after a merge on GitHub."""
    marks: dict[str, int] = {}
    trees: dict[str, dict[str, str]] = {}
    blocks = []
    for number, commit in enumerate(plan.commits, start=1):
        parent_files = trees[commit.parents[0]] if commit.parents else {}
        blocks.append(_commit_block(commit, number, marks, parent_files))
        marks[commit.key] = number
        trees[commit.key] = commit.files
    blocks += [f"reset refs/heads/{branch}\nfrom {NULL_SHA}\n\n".encode() for branch in plan.branches]
    return b"".join(blocks)


def write_repository(path: Path, plan: Plan, branch: str = "main") -> dict[str, str]:
    """Create the repository at `path` (absent or empty) and check out `branch`; returns planner key -> sha."""
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise ConfigError(f"sample repo path {path}: exists and is not an empty directory")
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "--quiet", f"--initial-branch={branch}", env=_NO_USER_CONFIG)
    # Absolute: git runs fast-import inside the new repository, where a relative path means something else.
    marks_file = path.resolve() / ".git" / "repogym-marks"
    git(
        path,
        "fast-import",
        "--quiet",
        "--date-format=raw",
        f"--export-marks={marks_file}",
        input=fast_import_stream(plan),
        env=_NO_USER_CONFIG,
    )
    by_mark = dict(line.split() for line in marks_file.read_text().splitlines())
    marks_file.unlink()
    git(path, "reset", "--quiet", "--hard", branch, env=_NO_USER_CONFIG)
    return {commit.key: by_mark[f":{number}"] for number, commit in enumerate(plan.commits, start=1)}
