"""Read-only git the privacy stage needs: "would this patch apply" (git itself runs as `repogym.hostgit` runs it).

Nothing here touches a working tree or the repository's own index, so bare
repositories work and a user's checkout is never disturbed.
"""

from __future__ import annotations

import os
import tempfile

from repogym.hostgit import run_git


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
        checked = run_git(repo, "apply", "--cached", "--check", "-", input=patch.encode("utf-8"), env=env)
        return checked.returncode == 0
