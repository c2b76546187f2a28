"""Is a task's fix reachable from an agent's episode? A search for it from inside the jail, as an agent would.

Two things are looked for:

- Git objects the base commit cannot reach, in every repository under /testbed: commits reachable from a ref but
  not from HEAD (`git rev-list --all --not HEAD`), any object `git fsck --unreachable` lists (a dangling commit,
  the clean blob of a synthetic task's file), and the fix commit itself where a mined task records it. The episode's
  history up to its base commit is allowed: a fix that restores a line the history once had is not a leak.
- The fix's text in every readable file the episode is given (/testbed's working tree, the environment, /tmp, the
  home folder, repogym's jail folders): first the lines the gold patch adds that occur nowhere in the base
  commit's files (a fast grep), then, in the files holding one, the added line with its neighbours in the fixed
  file (so `return a + b` in a vendored library does not count; a newer release of the project in site-packages
  does).

Not searched: the host's /usr and the interpreter installation, which every task shares and no task writes (scanning
them would cost seconds per task); a task whose project is installed system-wide there is out of this audit's reach.
A fix with no distinctive line (every added line also exists elsewhere in the base tree) is found only through git;
the result says so (`lines_searched == 0`).
"""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from repogym.patches import changed_paths, parse_patch
from repogym.sandbox.base import VENV_DIR
from repogym.sandbox.runtime import Episode, TaskRuntime
from repogym.task import Task
from repogym.taskmeta import MiningRecord

#: Added lines shorter than this (stripped) are too common to tell the fix apart (`return x`, `pass`, `}`).
MIN_LINE_CHARS = 12
#: Where the fix's text is searched in the jail, besides every repository's git objects.
SCANNED = ("/testbed", "/tmp", "/opt/repogym")  # the environment is under /opt/repogym

# Run by the environment's interpreter (Python 2.7 or 3): which of the files named on stdin hold one of the blocks
# (argv[1], separated by NUL lines), compared line by line with whitespace and blank lines ignored.
_BLOCK_CHECK = """
import sys
blocks = [b for b in open(sys.argv[1], "rb").read().decode("utf-8").split("\\n\\x00\\n") if b]
def norm(text):
    return "\\n".join(line.strip() for line in text.splitlines() if line.strip())
for path in sys.stdin.read().splitlines():
    try:
        text = norm(open(path, "rb").read().decode("utf-8", "replace"))
    except Exception:
        continue
    if any(block in text for block in blocks):
        print("HIT file " + path)
"""


@dataclass(frozen=True)
class Reach:
    """What an episode of one task shows of its fix."""

    lines_searched: int
    """How many distinctive lines of the fix were looked for in files."""
    fix_commit: str
    """The fix commit looked for ('' when the task records none)."""
    future_commits: tuple[str, ...] = ()
    """Commits the episode's git holds that HEAD does not reach."""
    hits: tuple[str, ...] = ()
    """Where the fix showed: 'commit-object .git', 'unreachable blob SHA in .git', 'file /path'."""
    error: str = ""
    """Why the search could not run ('' when it ran)."""

    @property
    def reachable(self) -> bool:
        return bool(self.future_commits or self.hits or self.error)


def _added(task: Task) -> list[tuple[str, str]]:
    """(an added line, stripped; the block of it and its non-blank neighbours in the fixed file) per added line."""
    found: list[tuple[str, str]] = []
    for patched in parse_patch(task.patch) or []:
        for hunk in patched:
            after = [(line.value.strip(), line.is_added) for line in hunk if not line.is_removed]
            after = [(text, added) for text, added in after if text]
            for index, (text, added) in enumerate(after):
                if added and len(text) >= MIN_LINE_CHARS:
                    block = [entry[0] for entry in after[max(0, index - 1) : index + 2]]
                    found.append((text, "\n".join(block)))
    return found


