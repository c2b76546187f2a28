"""Overlayfs upper layers read on the host: is one redundant, and its merged view as a tree of links.

An upper layer records what changed over its lowers: new and rewritten files, whiteouts (character
devices 0/0, or files marked with an overlay "whiteout" attribute) for removed entries, and "opaque"
folders that hide the lower's folder. Redirects and metacopy (off by default) are not replayed here:
`flatten` then declines and the caller keeps the overlay.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from repogym.sandbox.layerchanges import OVERLAY_XATTR_PREFIX


def flatten(upper: Path, lower: Path, tree: Path) -> bool:
    """Materialise `upper` over `lower` as a tree of hard links (both lie on the cache's filesystem), so
    episodes bind one folder instead of mounting an overlay under every command: every lookup through an
    overlay costs (a test run was 1.16x slower with the venv as an overlay). False (nothing made) when the
    upper uses overlay features this does not replay (redirects, metacopy)."""
    staging = tree.with_name(tree.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    _link_tree(lower, staging)
    for root, dirs, files in os.walk(upper):
        target = staging / Path(root).relative_to(upper)
        for name in dirs:
            source, destination = Path(root, name), target / name
            attributes = _overlay_attributes(source)
            if attributes - {"opaque"}:
                shutil.rmtree(staging)
                return False
            if "opaque" in attributes or not destination.is_dir() or destination.is_symlink():
                _remove(destination)
            if not destination.exists():
                destination.mkdir()
                _copy_owner_and_mode(source, destination)
        for name in files:
            source, destination = Path(root, name), target / name
            info = os.lstat(source)
            attributes = _overlay_attributes(source)
            if attributes - {"whiteout"}:
                shutil.rmtree(staging)
                return False
            _remove(destination)
            if (stat.S_ISCHR(info.st_mode) and info.st_rdev == 0) or "whiteout" in attributes:
                continue  # a whiteout: the lower's entry is gone
            if stat.S_ISLNK(info.st_mode):
                os.symlink(os.readlink(source), destination)
                os.lchown(destination, info.st_uid, info.st_gid)
            else:
                os.link(source, destination)
    os.rename(staging, tree)
    return True


def _link_tree(source: Path, destination: Path) -> None:
    destination.mkdir()
    _copy_owner_and_mode(source, destination)
    for entry in os.scandir(source):
        target = destination / entry.name
        if entry.is_dir(follow_symlinks=False):
            _link_tree(Path(entry.path), target)
        elif entry.is_symlink():
            os.symlink(os.readlink(entry.path), target)
            info = entry.stat(follow_symlinks=False)
            os.lchown(target, info.st_uid, info.st_gid)
        else:
            os.link(entry.path, target)


def _copy_owner_and_mode(source: Path, destination: Path) -> None:
    info = os.lstat(source)
    os.chmod(destination, stat.S_IMODE(info.st_mode))
    os.lchown(destination, info.st_uid, info.st_gid)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def only_rewrites(upper: Path, lower: Path) -> bool:
    """Whether an overlay upper holds nothing the lower does not: no whiteouts, every file byte-identical
    to the lower's, opaque folders only where the lower's holds nothing more. Left out: bytecode (a .pyc
    is checked against its own source's mtime, so the lower's pairs stay consistent) and uv's
    uv_cache.json (a build timestamp uv reads to decide whether to rebuild), with their RECORD lines."""
    for root, dirs, files in os.walk(upper):
        relative = Path(root).relative_to(upper)
        for name in dirs:
            path, twin = Path(root, name), lower / relative / name
            if not twin.is_dir() or path.is_symlink():
                return False
            attributes = _overlay_attributes(path)
            # An opaque folder (removed and made again, as an uninstall and install do) hides the lower's:
            # harmless to drop when the lower holds nothing the upper does not.
            if attributes - {"opaque"} or ("opaque" in attributes and not _covers(path, twin)):
                return False
        for name in files:
            path, twin = Path(root, name), lower / relative / name
            if _volatile(str(relative / name)):
                continue
            if path.is_symlink():
                if not twin.is_symlink() or os.readlink(path) != os.readlink(twin):
                    return False
            elif not path.is_file() or _overlay_attributes(path) or _content(path) != _content(twin):
                return False  # a whiteout (a character device), a metacopy, or new content
    return True


def _volatile(relative: str) -> bool:
    """Files that differ between two installs of the same thing.

    >>> _volatile("lib/python3.11/site-packages/__pycache__/x.cpython-311.pyc")
    True
    >>> _volatile("lib/python3.11/site-packages/hello-1.0.dist-info/uv_cache.json")
    True
    """
    return relative.endswith(".pyc") or relative.endswith(".dist-info/uv_cache.json")


def _content(path: Path) -> bytes | None:
    """A file's bytes (a RECORD without the lines of volatile files); None when it cannot be read."""
    try:
        if not path.is_file() or path.is_symlink():
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if path.name == "RECORD" and path.parent.name.endswith(".dist-info"):
        lines = data.splitlines()
        data = b"\n".join(
            line for line in lines if not _volatile(line.split(b",", 1)[0].decode(errors="replace"))
        )
    return data


#: overlayfs attributes that change what a merged view shows (origin / impure only speed up lookups).
_VIEW_ATTRIBUTES = frozenset({"opaque", "redirect", "metacopy", "whiteout", "whiteouts"})


def _overlay_attributes(path: Path) -> set[str]:
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:
        return set()
    prefix = OVERLAY_XATTR_PREFIX  # the kernel's own namespace for a root-mounted overlay; user.* is anyone's
    return {name[len(prefix) :] for name in names if name.startswith(prefix)} & _VIEW_ATTRIBUTES


def _covers(upper: Path, lower: Path) -> bool:
    """Every entry of `lower` (bytecode and uv_cache.json aside) is in `upper` too, folders recursively."""
    for entry in os.scandir(lower):
        twin = upper / entry.name
        if _volatile(entry.path):
            continue
        if not (twin.exists() or twin.is_symlink()):
            return False
        if entry.is_dir(follow_symlinks=False) and not _covers(twin, Path(entry.path)):
            return False
    return True
