"""What an episode changed, read from its overlayfs upper layer on the host, without running anything.

The upper layer of an episode is the kernel's own record of every path written through /testbed: new and
rewritten files, whiteouts for removed ones (character devices 0/0, or files carrying overlay's whiteout
attribute) and "opaque" folders that hide the lower's folder. Comparing each recorded path with what the
lowers hold gives exactly the paths whose content, link target, executable bit or existence differs from
the installed tree, the same set a `git add -A -f` + `git diff` of the whole working tree reports, at the
cost of the recorded paths only (pytest's repo: a few ms against 0.2-2.5 s for the whole-tree diff).

Guarantees: every path whose merged view differs from the lowers is listed, including files under a
folder that was removed or replaced (opaque folders, whiteouts, a file where a folder was), and files of
any name (ignored, hidden, dot-files). Only the attributes the kernel itself reads are believed: repogym
mounts its overlays as root, so overlayfs keeps its marks in `trusted.overlay.*`, which the unprivileged
jail can neither set nor forge; a `user.overlay.*` attribute the jail set (it could, before the seccomp
filter refused setxattr) is an ordinary attribute of an ordinary file here, as it is to the kernel.
Not covered: overlay redirects and metacopy (off by default; the kernel's `redirect_dir` / `metacopy`
parameters): `layer_changes` returns None when it meets either, and the caller falls back to a git diff.
Only the episode's /testbed is covered, as with the git diff.

`tree_changes` gives the same answer for two full trees (an episode's copy against the tree it was copied
from, where there is no overlayfs), at the cost of comparing every file of the same size. `Tree` reads the
merged view of layers the same way (grading/installcheck.py reads a re-installed venv with it).
"""

from __future__ import annotations

import enum
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path


class LayerChangeKind(enum.StrEnum):
    ADDED = "added"
    MODIFIED = "modified"
    REMOVED = "removed"


@dataclass(frozen=True)
class LayerChange:
    """One repository path whose merged view differs from the lowers'."""

    path: str
    """Relative to the repository root, '/'-separated."""
    kind: LayerChangeKind
    host_path: Path | None
    """The new entry in the upper layer (None when removed); read it without following links."""
    is_link: bool = False
    """The new entry is a symbolic link."""

    def new_text(self) -> str | None:
        """The new content as text (a link's target for a link); None when removed or not UTF-8."""
        if self.host_path is None:
            return None
        try:
            if self.is_link:
                return os.readlink(self.host_path)
            return read_entry(self.host_path).decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return None


#: overlayfs features whose effect on the merged view this module does not replay.
_NOT_REPLAYED = frozenset({"redirect", "metacopy"})


class UnreadableLayer(Exception):
    """The upper uses overlay features this module does not replay (redirects, metacopy)."""


def layer_changes(upper: Path, lowers: Sequence[Path]) -> list[LayerChange] | None:
    """Every path of `upper` over `lowers` (top first) whose merged view differs from the lowers' view;
    None when the upper holds redirects or metacopy entries (not replayed here)."""
    try:
        candidates = sorted(set(_candidates(upper, lowers)))
        changes = [_compare(path, upper, lowers) for path in candidates]
    except UnreadableLayer:
        return None
    return [change for change in changes if change is not None]


def _candidates(upper: Path, lowers: Sequence[Path]) -> Iterator[str]:
    """Paths that may differ: the upper's non-folder entries, and every lower entry beneath anything of the
    upper that hides a lower folder (an opaque folder, a whiteout, a file or link in a folder's place)."""
    for root, dirs, files in os.walk(upper):
        relative = os.path.relpath(root, upper)
        prefix = "" if relative == "." else relative + "/"
        for name in dirs:
            attributes = _overlay_attributes(os.path.join(root, name))
            if attributes & _NOT_REPLAYED:
                raise UnreadableLayer(f"{prefix}{name}: {sorted(attributes)}")
            if "opaque" in attributes:
                yield from _lower_entries(prefix + name, lowers)
            yield prefix + name  # a folder where the lowers had a file removes that file
        for name in files:
            if _overlay_attributes(os.path.join(root, name)) & _NOT_REPLAYED:
                raise UnreadableLayer(f"{prefix}{name}")
            yield prefix + name
            yield from _lower_entries(prefix + name, lowers)


