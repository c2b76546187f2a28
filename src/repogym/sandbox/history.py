"""A checkout's git history and nothing after it: per mirror, a store of immutable packs, one per commit.

An episode's `.git` is what an agent can search. If it borrowed the mirror's objects (as it once did,
through an alternates file), `git cat-file --batch-all-objects` would list the commit that fixes a
mined task, and every blob of the mirror would include a synthetic task's clean file. So a checkout of
commit C gets its own object store: packs of this module, hard-linked into `.git/objects/pack`.

The store of a mirror (`cache_dir("history")/<mirror key>`) holds packs that are never changed, each
recorded in `packs.tsv` with its tip commit, the annotated tags it holds and its base: the stored tips
it was built over (ancestors of its tip). A pack holds the objects reachable from its tip (and its
tags) that its base does not reach, so a tip's pack and, recursively, its base's packs hold exactly
what the tip reaches. For C: its base is the newest stored commits of its past (`git merge-base
--independent` of the stored tips that C reaches), and one new pack of `rev-list --objects C <tags>
--not <base>` completes it: on pytest's history (27,904 commits) 0.6 s and 1 MB for a commit a month
after a stored one, where a commit with no stored ancestor gets a full pack (16-23 MB in 0.7-0.9 s).

Guarantees:
- The packs `link_history` links hold every object reachable from the commit and the tag objects asked
  for, and no other object: nothing a later commit, another branch or another task's commit added.
- Packs are self-contained (never thin): each one can be read alone.
- A shallow mirror's boundary commits that the commit reaches are returned, for the checkout's
  `.git/shallow`.
- One writer per mirror store (a file lock); a record is written only after its pack is in place,
  and a store whose recorded pack has gone is started afresh, never used incomplete.

Not guaranteed:
- Few packs: a checkout links one pack per stored commit in the chain below it, up to `_MAX_PACKS`,
  past which it gets a full pack (the checkout's git config turns automatic gc off: a `git commit` in
  an episode would otherwise repack them all).
- Small disk use: objects can repeat across packs (each commit with no stored ancestor gets a full
  pack, and every new pack repeats whatever its base's packs hold but `rev-list --not` did not mark).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from repogym.errors import RepoSourceError
from repogym.hostgit import git_bytes
from repogym.sandbox.cache import cache_dir

_INDEX = "packs.tsv"
_SUFFIXES = (".pack", ".idx", ".rev")
#: A checkout links at most about this many packs: past it, a commit gets one full pack (16-23 MB and
#: about 1 s on pytest's history) and the commits after it build on that.
_MAX_PACKS = 32


@dataclass(frozen=True)
class PackRecord:
    """One stored pack: what it was made for."""

    tip: str
    """The commit it completes (every object it holds is reachable from it, or one of `tags`)."""
    name: str
    """`pack-<sha>`: the file names without their suffixes."""
    tags: frozenset[str]
    """The annotated tag objects it holds."""
    base: frozenset[str]
    """The recorded tips whose objects it left out (ancestors of `tip`; none: a full pack)."""


@dataclass(frozen=True)
class TagRef:
    """A tag of the mirror on a commit the checkout's commit reaches."""

    name: str
    """The full ref name, `refs/tags/...`."""
    sha: str
    """What the ref names: a tag object (annotated), or the commit itself (lightweight)."""
    annotated: bool


@dataclass(frozen=True)
class LinkedHistory:
    """What `link_history` put in a checkout."""

    packs: tuple[str, ...]
    """The names of the packs linked, the new one (if any) included."""
    built: str | None
    """The pack made for this call (None: the store already held the commit and its tags)."""
    tags: tuple[TagRef, ...]
    """The tags of the commit's past, for the checkout's `.git/packed-refs` (the packs hold their objects)."""
    shallow: tuple[str, ...]
    """A shallow mirror's boundary commits that the commit reaches (for `.git/shallow`)."""


def history_store(mirror_path: Path) -> Path:
    """The folder holding `mirror_path`'s packs (never bound into a jail: checkouts get hard links)."""
    key = hashlib.sha256(str(mirror_path.resolve()).encode()).hexdigest()[:16]
    return cache_dir("history") / key


def past_tags(mirror_path: Path, commit: str) -> tuple[TagRef, ...]:
    """The mirror's tags that `commit` contains, so that `git describe` (setuptools_scm, versioneer) sees
    the version the commit was released under, as in a full clone; pytest's own repo, for one, refuses to
    run its tests as version 0.1.dev. Tags of later commits are left out: they would name the future fix."""
    listing = git_bytes(
        mirror_path, "for-each-ref", "--merged", commit, "--format=%(objectname) %(objecttype) %(refname)",
        "refs/tags",
    )  # fmt: skip
    refs = [line.split(" ", 2) for line in listing.decode().splitlines() if line.count(" ") >= 2]
    return tuple(TagRef(name, sha, kind == "tag") for sha, kind, name in refs)


