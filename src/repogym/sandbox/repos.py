"""Repository mirrors: a task's repository (found by `repogym.reposource`) as a bare mirror in the cache.

Many checkouts share one mirror's objects; a mirror is created once (local
clones hardlink objects, so this is cheap) and fetched again only when a
commit it needs is missing.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from filelock import FileLock

from repogym.errors import RepoSourceError
from repogym.hostgit import git_bytes, run_git
from repogym.sandbox.cache import cache_dir


def mirror(source: str, commits: tuple[str, ...] = ()) -> Path:
    """A bare mirror of `source` in the cache that contains `commits` (fetched again if one is missing)."""
    key = hashlib.sha256(os.path.abspath(source).encode() if os.path.exists(source) else source.encode())
    path = cache_dir("mirrors") / f"{key.hexdigest()[:16]}.git"
    with FileLock(str(path) + ".lock"):
        if not (path / "HEAD").exists():
            tmp = path.with_suffix(".tmp")
            subprocess.run(["rm", "-rf", str(tmp)], check=False)
            git_bytes(None, "clone", "--mirror", "--quiet", source, str(tmp))
            _write_commit_graph(tmp)
            os.replace(tmp, path)
        _mirror_submodules(source, path)
        missing = [c for c in commits if not _has_commit(path, c)]
        if missing:
            git_bytes(path, "fetch", "--quiet", "--prune", source, "+refs/*:refs/*", check=False)
            _write_commit_graph(path)
            still = [c for c in missing if not _has_commit(path, c)]
            if still:
                raise RepoSourceError(
                    f"{source}: commit(s) {', '.join(c[:12] for c in still)} not found in the repository"
                )
    return path


def _write_commit_graph(path: Path) -> None:
    """Index the mirror's commits (0.4 s once on pytest's 27,904): every checkout walks its commit's
    history (its tags, its packs: sandbox/history.py), 5x faster with the graph. Only an optimisation."""
    git_bytes(path, "commit-graph", "write", "--reachable", check=False)


def _mirror_submodules(source: str, path: Path) -> None:
    """Copy a local source's submodule repositories (`.git/modules/NAME`, what `git clone
    --recurse-submodules` or `git submodule update --init` leaves) to `path/modules/NAME`, so checkouts
    get the submodules' files (a suite whose test data lives in a submodule, e.g. tomlkit's toml-test,
    cannot collect without them). Mirrored once; a source without submodule clones has nothing to copy."""
    root = Path(source)
    git_dir = root / ".git" if (root / ".git").is_dir() else root
    modules = git_dir / "modules"
    if not modules.is_dir():
        return
    for head in sorted(modules.rglob("HEAD")):
        module = head.parent
        if not (module / "objects").is_dir():
            continue
        name = module.relative_to(modules).as_posix()
        copy = path / "modules" / name
        if (copy / "HEAD").exists():
            continue
        copy.parent.mkdir(parents=True, exist_ok=True)
        tmp = copy.with_name(copy.name + ".tmp")
        subprocess.run(["rm", "-rf", str(tmp)], check=False)
        git_bytes(None, "clone", "--mirror", "--quiet", str(module), str(tmp))
        os.replace(tmp, copy)


#: (mirror, commit) pairs seen present. A commit found in a mirror stays there for the life of a process (its
#: objects could go only through a gc weeks after a fetch dropped their refs), so a process asks git once per
#: pair: a grade asks for its task's commit each time, a git process of 5-10 ms.
_present: set[tuple[str, str]] = set()


def _has_commit(repo: Path, commit: str) -> bool:
    if (str(repo), commit) in _present:
        return True
    result = run_git(repo, "cat-file", "-e", f"{commit}^{{commit}}")
    if result.returncode == 0:
        _present.add((str(repo), commit))
    return result.returncode == 0


def resolve_commit(mirror_path: Path, rev: str) -> str:
    return git_bytes(mirror_path, "rev-parse", "--verify", f"{rev}^{{commit}}").decode().strip()