def _lower_entries(path: str, lowers: Sequence[Path]) -> Iterator[str]:
    """Every non-folder entry under `path` in any of the lowers (whether or not it is visible there)."""
    for lower in lowers:
        top = lower / path
        if not top.is_dir() or top.is_symlink():
            continue
        for root, _dirs, files in os.walk(top):
            relative = os.path.relpath(root, lower)
            for name in files:
                yield f"{relative}/{name}"


def tree_changes(new_root: Path, old_root: Path) -> list[LayerChange]:
    """Every path whose entry in the full tree `new_root` differs from the full tree `old_root` (content, link
    target, executable bit or existence; a folder counts by its files), as `layer_changes` reports them for
    an overlay. Links are compared, never followed. Raises OSError where a folder cannot be listed (a jail
    that is not root may leave one so): what cannot be seen cannot be judged unchanged."""
    paths = sorted(set(_entries(new_root)) | set(_entries(old_root)))
    changes = [_difference(path, lookup(path, [new_root]), lookup(path, [old_root])) for path in paths]
    return [change for change in changes if change is not None]


def _entries(root: Path) -> Iterator[str]:
    """Every non-folder entry under `root`, links to folders included (os.walk lists them as folders)."""
    for folder, dirs, files in os.walk(root, onerror=_raise):
        relative = os.path.relpath(folder, root)
        prefix = "" if relative == "." else relative + "/"
        yield from (prefix + name for name in files)
        yield from (prefix + name for name in dirs if os.path.islink(os.path.join(folder, name)))


def _raise(error: OSError) -> None:
    raise error


def _compare(path: str, upper: Path, lowers: Sequence[Path]) -> LayerChange | None:
    return _difference(path, lookup(path, [upper, *lowers]), lookup(path, lowers))


def _difference(path: str, new: Path | None, old: Path | None) -> LayerChange | None:
    """How the entry at `path` changed from `old` to `new` (host entries, None where there is none)."""
    new_kind, old_kind = _kind(new), _kind(old)
    if new_kind == "dir":
        new, new_kind = None, "none"  # git tracks no folders: a folder is its files, each a candidate
    if old_kind == "dir":
        old, old_kind = None, "none"
    if new_kind == old_kind == "none":
        return None
    if new_kind == "none":
        return LayerChange(path, LayerChangeKind.REMOVED, None)
    assert new is not None
    change = LayerChange(
        path,
        LayerChangeKind.ADDED if old_kind == "none" else LayerChangeKind.MODIFIED,
        new,
        is_link=new_kind == "link",
    )
    if old is None or new_kind != old_kind or new_kind == "other":
        return change  # a FIFO or device is reported whatever it was: nothing to compare
    if new_kind == "link":
        return None if os.readlink(new) == os.readlink(old) else change
    same_exec = _executable(new) == _executable(old)
    return None if same_exec and _same_bytes(new, old) else change


def lookup(path: str, layers: Sequence[Path]) -> Path | None:
    """The host entry that an overlay of `layers` (top first) shows at `path`; None when it shows none.

    >>> import tempfile; top, low = Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp())
    >>> (low / "pkg").mkdir(); _ = (low / "pkg" / "a.py").write_text("a")
    >>> lookup("pkg/a.py", [top, low]) == low / "pkg" / "a.py"
    True
    >>> os.mknod(top / "pkg", stat.S_IFCHR | 0o600, 0) if os.geteuid() == 0 else (top / "pkg").symlink_to("x")
    >>> lookup("pkg/a.py", [top, low]) is None
    True
    """
    parts = path.split("/")
    for layer in layers:
        # Strings, not Paths, while walking down: a grade looks up every changed path in every layer at its
        # checkpoint, with the jail waiting, and pathlib's joins were most of that time.
        current = os.fspath(layer)
        opaque_above = False
        for index, part in enumerate(parts):
            current = f"{current}/{part}"
            try:
                info = os.lstat(current)
            except FileNotFoundError:
                break  # not in this layer: a lower one may have it, unless a folder above hides them
            except NotADirectoryError:
                return None
            if _is_whiteout(current, info):
                return None
            if index == len(parts) - 1:
                return Path(current)
            if not stat.S_ISDIR(info.st_mode):
                return None  # a file or link in this layer hides the lowers' folder
            opaque_above = opaque_above or "opaque" in _overlay_attributes(current)
        if opaque_above:
            return None
    return None


