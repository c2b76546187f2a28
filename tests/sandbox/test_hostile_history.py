"""An agent must not find the fix in its episode: not in git's history, not anywhere else in the jail.

The hole (repogym issue 26): a checkout's `.git` borrowed the whole mirror's objects (an alternates file
naming the mirror, bound read-only into every jail), so from an episode `git cat-file --batch-all-objects`
listed the commit that fixes a mined task, and `git show <fix> | git apply` then submit earned full
reward; a synthetic task's clean (pre-mutation) file sat among the same objects. Each test here is one
way to look, run from inside a real bwrap episode of three tasks: a mined one and an imported one (a
history with the fix commit, an annotated tag on it, later commits and a side branch after the base
commit) and a synthetic one (repogym's own task repository: a parentless base commit holding the mutated
file, the clean commit in the same repository). Before the episode, the host also checks out the fix (or
clean) commit, so the blob store, the checkouts folder and the history store hold the fix too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import repogym
from repogym.grading.report import Outcome
from repogym.sandbox.cache import cache_root
from repogym.sandbox.history import history_store
from repogym.sandbox.repos import mirror
from repogym.sandbox.runtime import Episode, TaskRuntime, package_folders
from repogym.sandbox.workspace import pristine_checkout
from repogym.synth.store import BugCommit, TaskRepo
from repogym.task import Source, Task
from repogym.testing import BUGGY_SOURCE, TESTS_AFTER, make_toy_task

from ..support.git import commit_files, git

SOURCE_FILE = "src/calc/__init__.py"

#: Run by the jail's Python (and by the host's, over the mirror, for the positive side). Reads every
#: readable regular file under the roots as raw bytes, and every git object (decompressed, deltas
#: resolved) of every folder named `objects`; reports which needles it met where, and which of the
#: host's forbidden folders and files (by device and inode: a bind mount keeps both) it walked into.
SCAN = r"""
import json, os, subprocess, sys, tempfile
spec = json.load(open(sys.argv[1]))
own = {os.path.realpath(sys.argv[1])}  # the needles' own list
needles = [(label, bytes.fromhex(value)) for label, value in spec["needles"]]
forbidden = {(dev, ino): label for dev, ino, label in spec["forbidden"]}
prune = set(spec["skip"]) | {"/proc", "/sys", "/dev"}
hits, met, objects = [], [], []
counts = {"files": 0, "bytes": 0, "unreadable": 0, "git_bytes": 0}

def check(data, where):
    for label, needle in needles:
        if needle in data:
            hits.append([label, where])

def mount_points():
    try:
        with open("/proc/self/mountinfo") as handle:
            return [line.split()[4].replace("\\040", " ") for line in handle]
    except OSError:
        return []

# A mount below a skipped tree is not part of it: walk it too.
roots = list(spec["roots"])
roots += [m for m in mount_points() if any(m.startswith(s + "/") for s in spec["skip"]) and m not in prune]
for top in roots:
    for folder, dirs, names in os.walk(top):
        dirs[:] = [d for d in dirs if os.path.join(folder, d) not in prune]
        info = os.lstat(folder)
        if (info.st_dev, info.st_ino) in forbidden:
            met.append([forbidden[(info.st_dev, info.st_ino)], folder])
        if os.path.basename(folder) == "objects":
            objects.append(folder)
        for name in names:
            path = os.path.join(folder, name)
            if os.path.realpath(path) in own:
                continue
            try:
                info = os.lstat(path)
                if (info.st_dev, info.st_ino) in forbidden:
                    met.append([forbidden[(info.st_dev, info.st_ino)], path])
                if not os.path.isfile(path) or os.path.islink(path):
                    continue
                with open(path, "rb") as handle:
                    data = handle.read()
            except OSError:
                counts["unreadable"] += 1
                continue
            counts["files"] += 1
            counts["bytes"] += len(data)
            check(data, path)