def link_history(mirror_path: Path, commit: str, pack_dir: Path) -> LinkedHistory:
    """Hard-link into `pack_dir` the packs that hold exactly the objects reachable from `commit` plus the
    annotated tag objects of its past (`past_tags`), making the missing pack first."""
    refs = past_tags(mirror_path, commit)
    tags = [ref.sha for ref in refs if ref.annotated]
    store = history_store(mirror_path)
    with FileLock(str(store) + ".lock"):
        store.mkdir(exist_ok=True)
        records = _load(store)
        by_tip: dict[str, list[PackRecord]] = {}
        for record in records:
            by_tip.setdefault(record.tip, []).append(record)
        past = _ancestors_among(mirror_path, commit, set(by_tip))
        # The newest stored commits of its past: their packs and those they stand on hold all the rest.
        base = _independent(mirror_path, past)
        needed = _closure(base, by_tip)
        held: set[str] = set().union(*(record.tags for record in needed))
        missing_tags = sorted(set(tags) - held)
        built = None
        if commit not in base or missing_tags:
            if len(needed) >= _MAX_PACKS:
                # One full pack instead of a longer chain: the commits after it build on it.
                base, needed, missing_tags = set(), [], sorted(set(tags))
            built = _build_pack(mirror_path, store, [commit, *missing_tags], base)
            record = PackRecord(commit, built, frozenset(missing_tags), frozenset(base))
            _save(store, [*records, record])
            needed.append(record)
        names = tuple(dict.fromkeys(record.name for record in needed))
        pack_dir.mkdir(parents=True, exist_ok=True)
        for name in names:
            for source in _pack_files(store, name):
                _link(source, pack_dir / source.name)
    return LinkedHistory(names, built, refs, _shallow_boundary(mirror_path, commit))


def _closure(tips: set[str], by_tip: dict[str, list[PackRecord]]) -> list[PackRecord]:
    """The records of `tips` and, recursively, of the tips each was built over."""
    seen: set[str] = set()
    out: list[PackRecord] = []
    pending = sorted(tips)
    while pending:
        tip = pending.pop()
        if tip in seen:
            continue
        seen.add(tip)
        for record in by_tip.get(tip, []):
            out.append(record)
            pending.extend(record.base - seen)
    return out


def _load(store: Path) -> list[PackRecord]:
    """The store's records; a store one of whose packs has gone is moved aside and started afresh
    (its later packs count on the lost one's objects: kept, they would make incomplete checkouts)."""
    try:
        lines = (store / _INDEX).read_text(encoding="ascii").splitlines()
    except (OSError, UnicodeDecodeError):
        lines = []
    records = []
    for line in lines:
        tip, name, tags, base = [*line.split("\t"), "", "", ""][:4]
        records.append(PackRecord(tip, name, _shas(tags), _shas(base)))
    tips = {record.tip for record in records}
    if all(
        len(record.tip) in (40, 64) and record.base <= tips and (store / f"{record.name}.pack").is_file()
        for record in records
    ):
        return records
    aside = store.with_name(f"{store.name}.broken-{os.getpid()}")
    os.replace(store, aside)
    shutil.rmtree(aside, ignore_errors=True)
    store.mkdir()
    return []


def _shas(field: str) -> frozenset[str]:
    return frozenset(filter(None, field.split(",")))


def _save(store: Path, records: list[PackRecord]) -> None:
    text = "".join(
        f"{r.tip}\t{r.name}\t{','.join(sorted(r.tags))}\t{','.join(sorted(r.base))}\n" for r in records
    )
    tmp = store / f".{_INDEX}.tmp"
    tmp.write_text(text, encoding="ascii")
    os.replace(tmp, store / _INDEX)


def _ancestors_among(mirror_path: Path, commit: str, tips: set[str]) -> set[str]:
    """The `tips` that `commit` reaches (itself included): one walk of its history, 0.2 s on pytest's."""
    if not tips:
        return set()
    listing = git_bytes(mirror_path, "rev-list", commit).decode().split()
    return tips.intersection(listing)


def _independent(mirror_path: Path, commits: set[str]) -> set[str]:
    """The `commits` that no other of them reaches."""
    if len(commits) < 2:
        return set(commits)
    return set(git_bytes(mirror_path, "merge-base", "--independent", *sorted(commits)).decode().split())


def _build_pack(mirror_path: Path, store: Path, wanted: list[str], exclude: set[str]) -> str:
    """One pack of the objects `wanted` reaches that `exclude` does not; returns its name."""
    building = Path(tempfile.mkdtemp(prefix=".building-", dir=store))
    try:
        revisions = "".join(f"{rev}\n" for rev in wanted) + "".join(f"^{rev}\n" for rev in sorted(exclude))
        # --revs: pack-objects walks the history itself (rev-list --objects), one process; no --thin, so
        # every delta's base is in the same pack.
        out = git_bytes(
            mirror_path, "pack-objects", "--revs", "--quiet", str(building / "pack"), input=revisions.encode()
        )
        name = f"pack-{out.decode().strip()}"
        for source in _pack_files(building, name):
            os.chmod(source, 0o444)
            os.replace(source, store / source.name)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    if not (store / f"{name}.pack").is_file():
        raise RepoSourceError(f"{mirror_path}: git pack-objects wrote no {name}.pack in {store}")
    return name


def _pack_files(folder: Path, name: str) -> list[Path]:
    return [folder / f"{name}{suffix}" for suffix in _SUFFIXES if (folder / f"{name}{suffix}").is_file()]


def _link(source: Path, target: Path) -> None:
    """A hard link (same filesystem as the cache), else a copy."""
    if target.exists():
        return
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _shallow_boundary(mirror_path: Path, commit: str) -> tuple[str, ...]:
    try:
        boundary = set((mirror_path / "shallow").read_text().split())
    except OSError:
        return ()
    reached = git_bytes(mirror_path, "rev-list", commit).decode().split()
    return tuple(sha for sha in reached if sha in boundary)