def _kind(entry: Path | None) -> str:
    if entry is None:
        return "none"
    mode = os.lstat(entry).st_mode
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISDIR(mode):
        return "dir"
    return "file" if stat.S_ISREG(mode) else "other"


def _executable(entry: Path) -> bool:
    return bool(os.lstat(entry).st_mode & stat.S_IXUSR)


def _same_bytes(first: Path, second: Path) -> bool:
    one, two = os.lstat(first), os.lstat(second)
    if (one.st_dev, one.st_ino) == (two.st_dev, two.st_ino):
        return True
    if one.st_size != two.st_size:
        return False
    try:
        return read_entry(first) == read_entry(second)
    except OSError:  # unreadable (a mode the jail set, where it is not root): not known to be the same
        return False


def read_entry(entry: Path, limit: int | None = None) -> bytes:
    """A regular file's bytes, never through a link (O_NOFOLLOW) and never blocking on a FIFO; OSError when
    `entry` is no regular file or holds more than `limit` bytes. The folders above it are the caller's to
    trust (`lookup` returns no entry beneath a link)."""
    fd = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{entry} is not a regular file")
        if limit is not None and info.st_size > limit:
            raise OSError(f"{entry} holds {info.st_size} bytes, more than {limit}")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read()
    finally:
        os.close(fd)


def _is_whiteout(entry: str | Path, info: os.stat_result) -> bool:
    if stat.S_ISCHR(info.st_mode) and info.st_rdev == 0:
        return True
    return stat.S_ISREG(info.st_mode) and "whiteout" in _overlay_attributes(entry)


#: Where overlayfs keeps its marks on an overlay mounted by real root, as repogym's are (bwrap.py). Not
#: `user.overlay.*`: the kernel reads that namespace only on a `userxattr` mount (one made in a user namespace),
#: and any process may set it, so believing it let the jail fake a redirect and force the slow fallback.
OVERLAY_XATTR_PREFIX = "trusted.overlay."


def _overlay_attributes(entry: str | Path) -> set[str]:
    """overlayfs's own attributes of `entry` (the names after `trusted.overlay.`)."""
    try:
        names = os.listxattr(entry, follow_symlinks=False)
    except OSError:
        return set()
    return {name[len(OVERLAY_XATTR_PREFIX) :] for name in names if name.startswith(OVERLAY_XATTR_PREFIX)}


@dataclass(frozen=True)
class Tree:
    """A folder as an overlay of `layers` (top first) shows it, read on the host without following a link:
    the merged view of a layer a jail wrote, without mounting it. A full tree is one layer."""

    layers: tuple[Path, ...]
    read_limit: int = 16 * 1024 * 1024
    """Files larger than this read as unreadable (None): nothing the jail wrote can fill the host's memory."""

    def entry(self, path: str) -> Path | None:
        return lookup(path, self.layers) if path else None

    def read(self, path: str) -> bytes | None:
        """A regular file's bytes (None when it is missing, no regular file, or too large)."""
        entry = self.entry(path)
        try:
            return read_entry(entry, self.read_limit) if entry is not None else None
        except OSError:
            return None

    def text(self, path: str) -> str | None:
        """A regular file's text (None where `read` gives None, or it is not UTF-8)."""
        data = self.read(path)
        try:
            return data.decode("utf-8") if data is not None else None
        except UnicodeDecodeError:
            return None

    def names(self, folder: str) -> list[str]:
        """What the folder ('' for the top) shows, sorted; [] when it is no folder."""
        found: set[str] = set()
        for layer in self.layers:
            here = lookup(folder, [layer]) if folder else layer
            if here is not None and stat.S_ISDIR(os.lstat(here).st_mode):
                found.update(os.listdir(here))  # beneath no link: `lookup` returns no entry beneath one
        # What one layer holds may be hidden by one above it (a whiteout, an opaque folder, a file in its place).
        return sorted(
            name for name in found if self.entry(f"{folder}/{name}" if folder else name) is not None
        )

    def is_dir(self, path: str) -> bool:
        entry = self.entry(path)
        return entry is not None and stat.S_ISDIR(os.lstat(entry).st_mode)
