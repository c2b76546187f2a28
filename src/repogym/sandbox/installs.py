"""Install layers: what an environment's install step writes, kept per commit for every episode of it.

Environments are shared across commits whose dependency files agree, but what
the repo's own install step writes is per commit: setuptools_scm's generated
`_version.py`, in-place extension modules, egg-info in the repo, and in the
venv the editable install's metadata (its version, its module map). So per
(environment, commit) the step runs once, in the build jail, in an overlay
over that commit's checkout and over the shared venv, and the upper layers are
kept: every episode of that commit stacks the repo's, read-only, between the
checkout and its own writable layer. The venv's is dropped when it only
rewrote what the shared venv holds (a static version), else flattened into a
tree of hard links (shared venv + upper), bound as one folder: no overlay, no
extra cost per command. The commit an environment was built at reuses the
build's own layer and pays for no second install. Without
overlayfs (not root, or REPOGYM_NO_OVERLAY=1) the layers are full copies of
the checkout and the venv: correct, heavier on disk and time.

On top of what the install wrote, the tree's compiled bytecode (bytecode.py):
made per commit too, also for tasks with no install step, so that a test run
loads the repository's modules instead of compiling them.

Each layer also records a git baseline of the installed tree (an index, the
objects it needs beyond the commit's own, and its tree), so an episode's diff is
what the episode changed, never what the install generated or the bytecode.

Not kept: anything the step writes outside /testbed and the venv (/tmp, the
home folder). The `local` backend gets no layers (its episodes are host
folders; the editable install does not apply there anyway).
"""

from __future__ import annotations

import math
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from repogym.sandbox import bytecode
from repogym.sandbox.base import REPO_DIR, Bind, Mounts, OverlaySpec, Sandbox, read_jail_file
from repogym.sandbox.bwrap import SANDBOX_UID, is_root
from repogym.sandbox.envbuild import (
    BUILD_LIMITS,
    EnvHandle,
    build_binds,
    env_stamp,
    install_layer_dir,
    repo_install_script,
    run_build_step,
)
from repogym.sandbox.overlaytrees import flatten, only_rewrites
from repogym.sandbox.workspace import PRISTINE_GIT
from repogym.task import Task

#: Where an episode's diff finds the baseline of its commit's installed tree (read-only).
BASELINE_DIR = "/opt/repogym/baseline"


@dataclass(frozen=True)
class Baseline:
    """The installed tree of a commit as git sees it: diffs are taken against `tree`."""

    folder: Path
    """Holds `index` (the installed tree's index) and `objects` (what it needs beyond the checkout's)."""
    tree: str


@dataclass(frozen=True)
class CommitLayers:
    """What an episode of one (environment, commit) starts from."""

    repo: tuple[Path, ...]
    """Overlay lowers of /testbed, top first, ending with the pristine checkout (one full tree in copy mode)."""
    venv: tuple[Path, ...]
    """Likewise for the venv, ending with the shared venv."""
    baseline: Baseline | None = None
    """None: the install wrote nothing in the repo, diffs are taken against the commit itself."""
    install_step: str = ""
    """The repo install script, re-run by `Episode.reinstall()` ('' = the task has none)."""


def plain_layers(pristine: Path, env: EnvHandle) -> CommitLayers:
    return CommitLayers((pristine,), (env.venv,))


def ensure_commit_layers(sandbox: Sandbox, task: Task, env: EnvHandle, pristine: Path) -> CommitLayers:
    """The install layers of `env` at the commit of `pristine`, made on first use (once, under a lock): what
    the install step wrote, and the tree's compiled bytecode on top (bytecode.py).

    Raises EnvBuildError when the install step fails at this commit.
    """
    step = repo_install_script(task, pristine)
    if not sandbox.isolated:
        return CommitLayers((pristine,), (env.venv,), install_step="")
    overlay = sandbox.supports_overlay
    compiled = overlay and bytecode.supported(env.interpreter)
    if not step and not compiled:
        return CommitLayers((pristine,), (env.venv,), install_step=step)
    folder = install_layer_dir(env.key, pristine, overlay)
    done = folder.with_name(folder.name + ".ok")
    # Layers belong to one build of the environment: after a prune and rebuild they are made again.
    built = env_stamp(env.venv)
    stamp = built + (bytecode.STAMP if compiled else "")
    if _read(done) != stamp:
        with FileLock(str(folder) + ".lock"):
            if _read(done) != stamp:
                # Made over this build already, before bytecode was kept, or by the build itself.
                installed = _read(done) == built or (bool(step) and _read(folder / "from-build") == built)
                done.unlink(missing_ok=True)
                if not installed and step:
                    _install(sandbox, task, env, pristine, folder, step, overlay)
                elif not installed:
                    shutil.rmtree(folder, ignore_errors=True)
                    (folder / "repo").mkdir(parents=True)
                written = time.time()  # the install step's writes are no later than this
                log = folder.with_name(folder.name + ".log")
                if compiled:
                    bytecode.compile_layer(sandbox, env, _repo_lowers(folder, pristine), folder / "pyc", log)
                _make_baseline(sandbox, env, pristine, folder, overlay)
                _outlast_the_second_of(written)
                done.write_text(stamp)
    return _layers(folder, pristine, env, overlay, step)