def distinctive(task: Task, pristine: Path) -> tuple[list[str], list[str]]:
    """(the added lines that occur nowhere in the base commit's files, their blocks)."""
    added = _added(task)
    if not added:
        return [], []
    lines = sorted({text for text, _ in added})
    in_base = subprocess.run(
        ["grep", "-r", "-a", "-F", "-o", "-h", "--exclude-dir=.git", "-f", "-", str(pristine)],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        errors="replace",
        check=False,
    ).stdout.splitlines()
    kept = [line for line in lines if line not in set(in_base)]
    blocks = sorted({block for text, block in added if text in kept})
    return kept, blocks


def _script(patterns: str | None, blocks: str | None, fix_commit: str) -> str:
    """The search, as a POSIX shell script for the jail (git and grep are the host's, read-only)."""
    roots = " ".join(shlex.quote(root) for root in SCANNED)
    lines = [
        "for g in $(find /testbed -name .git 2>/dev/null); do",
        '  git --git-dir="$g" rev-list --all --not HEAD 2>/dev/null | sed "s|^|FUTURE $g |"',
        '  git --git-dir="$g" fsck --unreachable --no-reflogs --no-progress 2>/dev/null'
        ' | awk -v g="$g" \'$1 == "unreachable" {print "HIT unreachable " $2 " " $3 " in " g}\'',
    ]
    if fix_commit:
        lines.append(
            f'  git --git-dir="$g" cat-file -e {shlex.quote(fix_commit)} 2>/dev/null && echo "HIT commit-object $g"'
        )
    lines.append("done")
    if patterns and blocks:
        # The inbox holding the patterns is left out: it is repogym's, read-only, and emptied before any grade.
        lines.append(
            f"grep -r -a -F -l -f {patterns} {roots} 2>/dev/null | grep -v '^/opt/repogym/in/'"
            f" | {VENV_DIR}/bin/python -c {shlex.quote(_BLOCK_CHECK)} {blocks}"
        )
    lines.append("echo SEARCH-DONE")
    return "\n".join(lines) + "\n"


def search(runtime: TaskRuntime, task: Task) -> Reach:
    """Look for the fix from a fresh agent episode of `runtime` (prepared)."""
    with runtime.episode() as episode:
        return search_episode(episode, task)


def search_episode(episode: Episode, task: Task) -> Reach:
    """Look for the fix from `episode` as it is now (an agent's episode: its own .git, writable)."""
    pristine = episode.runtime.pristine
    assert pristine is not None, "prepare() the runtime first"
    lines, blocks = distinctive(task, pristine)
    fix_commit = MiningRecord.of(task).commit
    patterns = episode.put_file("audit-patterns.txt", "\n".join(lines) + "\n") if lines else None
    block_file = episode.put_file("audit-blocks.txt", "\n\x00\n".join(blocks)) if blocks else None
    script = episode.put_file("audit-search.sh", _script(patterns, block_file, fix_commit))
    result = episode.run(f"sh {script}")
    output = result.output.splitlines()
    if "SEARCH-DONE" not in output:
        return Reach(len(lines), fix_commit, error=f"the search did not finish ({result.reason.value})")
    future = tuple(dict.fromkeys(line.split()[-1] for line in output if line.startswith("FUTURE ")))
    hits = tuple(dict.fromkeys(line[len("HIT ") :] for line in output if line.startswith("HIT ")))
    return Reach(len(lines), fix_commit, future, hits)


def future_diffs(runtime: TaskRuntime, task: Task, commits: tuple[str, ...], limit: int = 3) -> list[str]:
    """The diffs from HEAD to up to `limit` future commits, over the files the gold patch changes: what an agent
    that read history would submit."""
    paths = " ".join(shlex.quote(path) for path in changed_paths(task.patch))
    diffs: list[str] = []
    with runtime.episode() as episode:
        for commit in commits[:limit]:
            result = episode.run(f"git diff --binary HEAD {shlex.quote(commit)} -- {paths} 2>/dev/null")
            if result.ok and result.output.strip():
                diffs.append(result.output if result.output.endswith("\n") else result.output + "\n")
    return diffs
