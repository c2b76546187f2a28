"""A task's runtime: its mirror, pristine checkout and environment, and the episodes run over them.

`TaskRuntime.prepare()` does the once-per-task work (mirror, checkout, env
build, the install layers of the env at the task's commit); `TaskRuntime.episode()`
hands out cheap episodes that share it. This is what grading, validation and
the gym all stand on. The sandbox knows nothing of tests: whoever runs a test
runner passes its plugin folder in (`Episode.run(binds=...)`).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import uv

from repogym.errors import SandboxError
from repogym.patches import changed_paths
from repogym.registry import Registry
from repogym.reposource import resolve_repo_source
from repogym.sandbox.base import (
    OUT_DIR,
    REPO_DIR,
    Bind,
    Checkpoint,
    ExecResult,
    Limits,
    Mounts,
    Sandbox,
    read_jail_file,
)
from repogym.sandbox.bwrap import SANDBOX_UID, BwrapSandbox, is_root
from repogym.sandbox.envbuild import UV_JAIL, EnvBuilder, EnvHandle
from repogym.sandbox.installs import BASELINE_DIR, CommitLayers, ensure_commit_layers, git_environment
from repogym.sandbox.local import LocalSandbox
from repogym.sandbox.repos import mirror
from repogym.sandbox.workspace import PRISTINE_GIT, EpisodeLayer, pristine_checkout
from repogym.task import Task

sandboxes: Registry[type] = Registry("sandbox")
sandboxes.add("bwrap", BwrapSandbox)
sandboxes.add("local", LocalSandbox)

IN_DIR = "/opt/repogym/in"
DIFF_DIR = "/opt/repogym/diff"

#: Files whose change makes the grader re-run the install step (SWE-bench re-runs it after every patch):
#: packaging metadata, and the sources of extension modules built in place.
PACKAGING_FILES = frozenset({"setup.py", "setup.cfg", "pyproject.toml", "MANIFEST.in"})
EXTENSION_SUFFIXES = frozenset(
    {".pyx", ".pxd", ".pxi", ".c", ".cc", ".cpp", ".cxx", ".h", ".hpp", ".f", ".f90"}
)
#: The re-install in an episode has no network: installers work from what the venv holds.
_OFFLINE_INSTALL_ENV = {
    "UV_OFFLINE": "1",
    "UV_NO_BUILD_ISOLATION": "1",
    "UV_CACHE_DIR": "/tmp/.repogym-uv-cache",
    "UV_PYTHON_DOWNLOADS": "never",
    "UV_LINK_MODE": "copy",
    "UV_NO_PROGRESS": "1",
    "PIP_NO_INDEX": "1",
    "PIP_NO_BUILD_ISOLATION": "0",  # pip reads this option inverted: 0 turns build isolation off
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    # pip reads this option inverted too: 0 = no byte-compiling. A compiled editable finder module is a .pyc the
    # re-install check (grading/installcheck.py) must refuse, which would refuse every honest packaging patch.
    "PIP_NO_COMPILE": "0",
}


def make_sandbox(name: str | Sandbox = "bwrap") -> Sandbox:
    if not isinstance(name, str):
        return name
    return sandboxes.get(name)()


@dataclass
class TaskRuntime:
    """Everything one task's episodes share."""

    task: Task
    sandbox: Sandbox
    repos_dir: str | None = None
    limits: Limits = field(default_factory=Limits)
    mirror_path: Path | None = None
    pristine: Path | None = None
    env: EnvHandle | None = None
    timings: dict[str, float] = field(default_factory=dict)
    layers: CommitLayers | None = None
    """The install layers of `env` at this commit; made by prepare(), or by the first episode()."""
    _layers_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @classmethod
    def create(
        cls,
        task: Task,
        sandbox: str | Sandbox = "bwrap",
        repos_dir: str | None = None,
        limits: Limits | None = None,
    ) -> TaskRuntime:
        return cls(task, make_sandbox(sandbox), repos_dir, limits or Limits())

    def prepare(self, commit: str | None = None) -> TaskRuntime:
        """Mirror, checkout, environment and its install layers; raises RepoSourceError / EnvBuildError."""
        commit = commit or self.task.base_commit
        started = time.perf_counter()
        source = resolve_repo_source(self.task, self.repos_dir)
        self.mirror_path = mirror(source, (commit,))
        self.pristine = pristine_checkout(self.mirror_path, commit)
        self.timings["checkout_s"] = time.perf_counter() - started
        started = time.perf_counter()
        self.env = EnvBuilder(self.sandbox).ensure(self.task, self.pristine)
        self.timings["env_s"] = time.perf_counter() - started
        started = time.perf_counter()
        self.layers = None
        self.commit_layers()
        self.timings["install_s"] = time.perf_counter() - started
        return self

    def commit_layers(self) -> CommitLayers:
        """The install layers at this runtime's commit (made once; raises EnvBuildError if the step fails)."""
        if self.pristine is None or self.env is None or self.mirror_path is None:
            raise SandboxError("TaskRuntime.prepare() must run before episode()")
        with self._layers_lock:
            if self.layers is None:
                self.layers = ensure_commit_layers(self.sandbox, self.task, self.env, self.pristine)
            return self.layers

    def episode(self, readonly_git: bool = False) -> Episode:
        """A fresh episode. `readonly_git`: /testbed/.git is the pristine one, read-only (grading uses this,
        so nothing a candidate patch writes can change how git applies the test patch)."""
        layers = self.commit_layers()
        layer = EpisodeLayer.create(layers.repo, overlay=self.sandbox.supports_overlay, venv=layers.venv)
        return Episode(self, layer, readonly_git=readonly_git)