def _outlast_the_second_of(written: float) -> None:
    """Return only once the wall clock is past the whole second in which the install step last wrote.

    distutils and setuptools decide whether to rebuild an extension by `os.stat(path)[ST_MTIME]`, whole
    seconds: a source patched in the same second as the build that made its `.so` reads as not newer, the
    re-install skips the build, and the tests run the old code (a gold patch graded right after its
    environment was built came out UNRESOLVED about one time in two). Waiting here costs under a second per
    layer made, never per episode; backdating the layer's files instead would rewrite the stat data its git
    baseline records.
    """
    left = math.floor(written) + 1 - time.time()
    if left > 0:
        time.sleep(left)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _repo_lowers(folder: Path, pristine: Path) -> tuple[Path, ...]:
    """/testbed's overlay lowers, top first: the bytecode, what the install wrote, the checkout (the layers
    that hold something)."""
    layers = (folder / "pyc", folder / "repo")
    return (*(layer for layer in layers if _has_entries(layer)), pristine)


def _layers(folder: Path, pristine: Path, env: EnvHandle, overlay: bool, step: str) -> CommitLayers:
    repo, venv = folder / "repo", folder / "venv"
    if overlay:
        repo_lowers = _repo_lowers(folder, pristine)
        if (folder / "venv-tree").is_dir():
            venv_lowers: tuple[Path, ...] = (folder / "venv-tree",)
        else:
            venv_lowers = (venv, env.venv) if _has_entries(venv) else (env.venv,)
    else:
        repo_lowers = (repo,)
        venv_lowers = (venv,) if venv.is_dir() else (env.venv,)
    tree = read_jail_file(folder / "baseline" / "tree", max_bytes=100)
    baseline = Baseline(folder / "baseline", tree.strip()) if tree and tree.strip() else None
    return CommitLayers(repo_lowers, venv_lowers, baseline, step)


def _has_entries(path: Path) -> bool:
    return path.is_dir() and any(os.scandir(path))


