"""A task's runtime: its mirror, pristine checkout and environment, and the episodes run over them.

`TaskRuntime.prepare()` does the once-per-task work (mirror, checkout, env
build); `TaskRuntime.episode()` hands out cheap episodes that share it. This
is what grading, validation and the gym all stand on.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from repogym.errors import SandboxError
from repogym.registry import Registry
from repogym.sandbox.base import (
    OUT_DIR,
    PLUGIN_DIR,
    REPO_DIR,
    Bind,
    ExecResult,
    Limits,
    Mounts,
    Sandbox,
    read_jail_file,
)
from repogym.sandbox.bwrap import BwrapSandbox
from repogym.sandbox.envbuild import EnvBuilder, EnvHandle
from repogym.sandbox.local import LocalSandbox
from repogym.sandbox.repos import mirror, resolve_repo_source
from repogym.sandbox.workspace import MIRROR_OBJECTS, EpisodeLayer, pristine_checkout
from repogym.task import Task

sandboxes: Registry[type] = Registry("sandbox")
sandboxes.add("bwrap", BwrapSandbox)
sandboxes.add("local", LocalSandbox)

IN_DIR = "/opt/repogym/in"
PRISTINE_GIT = "/opt/repogym/pristine-git"
DIFF_DIR = "/opt/repogym/diff"


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
        """Mirror, checkout and environment; raises RepoSourceError / EnvBuildError."""
        commit = commit or self.task.base_commit
        started = time.perf_counter()
        source = resolve_repo_source(self.task, self.repos_dir)
        self.mirror_path = mirror(source, (commit,))
        self.pristine = pristine_checkout(self.mirror_path, commit)
        self.timings["checkout_s"] = time.perf_counter() - started
        started = time.perf_counter()
        self.env = EnvBuilder(self.sandbox).ensure(self.task, self.pristine)
        self.timings["env_s"] = time.perf_counter() - started
        return self

    def episode(self, readonly_git: bool = False) -> Episode:
        """A fresh episode. `readonly_git`: /testbed/.git is the pristine one, read-only (grading uses this,
        so nothing a candidate patch writes can change how git applies the test patch)."""
        if self.pristine is None or self.env is None or self.mirror_path is None:
            raise SandboxError("TaskRuntime.prepare() must run before episode()")
        layer = EpisodeLayer.create(self.pristine, overlay=self.sandbox.supports_overlay)
        return Episode(self, layer, readonly_git=readonly_git)


class Episode:
    """One attempt's writable view of the task's repo; every command runs in the sandbox."""

    def __init__(self, runtime: TaskRuntime, layer: EpisodeLayer, readonly_git: bool = False) -> None:
        self.runtime = runtime
        self.layer = layer
        self.readonly_git = readonly_git

    def mounts(self, *extra: Bind) -> Mounts:
        runtime = self.runtime
        assert runtime.env is not None and runtime.mirror_path is not None
        from repogym.grading.parsers import get_parser

        binds = [
            Bind(runtime.mirror_path / "objects", MIRROR_OBJECTS),
            Bind(self.layer.out, OUT_DIR, writable=True),
            Bind(self.layer.inbox, IN_DIR),
        ]
        plugin_dir = get_parser(runtime.task.env.log_parser).plugin_dir
        if plugin_dir is not None:
            binds.append(Bind(plugin_dir, PLUGIN_DIR))
        if self.readonly_git and self.runtime.sandbox.isolated:
            assert runtime.pristine is not None
            binds.append(Bind(runtime.pristine / ".git", f"{REPO_DIR}/.git"))
        binds += extra
        return Mounts(
            workspace=self.layer.workspace,
            tmp=self.layer.tmp,
            venv=runtime.env.venv,
            interpreter_prefix=runtime.env.interpreter.prefix,
            overlay=self.layer.overlay(),
            extra=tuple(binds),
        )

    def run(
        self, command: str, *, limits: Limits | None = None, env: dict[str, str] | None = None
    ) -> ExecResult:
        return self.runtime.sandbox.run(command, self.mounts(), limits or self.runtime.limits, env=env)

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
        """The episode's changes as a binary-safe git diff against the base commit.

        Git runs with the pristine `.git` (read-only) and a scratch index and object store, so
        whatever the episode did to its own `.git` cannot change what is reported.
        `include_ignored`: also files the worktree's .gitignore hides (the grader's check uses it).
        """
        assert self.runtime.pristine is not None
        scratch = Path(tempfile.mkdtemp(prefix="diff.", dir=self.layer.root))
        from repogym.sandbox.bwrap import SANDBOX_UID, is_root

        if is_root():
            os.chown(scratch, SANDBOX_UID, SANDBOX_UID)
        git_dir = self.runtime.pristine / ".git"
        mounts = self.mounts(Bind(git_dir, PRISTINE_GIT), Bind(scratch, DIFF_DIR, writable=True))
        script = (
            f"set -e; cp {PRISTINE_GIT}/index {DIFF_DIR}/index; mkdir -p {DIFF_DIR}/objects; "
            f"export GIT_DIR={PRISTINE_GIT} GIT_WORK_TREE=/testbed GIT_INDEX_FILE={DIFF_DIR}/index "
            f"GIT_OBJECT_DIRECTORY={DIFF_DIR}/objects GIT_ALTERNATE_OBJECT_DIRECTORIES={PRISTINE_GIT}/objects:{MIRROR_OBJECTS} "
            # Only the pristine repo config counts: the jail's ~/.gitconfig could define filters or attributes.
            "GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 GIT_ATTR_NOSYSTEM=1; "
            f"git -c core.attributesFile=/dev/null add -A {'-f ' if include_ignored else ''}--ignore-errors . "
            ">/dev/null 2>&1 || true; "
            "git -c core.quotePath=false -c core.attributesFile=/dev/null diff --cached --binary --no-color "
            f"--no-ext-diff --no-textconv --no-renames HEAD > {DIFF_DIR}/patch"
        )
        try:
            result = self.runtime.sandbox.run(script, mounts, limits or self.runtime.limits)
            # The jail could have swapped the file for a link to a host file: read it the safe way.
            patch = (read_jail_file(scratch / "patch") or "") if result.ok else ""
        finally:
            import shutil

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
