"""The history store (sandbox/history.py) on real git repositories: every checkout holds exactly what its
commit reaches (plus the annotated tags of its past), passes `git fsck --full`, and describes itself as
the mirror does, whatever order commits are checked out in; what is stored once is reused."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

from repogym.sandbox import history
from repogym.sandbox.cache import cache_dir
from repogym.sandbox.history import history_store, link_history
from repogym.sandbox.repos import mirror
from repogym.sandbox.workspace import pristine_checkout

from ..support.git import clone, git, git_run


def _objects(git_dir: Path) -> set[str]:
    listed = git(git_dir, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
    return set(listed.split())


def _reachable(mirror_path: Path, commit: str) -> set[str]:
    """What a checkout of `commit` must hold: its history's objects and the annotated tags of its past."""
    listing = git(mirror_path, "rev-list", "--objects", commit)
    tags = git(mirror_path, "for-each-ref", "--merged", commit, "--format=%(objectname) %(objecttype)")
    annotated = {line.split()[0] for line in tags.splitlines() if line.endswith(" tag")}
    return {line.split()[0] for line in listing.splitlines()} | annotated


def _assert_exact(mirror_path: Path, commit: str) -> Path:
    """Check out `commit`; its .git holds exactly its past, fscks, and describes itself as the mirror does."""
    checkout = pristine_checkout(mirror_path, commit)
    assert not (checkout / ".git" / "objects" / "info" / "alternates").exists()
    assert _objects(checkout) == _reachable(mirror_path, commit)
    fsck = git_run(checkout, "fsck", "--full", "--strict")
    assert fsck.returncode == 0 and not fsck.stdout.strip(), fsck.stdout + fsck.stderr
    ours = git(checkout, "describe", "--tags", "--always")
    assert ours == git(mirror_path, "describe", "--tags", "--always", commit)
    return checkout


def _linear(git_repo, name: str, count: int) -> tuple[Path, list[str]]:
    """A repository of `count` commits, each changing one file, with an annotated tag on the first."""
    repo = git_repo(name)
    commits = [
        repo.commit({"lib.py": f"VALUE = {n}\n", f"docs/{n}.md": f"step {n}\n"}, f"step {n}")
        for n in range(count)
    ]
    repo.git("tag", "-a", "v0.1", "-m", "first release", commits[0])
    return mirror(str(repo.path)), commits


def test_a_later_commit_builds_a_small_pack_over_the_stored_one(git_repo):
    mirror_path, commits = _linear(git_repo, "later", 4)
    first = _assert_exact(mirror_path, commits[1])
    last = _assert_exact(mirror_path, commits[3])
    first_packs = {p.name for p in (first / ".git" / "objects" / "pack").glob("*.pack")}
    last_packs = {p.name for p in (last / ".git" / "objects" / "pack").glob("*.pack")}
    assert len(first_packs) == 1 and first_packs < last_packs and len(last_packs) == 2
    # The later commit's own pack holds only what the stored one does not: two commits' worth.
    new = (last_packs - first_packs).pop()
    own = git(
        last, "verify-pack", "-v", str(last / ".git" / "objects" / "pack" / new.replace(".pack", ".idx"))
    )
    assert sum(1 for line in own.splitlines() if " commit " in line) == 2
    # Shared, not copied: the store's file under another name.
    stored = history_store(mirror_path) / next(iter(first_packs))
    assert os.path.samefile(stored, last / ".git" / "objects" / "pack" / next(iter(first_packs)))


def test_an_earlier_commit_gets_none_of_a_later_commits_objects(git_repo):
    mirror_path, commits = _linear(git_repo, "earlier", 4)
    _assert_exact(mirror_path, commits[3])
    earlier = _assert_exact(mirror_path, commits[1])
    assert commits[3] not in _objects(earlier) and commits[2] not in _objects(earlier)
    _assert_exact(mirror_path, commits[2])  # between the two: built over the earlier one


def test_the_same_commit_again_builds_nothing(git_repo, tmp_path):
    mirror_path, commits = _linear(git_repo, "again", 2)
    _assert_exact(mirror_path, commits[1])
    again = link_history(mirror_path, commits[1], tmp_path / "pack")
    assert again.built is None and len(again.packs) == 1


def test_a_tag_made_after_the_commit_was_stored_gets_a_pack_of_its_own(git_repo, tmp_path):
    repo = git_repo("retagged")
    first = repo.commit({"a.py": "A = 1\n"}, "first")
    second = repo.commit({"a.py": "A = 2\n"}, "second")
    mirror_path = mirror(str(repo.path))
    _assert_exact(mirror_path, second)
    repo.git("tag", "-a", "v1", "-m", "tagged later", first)
    third = repo.commit({"a.py": "A = 3\n"}, "third")
    repo.git("tag", "-a", "v2", "-m", "a later release", third)
    mirror(str(repo.path), (third,))  # fetches the tags too
    linked = link_history(mirror_path, second, tmp_path / "pack")
    assert linked.built is not None and len(linked.packs) == 2
    assert [tag.name for tag in linked.tags] == ["refs/tags/v1"] and linked.tags[0].annotated
    git(tmp_path, "init", "-q", "--bare", "check.git")
    for pack in (tmp_path / "pack").iterdir():
        os.link(pack, tmp_path / "check.git" / "objects" / "pack" / pack.name)
    assert _objects(tmp_path / "check.git") == _reachable(mirror_path, second)
    assert linked.tags[0].sha in _objects(tmp_path / "check.git")