def _install(
    sandbox: Sandbox, task: Task, env: EnvHandle, pristine: Path, folder: Path, step: str, overlay: bool
) -> None:
    """Run the install step at this commit and keep what it wrote: uppers, or full copies."""
    if folder.exists():
        shutil.rmtree(folder)
    scratch = folder / ".scratch"
    (scratch / "tmp" / "home").mkdir(parents=True)
    repo, venv = folder / "repo", folder / "venv"
    if overlay:
        made = [repo, venv, scratch / "repo-work", scratch / "venv-work", scratch / "repo", scratch / "venv"]
        for path in made:
            path.mkdir()
        workspace = OverlaySpec((pristine,), repo, scratch / "repo-work", scratch / "repo")
        venv_view = OverlaySpec((env.venv,), venv, scratch / "venv-work", scratch / "venv")
        mounts = Mounts(
            workspace=workspace.merged, tmp=scratch / "tmp", overlay=workspace, venv_overlay=venv_view
        )
        owned = made[:4]
    else:
        shutil.copytree(pristine, repo, symlinks=True)
        shutil.copytree(env.venv, venv, symlinks=True)
        mounts = Mounts(workspace=repo, tmp=scratch / "tmp", venv=venv)
        owned = [repo, venv]
    if is_root():
        for path in [*owned, scratch / "tmp", scratch / "tmp" / "home"]:
            _chown(path, recursive=not overlay and path in (repo, venv))
    mounts = Mounts(
        workspace=mounts.workspace,
        tmp=mounts.tmp,
        venv=mounts.venv,
        venv_overlay=mounts.venv_overlay,
        venv_writable=True,
        interpreter_prefix=env.interpreter.prefix,
        overlay=mounts.overlay,
        network=True,
        extra=build_binds(pristine),
    )
    try:
        log = folder.with_name(folder.name + ".log")
        run_build_step(sandbox, task, step, mounts, log, f"install step at {pristine.name}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if overlay and only_rewrites(venv, env.venv):
        # The step rewrote the venv's files with what they already held (a static version, the same
        # module map): episodes of this commit then bind the shared venv as it is, with no extra mount.
        shutil.rmtree(venv)
        venv.mkdir()
    elif overlay and flatten(venv, env.venv, folder / "venv-tree"):
        shutil.rmtree(venv)  # its files live on as links in the tree
        venv.mkdir()


def _make_baseline(sandbox: Sandbox, env: EnvHandle, pristine: Path, folder: Path, overlay: bool) -> None:
    """Record the installed tree in git terms (see the module docstring); none when nothing was written."""
    repo = folder / "repo"
    lowers = _repo_lowers(folder, pristine)
    if len(lowers) == 1:
        return
    baseline = folder / "baseline"
    shutil.rmtree(baseline, ignore_errors=True)
    scratch = folder / ".scratch"
    for path in (baseline, scratch / "tmp" / "home", scratch / "repo"):
        path.mkdir(parents=True, exist_ok=True)
    if is_root():
        for path in (baseline, scratch / "tmp", scratch / "tmp" / "home"):
            os.chown(path, SANDBOX_UID, SANDBOX_UID)
    view = OverlaySpec(lowers, None, None, scratch / "repo") if overlay else None
    mounts = Mounts(
        workspace=view.merged if view else repo,
        tmp=scratch / "tmp",
        overlay=view,
        extra=(
            Bind(pristine / ".git", PRISTINE_GIT),
            Bind(baseline, BASELINE_DIR, writable=True),
        ),
    )
    script = (
        f"set -e; cp {PRISTINE_GIT}/index {BASELINE_DIR}/index; mkdir -p {BASELINE_DIR}/objects; "
        + git_environment(f"{BASELINE_DIR}/index", f"{BASELINE_DIR}/objects", "")
        + "git -c core.attributesFile=/dev/null ls-files -z --others --exclude-standard --directory "
        f"--no-empty-directory > {BASELINE_DIR}/untracked; "
        "git -c core.attributesFile=/dev/null add -A -f --ignore-errors . >/dev/null 2>&1 || true; "
        f"git write-tree > {BASELINE_DIR}/tree"
    )
    try:
        result = sandbox.run(script, mounts, BUILD_LIMITS)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if not result.ok:
        shutil.rmtree(baseline, ignore_errors=True)  # diffs then fall back to the commit itself
        log = folder.with_name(folder.name + ".log")
        with log.open("a", encoding="utf-8") as handle:
            handle.write(
                f"\n# baseline of the installed tree failed; diffs use the commit\n{result.output}\n"
            )
        return
    _exclude_generated(repo, read_jail_file(baseline / "untracked") or "")


def _exclude_generated(repo: Path, untracked: str) -> None:
    """List what the install generated (untracked, not ignored) in the layer's .git/info/exclude, so that
    `git status` in an episode shows the episode's own changes, as if the repo ignored its build output."""
    paths = [path for path in untracked.split("\0") if path]
    if not paths:
        return
    info = repo / ".git" / "info"
    info.mkdir(parents=True, exist_ok=True)
    exclude = info / "exclude"
    existing = exclude.read_text(encoding="utf-8") if exclude.is_file() and not exclude.is_symlink() else ""
    lines = ["# repogym: written by the environment's install step", *(_literal_pattern(p) for p in paths)]
    exclude.write_text(existing + "\n".join(lines) + "\n", encoding="utf-8")
    if is_root():
        for path in (repo / ".git", info, exclude):
            os.lchown(path, SANDBOX_UID, SANDBOX_UID)


def _literal_pattern(path: str) -> str:
    r"""A gitignore line matching exactly `path` from the repo root.

    >>> print(_literal_pattern("src/pkg.egg-info/"), _literal_pattern("a[1]*.so"))
    /src/pkg.egg-info/ /a\[1\]\*.so
    """
    escaped = "".join("\\" + char if char in "\\*?[]!#" else char for char in path)
    if escaped.endswith(" "):
        escaped = escaped[:-1] + "\\ "
    return "/" + escaped


def git_environment(index: str, objects: str, extra_alternates: str) -> str:
    """`export ...; ` of the variables that make git read the pristine .git (read-only; its objects are the
    commit's whole history) with a scratch index and object store, and no configuration of the jail's own
    (it could define filters)."""
    alternates = f"{PRISTINE_GIT}/objects" + (f":{extra_alternates}" if extra_alternates else "")
    return (
        f"export GIT_DIR={PRISTINE_GIT} GIT_WORK_TREE={REPO_DIR} GIT_INDEX_FILE={index} "
        f"GIT_OBJECT_DIRECTORY={objects} GIT_ALTERNATE_OBJECT_DIRECTORIES={alternates} "
        "GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 GIT_ATTR_NOSYSTEM=1; "
    )


def _chown(path: Path, recursive: bool) -> None:
    os.chown(path, SANDBOX_UID, SANDBOX_UID)
    if recursive:
        for root, dirs, files in os.walk(path):
            for name in (*dirs, *files):
                os.lchown(os.path.join(root, name), SANDBOX_UID, SANDBOX_UID)