class Episode:
    """One attempt's writable view of the task's repo; every command runs in the sandbox.

    Every command gets the task's `env.test_env` over the jail's clean environment.
    """

    def __init__(self, runtime: TaskRuntime, layer: EpisodeLayer, readonly_git: bool = False) -> None:
        self.runtime = runtime
        self.layer = layer
        self.readonly_git = readonly_git

    def mounts(self, *extra: Bind) -> Mounts:
        runtime = self.runtime
        if runtime.env is None:
            raise SandboxError("TaskRuntime.prepare() must run before episode()")
        # No mirror here: the checkout's .git holds its commit's history and nothing after it.
        binds = [
            Bind(self.layer.out, OUT_DIR, writable=True),
            Bind(self.layer.inbox, IN_DIR),
        ]
        if self.readonly_git and self.runtime.sandbox.isolated and runtime.pristine is not None:
            binds.append(Bind(runtime.pristine / ".git", f"{REPO_DIR}/.git"))
        if self.runtime.sandbox.isolated:
            binds += [
                Bind(self.layer.empty, str(folder))
                for folder in package_folders(runtime.env.interpreter.prefix)
            ]
        binds += extra
        venv, venv_overlay = self.layer.venv_view()
        return Mounts(
            workspace=self.layer.workspace,
            tmp=self.layer.tmp,
            venv=venv,
            venv_overlay=venv_overlay,
            interpreter_prefix=runtime.env.interpreter.prefix,
            overlay=self.layer.overlay(),
            extra=tuple(binds),
        )

    def run(
        self,
        command: str,
        *,
        limits: Limits | None = None,
        env: dict[str, str] | None = None,
        binds: Sequence[Bind] = (),
        checkpoint: Checkpoint | None = None,
    ) -> ExecResult:
        """Run `command` in the episode; `env` adds to the task's test_env, `binds` to the usual mounts
        (e.g. a test runner's plugin folder, `repogym.sandbox.base.plugin_binds`); `checkpoint` pauses it
        for a decision of the host (`repogym.sandbox.base.Checkpoint`)."""
        variables = {**self.runtime.task.env.test_env, **(env or {})}
        mounts = self.mounts(*binds)
        sandbox, limits = self.runtime.sandbox, limits or self.runtime.limits
        if checkpoint is None:
            return sandbox.run(command, mounts, limits, env=variables)
        return sandbox.run(command, mounts, limits, env=variables, checkpoint=checkpoint)

    @property
    def install_step(self) -> str:
        """The repo's install script that `reinstall()` runs ('' = the task has none)."""
        layers = self.runtime.layers
        return layers.install_step if layers is not None else ""

    def reinstall(self, limits: Limits | None = None) -> ExecResult | None:
        """Run the repo's install step again in this episode, as SWE-bench does after applying a patch.

        The venv gets a writable layer of its own first (the shared one is never written), and the step
        runs without network and without build isolation: installers use what the environment holds. The
        task's test_env does not apply (it is a build step). None when the task has no install step.
        """
        if not self.install_step:
            return None

        self.layer.make_venv_writable()
        mounts = dataclasses.replace(self.mounts(Bind(Path(uv.find_uv_bin()), UV_JAIL)), venv_writable=True)
        return self.runtime.sandbox.run(
            self.install_step, mounts, limits or self.runtime.limits, env=_OFFLINE_INSTALL_ENV
        )

    @property
    def inbox(self) -> Path:
        return self.layer.inbox

    def put_file(self, name: str, content: str | bytes) -> str:
        """Place a file where jailed commands can read it (read-only); returns its path in the jail."""
        if "/" in name or name.startswith("."):
            raise ValueError(f"bad inbox file name {name!r}")
        data = content.encode() if isinstance(content, str) else content
        (self.layer.inbox / name).write_bytes(data)
        return f"{IN_DIR}/{name}"

    def diff(self, limits: Limits | None = None, include_ignored: bool = False) -> tuple[str, ExecResult]:
        """The episode's changes as a binary-safe git diff against the base commit as installed (what
        the environment's install step generated in the repo is not a change of the episode).

        Git runs with the pristine `.git` (read-only) and a scratch index and object store, so
        whatever the episode did to its own `.git` cannot change what is reported.
        `include_ignored`: also files the worktree's .gitignore hides (the grader's check uses it).
        """
        assert self.runtime.pristine is not None
        scratch = Path(tempfile.mkdtemp(prefix="diff.", dir=self.layer.root))

        if is_root():
            os.chown(scratch, SANDBOX_UID, SANDBOX_UID)
        # Against the installed tree of the commit when the install wrote into the repo, so generated files
        # (a _version.py, an in-place .so) are never reported as the episode's changes.
        layers = self.runtime.layers
        baseline = layers.baseline if layers is not None and self.runtime.sandbox.isolated else None
        binds = [Bind(self.runtime.pristine / ".git", PRISTINE_GIT), Bind(scratch, DIFF_DIR, writable=True)]
        if baseline is not None:
            binds.append(Bind(baseline.folder, BASELINE_DIR))
        mounts = self.mounts(*binds)
        index = f"{BASELINE_DIR}/index" if baseline else f"{PRISTINE_GIT}/index"
        script = (
            f"set -e; cp {index} {DIFF_DIR}/index; mkdir -p {DIFF_DIR}/objects; "
            + git_environment(
                f"{DIFF_DIR}/index", f"{DIFF_DIR}/objects", f"{BASELINE_DIR}/objects" if baseline else ""
            )
            + f"git -c core.attributesFile=/dev/null add -A {'-f ' if include_ignored else ''}--ignore-errors . "
            ">/dev/null 2>&1 || true; "
            "git -c core.quotePath=false -c core.attributesFile=/dev/null diff --cached --binary --no-color "
            f"--no-ext-diff --no-textconv --no-renames {baseline.tree if baseline else 'HEAD'} > {DIFF_DIR}/patch"
        )
        try:
            result = self.runtime.sandbox.run(script, mounts, limits or self.runtime.limits)
            # The jail could have swapped the file for a link to a host file: read it the safe way.
            patch = (read_jail_file(scratch / "patch") or "") if result.ok else ""
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return patch, result

    def reset(self) -> float:
        return self.layer.reset()

    def close(self) -> None:
        self.layer.close()

    def __enter__(self) -> Episode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@functools.lru_cache(maxsize=32)