scratch = tempfile.mkdtemp()
subprocess.run(["git", "init", "-q", "--bare", scratch + "/scan.git"], check=True)
for folder in objects:
    env = {"PATH": "/usr/bin:/bin", "HOME": scratch, "GIT_DIR": scratch + "/scan.git",
           "GIT_OBJECT_DIRECTORY": folder, "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], env=env,
                          capture_output=True)
    counts["git_bytes"] += len(done.stdout)
    check(done.stdout, "git objects of " + folder)
print(json.dumps({"hits": hits, "met": met, "objects": objects, "counts": counts}))
"""


@dataclass(frozen=True)
class Case:
    """A task whose repository holds its fix, and what must never be seen from its episodes."""

    kind: str
    task: Task
    secret_shas: dict[str, str]
    """Label -> sha of what only the future (or the clean side) has: the fix, a tag on it, later work."""
    secret_line: str
    """A line only the fix (for the synthetic task: the clean, pre-mutation file) contains."""
    past: tuple[str, ...]
    """Commits the base commit's `git log` shows, newest first."""
    describe: str
    """What `git describe --tags --always` says at the base commit."""
    base_line: str
    """A line of the base commit's tree (the positive side of the scan)."""
    future: str
    """The commit checked out on the host beside the base (the fix, or the clean commit)."""


#: The history's own commits come a month after the toy's first one: `git log --all` lists by date.
_LATER = "2024-02-01T00:00:00Z"
_LATER_ENV = {"GIT_AUTHOR_DATE": _LATER, "GIT_COMMITTER_DATE": _LATER}


def _history_case(root: Path, kind: str, source: Source) -> Case:
    """The toy calc project with a history: release v1.0, the base commit, then the fix, its tag v1.1,
    later work and a side branch. The task's gold patch is the fix's diff (as a mined task's is)."""
    marker = f"fixed-{kind}-{uuid.uuid4().hex[:12]}"
    toy = make_toy_task(root, instance_id=f"toy__calc-history-{kind}")
    repo = Path(toy.repo_source)
    first = toy.base_commit
    git(repo, "tag", "-a", "v1.0", "-m", "release 1.0", env=_LATER_ENV)
    base_line = f"calc adds and multiplies ({kind})"
    readme = {"README.md": f"# calc\n\n{base_line}\n"}
    base = commit_files(repo, readme, "docs: say what calc does", date=_LATER)
    fixed = BUGGY_SOURCE.replace("return a - b", f"return a + b  # {marker}")
    fix_files = {SOURCE_FILE: fixed, "tests/test_calc.py": TESTS_AFTER}
    fix = commit_files(repo, fix_files, f"calc: add adds ({marker})", date=_LATER)
    gold = git(repo, "diff", base, fix, "--", SOURCE_FILE).strip() + "\n"
    git(repo, "tag", "-a", "v1.1", "-m", f"release 1.1: {marker}", env=_LATER_ENV)
    git(repo, "tag", "v1.1-light")
    later = commit_files(repo, {"CHANGES.md": f"{marker}\n"}, "later work", date=_LATER)
    git(repo, "checkout", "-q", "-b", "feature", base)
    side = commit_files(repo, {"notes.md": f"{marker}\n"}, "wip on a side branch", date=_LATER)
    git(repo, "checkout", "-q", "main")
    task = toy.replace(base_commit=base, patch=gold, source=source)
    secrets = {"fix": fix, "tag v1.1": git(repo, "rev-parse", "v1.1").strip(), "later": later, "side": side}
    return Case(kind, task, secrets, marker, (base, first), f"v1.0-1-g{base[:7]}", base_line, fix)