def test_a_parentless_commit_holds_its_tree_alone(git_repo):
    """A synthetic task's base: no parent, beside a whole history in the same repository."""
    repo = git_repo("orphan")
    repo.commit({"calc.py": "def add(a, b):\n    return a + b\n", "README.md": "calc\n"}, "clean")
    repo.git("checkout", "-q", "--orphan", "task")
    base = repo.commit({"calc.py": "def add(a, b):\n    return a - b\n"}, "repogym task")
    repo.git("checkout", "-q", "main")
    mirror_path = mirror(str(repo.path))
    checkout = _assert_exact(mirror_path, base)
    assert len(_objects(checkout)) == 4  # the commit, its tree, two blobs
    assert git(checkout, "log", "--format=%H").split() == [base]


def test_a_submodule_gets_its_files_and_no_git_dir(git_repo):
    sub = git_repo("sub")
    pinned = sub.commit({"data.txt": "pinned data\n"}, "pinned")
    later = sub.commit({"data.txt": "later data\n"}, "later")
    sub.git("checkout", "-q", pinned)
    top = git_repo("top")
    top.commit({"main.py": "print(1)\n"}, "main")
    top.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub.path), "vendor/sub")
    top.git("commit", "-q", "-m", "add sub")
    base = top.git("rev-parse", "HEAD").strip()
    mirror_path = mirror(str(top.path))
    checkout = _assert_exact(mirror_path, base)
    assert (checkout / "vendor" / "sub" / "data.txt").read_text() == "pinned data\n"
    assert not (checkout / "vendor" / "sub" / ".git").exists()
    assert later not in _objects(checkout) and pinned not in _objects(checkout)  # a gitlink, not history


def test_a_shallow_mirror_gives_a_shallow_checkout_that_fscks(git_repo, tmp_path):
    repo = git_repo("deep")
    commits = [repo.commit({"f.py": f"N = {n}\n"}, f"c{n}") for n in range(4)]
    shallow = tmp_path / "shallow"
    clone(f"file://{repo.path}", shallow, "--depth", "2")
    mirror_path = mirror(str(shallow))
    checkout = _assert_exact(mirror_path, commits[3])
    assert (checkout / ".git" / "shallow").read_text().split() == [commits[2]]
    assert git(checkout, "log", "--format=%H").split() == [commits[3], commits[2]]


def test_a_store_that_lost_a_pack_starts_afresh(git_repo):
    mirror_path, commits = _linear(git_repo, "lost", 3)
    _assert_exact(mirror_path, commits[0])
    for pack in history_store(mirror_path).glob("pack-*"):
        pack.unlink()  # what a partial clean-up of the cache would leave
    _assert_exact(mirror_path, commits[2])


def test_a_long_chain_is_cut_by_a_full_pack(git_repo, monkeypatch):
    monkeypatch.setattr(history, "_MAX_PACKS", 2)
    mirror_path, commits = _linear(git_repo, "chain", 4)
    counts = []
    for commit in commits:
        checkout = _assert_exact(mirror_path, commit)
        counts.append(len(list((checkout / ".git" / "objects" / "pack").glob("*.pack"))))
    assert counts == [1, 2, 1, 2]


def test_commits_checked_out_at_once_are_each_exact(git_repo):
    mirror_path, commits = _linear(git_repo, "concurrent", 6)
    failures: list[BaseException] = []

    def check(commit: str) -> None:
        try:
            _assert_exact(mirror_path, commit)
        except BaseException as error:  # reported by the main thread
            failures.append(error)

    threads = [threading.Thread(target=check, args=(commit,)) for commit in commits]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures


def test_a_checkout_of_the_alternates_layout_is_never_reused(git_repo):
    """Checkouts made before the history store borrowed the mirror's objects through alternates: one left
    in the cache must not be handed out again."""
    repo = git_repo("old-layout")
    base = repo.commit({"a.py": "A = 1\n"}, "a")
    mirror_path = mirror(str(repo.path))
    old_key = hashlib.sha256(f"{mirror_path}\0{base}".encode()).hexdigest()[:20]
    old = cache_dir("checkouts") / old_key
    (old / ".git" / "objects" / "info").mkdir(parents=True)
    (old / ".git" / "objects" / "info" / "alternates").write_text("/opt/repogym/mirror/objects\n")
    old.with_name(f"{old_key}.complete").touch()
    checkout = _assert_exact(mirror_path, base)
    assert checkout != old