def package_folders(prefix: Path) -> tuple[Path, ...]:
    """The package folders of the interpreter installation at `prefix` and of the host's /usr, which
    episodes see empty.

    The environment never reads them (a venv without system site-packages), but a jail can: a host
    interpreter with a later release of the task's own project installed holds the fix (the machine this
    was found on had flask 3.1.3, pytest 9.0.3 and sympy 1.14.0 in the Python 3.11 that flask's SWE-bench
    tasks run on), and so would a distribution's package of it in /usr. Folders that are links are left
    alone (a bind over a link would follow it).
    """
    patterns = [
        f"{lib}/python*/{kind}" for lib in ("lib", "local/lib") for kind in ("site-packages", "dist-packages")
    ]
    found = {path for top in (prefix, Path("/usr")) for pattern in patterns for path in top.glob(pattern)}
    return tuple(sorted(path for path in found if path.is_dir() and not path.is_symlink()))


def touches_packaging(paths: Iterable[str]) -> bool:
    """Whether changing `paths` can change what the install step builds.

    >>> touches_packaging(["src/pkg/core.py", "setup.py"]), touches_packaging(["pkg/_speedups.pyx"])
    (True, True)
    >>> touches_packaging(["src/pkg/core.py", "docs/setup.py.rst"])
    False
    """
    for path in paths:
        name = PurePosixPath(path)
        if (path in PACKAGING_FILES) or name.suffix in EXTENSION_SUFFIXES:
            return True
    return False


def reinstall_if_packaging_changed(
    episode: Episode, patch: str, limits: Limits | None = None
) -> ExecResult | None:
    """After `patch` was applied: re-run the install step when it changed packaging files or extension
    sources (None when it did not, or the task has none). Like SWE-bench, what follows runs whether or
    not the install succeeded: a broken install shows in the tests. `limits`: the step's (a grade passes its
    test limits, so a setup.py that sleeps costs no more than the grade's time limit); None: the runtime's."""
    if not episode.install_step or not touches_packaging(changed_paths(patch)):
        return None
    return episode.reinstall(limits)