def _synthetic_case(root: Path) -> Case:
    """A synthetic task made the way `repogym synth` makes one: the clean commit holds the line, the task
    repository holds the clean commit, the bug on top of it and the parentless base commit."""
    marker = f"clean-{uuid.uuid4().hex[:12]}"
    toy = make_toy_task(root, instance_id="toy__calc-history-synthetic")
    source = Path(toy.repo_source)
    clean_source = BUGGY_SOURCE.replace("return a - b", f"return a + b  # {marker}")
    clean = commit_files(source, {SOURCE_FILE: clean_source}, "clean", date=_LATER)
    store = TaskRepo(root / "tasks.git")
    store.ensure(source, clean)
    written = store.write([BugCommit(toy.instance_id, clean, {SOURCE_FILE: BUGGY_SOURCE}, "synthetic bug\n")])
    bug = written[toy.instance_id]
    task = toy.replace(base_commit=bug.base_commit, source=Source.SYNTHETIC, repo_source=str(store.path))
    secrets = {"clean": clean, "bug commit": bug.bug_commit, "toy first commit": toy.base_commit}
    base_line = "A tiny calculator."
    return Case("synthetic", task, secrets, marker, (bug.base_commit,), bug.base_commit[:7], base_line, clean)


@dataclass(frozen=True)
class Prepared:
    case: Case
    runtime: TaskRuntime


@pytest.fixture(scope="module", params=["mined", "imported", "synthetic"])
def prepared(request, tmp_path_factory, toy_task) -> Prepared:  # toy_task: the suite's shared cache
    root = tmp_path_factory.mktemp(f"history-{request.param}")
    if request.param == "synthetic":
        case = _synthetic_case(root)
    else:
        case = _history_case(root, request.param, Source(request.param))
    runtime = TaskRuntime.create(case.task)
    if request.param == "imported":
        runtime.prepare()  # the base first: the future's pack then builds on the base's
    pristine_checkout(mirror(case.task.repo_source, (case.future,)), case.future)
    if request.param != "imported":  # the future first: the base's pack is then a full one of its own
        runtime.prepare()
    return Prepared(case, runtime)


@pytest.fixture
def episode(prepared) -> Iterator[Episode]:
    with prepared.runtime.episode() as made:
        yield made


def _secret_words(case: Case) -> list[str]:
    return [*case.secret_shas.values(), *(sha[:10] for sha in case.secret_shas.values()), case.secret_line]


def _assert_nothing_secret(case: Case, output: str) -> None:
    found = [word for word in _secret_words(case) if word in output]
    assert not found, f"{case.kind}: {found} seen in:\n{output[:3000]}"


