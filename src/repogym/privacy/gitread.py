"""Read-only git calls the privacy stage needs: trees and blobs at a commit, and "would this patch apply".

Nothing here touches a working tree or the repository's own index, so bare
repositories work and a user's checkout is never disturbed.
"""

from __future__ import annotations

import os
import subprocess
import tempfile


def run_git(
    repo: str, *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """`git -C repo args...`, output captured, with the caller's GIT_DIR / GIT_INDEX_FILE ignored."""
    clean = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE")}
    clean.update({"GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C", **(env or {})})
    return subprocess.run(
        ["git", "-C", repo, *args], input=stdin, capture_output=True, env=clean, check=False
    )


def applies_at(repo: str, commit: str, patch: str) -> bool | None:
    """Whether `patch` applies to the tree of `commit`; None when that cannot be checked (no repo, no commit).

    Uses a throwaway index (`git read-tree` + `git apply --cached --check`),
    so it works on bare repositories. git's messages are discarded: they can
    quote the patch.
    """
    if not patch.strip():
        return True
    if not repo or not commit or not os.path.isdir(repo):
        return None
    with tempfile.TemporaryDirectory(prefix="repogym-apply-") as scratch:
        env = {"GIT_INDEX_FILE": os.path.join(scratch, "index")}
        if run_git(repo, "read-tree", commit, env=env).returncode != 0:
            return None
        checked = run_git(repo, "apply", "--cached", "--check", "-", stdin=patch.encode("utf-8"), env=env)
        return checked.returncode == 0