def test_episode_cat_file_all_objects_lists_only_the_base_commits_past(prepared, episode):
    case, mirror = prepared.case, prepared.runtime.mirror_path
    listed = episode.run("git cat-file --batch-all-objects --batch-check='%(objectname)'")
    assert listed.ok, listed.output
    _assert_nothing_secret(case, listed.output)
    reachable = git(mirror, "rev-list", "--objects", case.task.base_commit).strip().split("\n")
    tags = git(
        mirror, "for-each-ref", "--merged", case.task.base_commit, "--format=%(objectname) %(objecttype)"
    )
    expected = {line.split()[0] for line in reachable} | {
        line.split()[0] for line in tags.splitlines() if line.endswith(" tag")
    }
    assert set(listed.output.split()) == expected
    # The positive side: the mirror the checkout came from holds the secrets.
    everything = git(mirror, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
    assert set(case.secret_shas.values()) <= set(everything.split())


def test_episode_fsck_lost_found_recovers_no_future_object(prepared, episode):
    case = prepared.case
    result = episode.run(
        "git fsck --full --lost-found 2>&1; echo fsck=$?; cat .git/lost-found/*/* 2>/dev/null"
    )
    assert "fsck=0" in result.output, result.output
    _assert_nothing_secret(case, result.output)


def test_episode_reflog_names_no_future_commit(prepared, episode):
    result = episode.run("git reflog 2>&1; git reflog --all 2>&1; ls -R .git/logs 2>&1")
    _assert_nothing_secret(prepared.case, result.output)


def test_episode_log_all_shows_only_the_base_commits_history(prepared, episode):
    case = prepared.case
    result = episode.run("git log --all --format='%H %s' && git rev-list --all --objects | wc -l")
    assert result.ok, result.output
    _assert_nothing_secret(case, result.output)
    commits = [line.split()[0] for line in result.output.splitlines()[:-1]]
    assert tuple(commits) == case.past


def test_episode_packed_refs_name_no_future_tag(prepared, episode):
    case = prepared.case
    result = episode.run("cat .git/packed-refs 2>&1; git for-each-ref; git tag --list; ls -R .git/refs")
    _assert_nothing_secret(case, result.output)
    assert "v1.1" not in result.output
    if case.kind != "synthetic":
        assert "refs/tags/v1.0" in result.output


def test_episode_git_show_of_the_fix_sha_fails(prepared, episode):
    case = prepared.case
    for label, sha in case.secret_shas.items():
        shown = episode.run(f"git show {sha} 2>&1; git cat-file -p {sha[:10]} 2>&1")
        assert "fatal" in shown.output and case.secret_line not in shown.output, (label, shown.output)
    applied = episode.run(f"git show {case.future} | git apply 2>&1 && echo applied")
    assert "applied" not in applied.output.splitlines()


def test_episode_describe_and_fsck_work_as_in_a_clone(prepared, episode):
    """Not an attack: the history an episode keeps still serves git describe (setuptools_scm) and fsck."""
    case = prepared.case
    described = episode.run("git describe --tags --always")
    assert described.ok and described.output.strip().startswith(case.describe), described.output
    if case.kind != "synthetic":
        mirror_says = git(prepared.runtime.mirror_path, "describe", "--tags", case.task.base_commit).strip()
        assert described.output.strip() == mirror_says
    checked = episode.run("git fsck --full --strict 2>&1 && git status --porcelain && echo clean")
    assert checked.ok and checked.output.strip() == "clean", checked.output


def _needles(case: Case) -> list[list[str]]:
    needles = [[f"{label} sha", sha.encode().hex()] for label, sha in case.secret_shas.items()]
    needles += [[f"{label} abbreviated", sha[:8].encode().hex()] for label, sha in case.secret_shas.items()]
    needles += [[f"{label} raw", sha] for label, sha in case.secret_shas.items()]
    needles.append(["secret line", case.secret_line.encode().hex()])
    needles.append(["base sha", case.task.base_commit.encode().hex()])
    needles.append(["base line", case.base_line.encode().hex()])
    return needles


def _forbidden(prepared: Prepared, task_file: Path) -> list[list[object]]:
    """Every folder of what the jail must not show (the mirrors, the history store, the blob store, the
    checkouts, the uv cache, the task's source repository), and the task file, by device and inode."""
    cache = cache_root()
    trees = {
        "mirrors": cache / "mirrors",
        "history": history_store(prepared.runtime.mirror_path).parent,
        "blobs": cache / "blobs",
        "checkouts": cache / "checkouts",
        "uv cache": cache / "uv-cache",
        "repo source": Path(prepared.case.task.repo_source),
    }
    found: list[list[object]] = []
    for label, top in trees.items():
        for folder, _, _ in os.walk(top):
            info = os.lstat(folder)
            found.append([info.st_dev, info.st_ino, f"{label}: {folder}"])
    info = os.lstat(task_file)
    found.append([info.st_dev, info.st_ino, f"task file {task_file}"])
    return found


def _scan_result(output: str) -> dict:
    return json.loads(output.strip().splitlines()[-1])


def test_episode_scan_of_every_readable_file_and_git_object_finds_no_fix(prepared, episode, tmp_path):
    """Every file the jail can read, raw, and every git object it can decompress: no fix sha (hex, short
    or binary, as in a pack index), no fix line; and no folder of the mirrors, the history, blob and uv
    stores, the checkouts or the source repository, nor the task file, is mounted in the jail.

    /usr is the host's own, read-only, and is left out of the content scan (6 GB here): the needles are
    made fresh by this test and exist only in its temporary folders and the cache, neither of which is
    below it (checked here); a mount below it is still scanned.
    """
    case, runtime = prepared.case, prepared.runtime
    for home in (cache_root(), Path(case.task.repo_source), tmp_path):
        assert not home.resolve().is_relative_to("/usr"), home
    task_file = tmp_path / "tasks.jsonl"
    task_file.write_text(json.dumps(case.task.to_dict()) + "\n")
    spec = {
        "needles": _needles(case),
        "skip": ["/usr"],
        "roots": ["/"],
        "forbidden": _forbidden(prepared, task_file),
    }
    script = episode.put_file("scan.py", SCAN)
    spec_path = episode.put_file("scan.json", json.dumps(spec))
    result = episode.run(f"python {script} {spec_path}")
    assert result.ok, result.output
    scan = _scan_result(result.output)
    labels = {label for label, _ in scan["hits"]}
    assert not (labels - {"base sha", "base line"}), scan["hits"]
    assert not scan["met"], scan["met"]
    # The positive side: the scan reads the checkout, raw and decompressed, in the jail...
    assert ["base sha", "/testbed/.git/HEAD"] in scan["hits"]
    assert ["base line", "git objects of /testbed/.git/objects"] in scan["hits"]
    assert scan["counts"]["files"] > 100 and scan["counts"]["git_bytes"] > 0
    # ...and the same scan over the mirror, on the host, finds every secret.
    host_spec = tmp_path / "host.json"
    host_spec.write_text(
        json.dumps({**spec, "roots": [str(runtime.mirror_path)], "skip": [], "forbidden": []})
    )
    host = subprocess.run(
        [sys.executable, "-c", SCAN, str(host_spec)], capture_output=True, text=True, check=True
    )
    host_labels = {label for label, _ in _scan_result(host.stdout)["hits"]}
    assert {"secret line", *(f"{label} sha" for label in case.secret_shas)} <= host_labels


def test_episode_interpreter_site_packages_hold_no_release_of_the_project(prepared, episode):
    """The host interpreter the environment is made from is bound whole; its own site-packages could hold
    a later release of the task's project (here, Python 3.11 had flask 3.1.3 beside flask's 2.3 tasks),
    which holds the fix. The jail sees those folders empty; the venv never used them."""
    prefix = prepared.runtime.env.interpreter.prefix
    folders = package_folders(prefix)
    if not any(any(folder.iterdir()) for folder in folders):
        pytest.skip(f"{prefix} has no package folder with anything in it: nothing to hide")
    listed = episode.run("; ".join(f"ls -A {folder} | wc -l" for folder in folders))
    assert listed.ok and listed.output.split() == ["0"] * len(folders), listed.output
    works = episode.run("python -c 'import calc, pytest, setuptools; print(calc.mul(2, 3))'")
    assert works.ok and works.output.strip() == "6", works.output


@pytest.mark.parametrize("prepared", ["mined"], indirect=True)  # one gym run: the tasks share the sandbox
def test_gym_agent_applying_the_fix_from_history_is_not_resolved(prepared):
    """Through the gym, as an agent plays it: `git show <fix> | git apply` and submit."""
    case = prepared.case
    env = repogym.make(case.task.instance_id, case.task, runtime=prepared.runtime)
    try:
        env.reset()
        observation, _, terminated, _, _ = env.step(
            f"bash('git show {case.future} | git apply && echo APPLIED')"
        )
        assert not terminated and "APPLIED" not in observation and case.secret_line not in observation
        observation, _, terminated, _, _ = env.step("bash('git log --all --oneline; git tag')")
        assert not terminated
        _assert_nothing_secret(case, observation)
        _, reward, terminated, _, info = env.step("submit()")
        assert terminated and not info["grade"].resolved and reward <= 0.0, info["grade"]
        # The positive side: the fix itself, made by hand, resolves.
        env.reset()
        env.step(f"str_replace('{SOURCE_FILE}', 'a - b', 'a + b')")
        _, reward, terminated, _, info = env.step("submit()")
        assert terminated and info["grade"].outcome is Outcome.RESOLVED and reward > 0, info["grade"]
    finally:
        env.close()
