"""The default sandbox: every command in a bubblewrap jail.

Guarantees (each has a hostile test in tests/sandbox/test_hostile_*.py):
- No network: the command gets its own network namespace with only its own
  loopback (`localhost` names it, nothing else resolves); services on the
  host's loopback are unreachable. (Environment builds are the one exception:
  they reach the package index.)
- Read-only host: only /usr, a few /etc files, the Python installation and the
  environment are visible, all read-only. $HOME, the host's /tmp, the caches
  and the git mirrors are not visible at all. An episode sees the Python
  package folders (site-packages, dist-packages) of the installation and of
  /usr empty: a later release of the task's project installed there would hold
  the fix (runtime.package_folders).
- The episode's git holds exactly the history up to the base commit: the
  objects that commit reaches and the annotated tags of its past, in packs of
  the checkout's own (sandbox/history.py). The mirror is never visible in the
  jail, nor are the blob store, other checkouts, the uv cache or the task file
  (tests/sandbox/test_hostile_history.py scans every file and git object an
  episode can read for the fix).
- Writes land only in the workspace (an overlayfs layer private to the episode
  when repogym runs as root, else a private copy), in the episode's /tmp and in
  the command's own /dev/shm (a tmpfs of Limits.shm_mb, gone with the command).
  The environment and the install layers of its commit are read-only; only the
  grader's re-install gets a venv layer of its own, private to the episode
  (after it, the venv may hold nothing but the project's own install outputs:
  grading/installcheck.py).
- A clean environment: TZ=UTC, PYTHONHASHSEED=0, LANG=C.UTF-8, HOME under
  /tmp, PATH to the task's environment; no host variable is passed through.
- Limits (see `Limits`): processes (a pids cgroup per command where the pids
  controller is writable, else RLIMIT_NPROC of a dedicated unprivileged uid;
  either way fork bombs stop), address space, CPU seconds, file size, open
  files, wall time, output volume. Hitting the wall or output limit kills the whole
  tree: the command runs in its own PID namespace, which dies with its init.
- Death with the parent: if repogym dies, bwrap gets SIGKILL and takes the tree.
- A narrower kernel surface: a seccomp filter (seccomp.py) refuses the kernel
  keyring (add_key, request_key, keyctl: episodes share one uid and could pass
  keys), new user namespaces (clone/unshare with CLONE_NEWUSER; clone3 answers
  ENOSYS so libc falls back to clone, which the filter can inspect), io_uring
  (its operations bypass the filter), socket families other than AF_UNIX,
  AF_INET, AF_INET6 and routing netlink (EAFNOSUPPORT; AF_VSOCK would reach
  the host past the network namespace), setting extended attributes (ENOTSUP:
  no `user.overlay.*` marks on a layer's files) and syscalls of foreign ABIs
  (x32, i386).

Not guaranteed:
- Kernel exploits or bubblewrap bugs; this is namespaces, not a VM.
- Per-sandbox memory accounting: RLIMIT_AS limits each process's address
  space, not the sum over a tree (cgroups would; they are not used).
- CPU and disk fairness between concurrent sandboxes: one busy sandbox can slow
  others; disk writes are bounded per file, not in total.
- Without root, the process limit counts all processes of the invoking user,
  and the workspace is a copy (slower resets); repogym says so in a warning.
- Separation between sandboxes running at once: they share one unprivileged
  uid, so without a writable pids cgroup (cgroups.py) they share its process
  limit (RLIMIT_NPROC); a jail can see the host paths of its own mounts in
  /proc/self/mountinfo. On a machine other than
  x86_64 or aarch64 there is no seccomp filter, so none of its rules apply.
  (tests/sandbox/test_hostile_extra.py keeps each of these as a visible xfail.)
- Honest test reports by construction: tests run in the same process as the
  report plugin. The grading layer (not the jail) closes the known classes: the
  launcher (pytest_plugin/repogym_pytest.py) loads the plugin before the repo is
  on sys.path; XFAIL counts as passing only for a test that carried an xfail
  mark when collection ended and that a static reading of the trusted test
  sources can xfail (grading/xfail_marks.py); a candidate patch may not touch the
  files holding the task's tests, pytest configuration, start-up code (.pth
  files; sitecustomize/usercustomize in any form the import system finds: a
  package, a .pyc, an extension module), package metadata (dist-info, egg-info)
  or compiled files; and every graded run carries a canary test, a copy of a
  FAIL_TO_PASS test failing like any failing test (a plain assert), that turns a
  report saying it passed into REPORT_FORGED, worth a fixed negative reward
  (grading/canary.py, canary_copy.py, judge.py, rewards/compose.py; hostile
  tests in tests/grading/test_hostile_report_forgery.py, test_hostile_marks.py
  and tests/env/test_hostile_forgery_gym.py; `repogym tasks audit` runs the
  known forgers on any task set). The residual risk: code in the test process
  that singles out the canary (by reading the test file's source) and edits only
  chosen results; and frameworks without a structured report (django, sympy)
  have no canary.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import warnings
from pathlib import Path

from repogym.errors import SandboxError
from repogym.files import atomic_writer
from repogym.sandbox import cgroups
from repogym.sandbox.base import HOME_DIR, REPO_DIR, TMP_DIR, VENV_DIR, Checkpoint, ExecResult, Limits, Mounts
from repogym.sandbox.cache import cache_root
from repogym.sandbox.process import run_process
from repogym.sandbox.seccomp import filter_path

#: /etc/hosts of a jail whose network is closed: the loopback's names, nothing of the host's.
_LOOPBACK_HOSTS = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"

#: The unprivileged uid/gid commands run as when repogym is root (not in /etc/passwd on purpose).
SANDBOX_UID = int(os.environ.get("REPOGYM_SANDBOX_UID", "61000"))

#: RLIMIT_NPROC under a pids cgroup: this many commands' worth of processes for the shared sandbox uid.
_NPROC_BACKSTOP = 64
#: Run by the launcher shell: join the command's cgroup ($1; empty where it was born there or has none),
#: mount each overlay (pairs of options and mount point up to "--"), then become the jail.
_LAUNCHER = (
    'if [ -n "$1" ]; then echo $$ > "$1/cgroup.procs" || exit 125; fi; shift; '
    'while [ "$1" != "--" ]; do mount -t overlay overlay -o "$1" "$2" || exit 125; shift 2; done; shift; '
    'exec "$@"'
)

_ETC_FILES = (
    "ld.so.cache",
    "ld.so.conf",
    "localtime",
    "nsswitch.conf",
    "ssl",
    "ca-certificates",
    "alternatives",
    "mime.types",
)


@functools.cache
def bwrap_path() -> str:
    path = shutil.which("bwrap")
    if path is None:
        raise SandboxError(
            "bubblewrap (bwrap) is not installed: run `apt-get install bubblewrap` "
            "(or scripts/setup.sh), or choose --sandbox local to run WITHOUT isolation"
        )
    return path


def is_root() -> bool:
    return os.geteuid() == 0


@functools.cache
def _warn_unprivileged() -> None:
    warnings.warn(
        "repogym is not running as root: the bwrap sandbox uses a copied workspace (slower resets) and the "
        "process limit counts all of this user's processes",
        stacklevel=3,
    )


class BwrapSandbox:
    """Runs each command under bubblewrap with the guarantees listed in this module's docstring."""

    name = "bwrap"
    isolated = True

    def __init__(self, uid: int = SANDBOX_UID) -> None:
        self.uid = uid
        # overlayfs needs root here (bwrap 0.8 has no overlay options); REPOGYM_NO_OVERLAY=1 forces copies.
        self.supports_overlay = is_root() and os.environ.get("REPOGYM_NO_OVERLAY", "") in ("", "0")
        bwrap_path()
        if not is_root():
            _warn_unprivileged()

    def run(
        self,
        command: str,
        mounts: Mounts,
        limits: Limits,
        *,
        cwd: str = REPO_DIR,
        env: dict[str, str] | None = None,
        checkpoint: Checkpoint | None = None,
    ) -> ExecResult:
        with cgroups.lease(limits.processes) if is_root() else contextlib.nullcontext() as slot:
            join = slot.path if slot is not None and not slot.threaded else None
            argv = self._argv(command, mounts, limits, cwd, env or {}, slot is not None, join)
            spawn = slot.spawn if slot is not None else None
            program = filter_path()
            if program is None:
                return run_process(argv, limits, env=_outer_env(), spawn=spawn, checkpoint=checkpoint)
            # bwrap reads the seccomp program from an inherited descriptor when it starts.
            fd = os.open(program, os.O_RDONLY)
            try:
                at = argv.index("--die-with-parent")
                argv[at:at] = ["--seccomp", str(fd)]
                return run_process(
                    argv, limits, env=_outer_env(), pass_fds=(fd,), spawn=spawn, checkpoint=checkpoint
                )
            finally:
                os.close(fd)

    # -- argv construction ----------------------------------------------------------------------

    def _argv(
        self,
        command: str,
        mounts: Mounts,
        limits: Limits,
        cwd: str,
        env: dict[str, str],
        in_cgroup: bool = False,
        join: Path | None = None,
    ) -> list[str]:
        """`in_cgroup`: the command runs in a pids cgroup of its own (born there, or joining `join`)."""
        # With a pids cgroup per command, RLIMIT_NPROC (shared by every jail: one uid) is only a
        # machine-wide backstop; without one it is the limit itself.
        nproc = limits.processes * _NPROC_BACKSTOP if in_cgroup else limits.processes
        prlimit = [
            "prlimit",
            f"--nproc={nproc}",
            f"--as={limits.memory_mb * 1024 * 1024}",
            f"--cpu={limits.cpu_s}",
            f"--fsize={limits.file_size_mb * 1024 * 1024}",
            f"--nofile={limits.open_files}",
            "--core=0",
            "--",
        ]
        shell = ["/bin/sh", "-c", command]
        if not is_root():
            return prlimit + self._bwrap_args(mounts, limits, cwd, env) + ["--", *shell]
        # As root, bwrap runs privileged (it can bind anything) and keeps only the capabilities setpriv needs
        # to become the unprivileged sandbox uid, which then drops every capability for good. RLIMIT_NPROC
        # only binds a non-root uid: that is what stops fork bombs where there is no pids cgroup.
        drop = [
            "setpriv",
            f"--reuid={self.uid}",
            f"--regid={self.uid}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs",
            "--",
        ]
        jail = [*self._bwrap_args(mounts, limits, cwd, env), "--", *drop, *prlimit, *shell]
        overlays = [spec for spec in (mounts.overlay, mounts.venv_overlay) if spec is not None]
        if not overlays and join is None:
            return jail
        mounting: list[str] = []
        for spec in overlays:
            mounting += [spec.options(), str(spec.merged)]
        launcher = ["/bin/sh", "-c", _LAUNCHER, "repogym-launch", str(join or ""), *mounting, "--", *jail]
        if not overlays:
            return launcher
        # The overlays are mounted in a private mount namespace that lives exactly as long as the command:
        # nothing is left mounted on the host, and the upper layers keep the episode's changes.
        return ["unshare", "--mount", "--propagation", "private", "--", *launcher]

    def _identity_args(self) -> list[str]:
        if is_root():
            return ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"]
        return ["--unshare-user", "--uid", str(os.getuid()), "--gid", str(os.getgid())]

    def _bwrap_args(self, mounts: Mounts, limits: Limits, cwd: str, env: dict[str, str]) -> list[str]:
        args = [
            bwrap_path(),
            "--die-with-parent",
            "--new-session",
            "--unshare-pid",
            *([] if mounts.network else ["--unshare-net"]),
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            *self._identity_args(),
            "--hostname",
            "sandbox",
            "--ro-bind",
            "/usr",
            "/usr",
            "--symlink",
            "usr/bin",
            "/bin",
            "--symlink",
            "usr/sbin",
            "/sbin",
            "--symlink",
            "usr/lib",
            "/lib",
            "--dev",
            "/dev",
            # A private, size-limited /dev/shm per command: multiprocessing's locks, queues and shared
            # memory live there (sticky and world-writable, as on a host).
            "--perms",
            "1777",
            "--size",
            str(limits.shm_mb * 1024 * 1024),
            "--tmpfs",
            "/dev/shm",
            "--proc",
            "/proc",
            # bwrap gives folders it creates the host's modes; /etc must be readable by the sandbox uid.
            "--perms",
            "0755",
            "--dir",
            "/etc",
        ]
        if Path("/lib64").exists():
            args += ["--symlink", "usr/lib64", "/lib64"]
        identity = identity_files(self.uid if is_root() else os.getuid())
        if mounts.network:
            args += ["--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf"]
            args += ["--ro-bind-try", "/etc/hosts", "/etc/hosts"]
        else:
            # The loopback is up in a closed network namespace; without a hosts file `localhost` did not
            # resolve, and tests that serve on it (sphinx's linkcheck) failed where SWE-bench's pass.
            args += ["--ro-bind", str(identity / "hosts"), "/etc/hosts"]
        for name in _ETC_FILES:
            args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        binds = (
            [(mounts.interpreter_prefix, str(mounts.interpreter_prefix))] if mounts.interpreter_prefix else []
        )
        binds += [(b.host, b.jail) for b in mounts.extra]
        venv = mounts.venv_overlay.merged if mounts.venv_overlay is not None else mounts.venv
        if venv is not None:
            binds.append((venv, VENV_DIR))
        args += _parent_dirs([jail for _, jail in binds])
        args += [
            "--ro-bind",
            str(identity / "passwd"),
            "/etc/passwd",
            "--ro-bind",
            str(identity / "group"),
            "/etc/group",
        ]
        args += ["--bind", str(mounts.tmp), TMP_DIR]
        workspace = mounts.overlay.merged if mounts.overlay else mounts.workspace
        args += ["--bind", str(workspace), REPO_DIR]
        if mounts.interpreter_prefix is not None:
            prefix = str(mounts.interpreter_prefix)
            args += ["--ro-bind", prefix, prefix]
        if venv is not None:
            args += ["--bind" if mounts.venv_writable else "--ro-bind", str(venv), VENV_DIR]
        for bind in mounts.extra:
            args += ["--bind" if bind.writable else "--ro-bind", str(bind.host), bind.jail]
        args += ["--chdir", cwd, "--clearenv"]
        for key, value in {**jail_environment(mounts), **env}.items():
            args += ["--setenv", key, value]
        return args


def _parent_dirs(targets: list[str]) -> list[str]:
    """World-readable parents for bind targets (bwrap would copy the host's modes, e.g. /root's 0700)."""
    made: list[str] = []
    args: list[str] = []
    for target in targets:
        parts = Path(target).parts[1:-1]
        for depth in range(1, len(parts) + 1):
            parent = "/" + "/".join(parts[:depth])
            if (
                parent in made
                or parent in ("/usr", "/tmp", "/dev", "/proc", "/etc")
                or parent.startswith("/usr/")
            ):
                continue
            made.append(parent)
            args += ["--perms", "0755", "--dir", parent]
    return args


@functools.cache
def identity_files(uid: int) -> Path:
    """A passwd/group pair naming only the sandbox user (the host's are not shown), and a hosts file naming
    only the loopback (for commands whose network is closed)."""

    folder = cache_root() / "identity" / str(uid)
    if not (folder / "group").exists():
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "passwd").write_text(f"sandbox:x:{uid}:{uid}:sandbox:{HOME_DIR}:/bin/sh\n")
        (folder / "group").write_text(f"sandbox:x:{uid}:\n")
    if not (folder / "hosts").exists():  # caches made before it have the pair only
        with atomic_writer(folder / "hosts") as handle:
            handle.write(_LOOPBACK_HOSTS)
    return folder


def jail_environment(mounts: Mounts) -> dict[str, str]:
    """The complete environment of a jailed command: nothing from the host."""
    path = "/usr/local/bin:/usr/bin:/bin"
    has_venv = mounts.venv is not None or mounts.venv_overlay is not None
    if has_venv:
        path = f"{VENV_DIR}/bin:{path}"
    return {
        "PATH": path,
        "HOME": HOME_DIR,
        "TMPDIR": TMP_DIR,
        "TZ": "UTC",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "PIP_NO_INPUT": "1",
        "GIT_CONFIG_NOSYSTEM": "1",
        "USER": "sandbox",
        "GIT_AUTHOR_NAME": "sandbox",
        "GIT_AUTHOR_EMAIL": "sandbox@repogym.invalid",
        "GIT_COMMITTER_NAME": "sandbox",
        "GIT_COMMITTER_EMAIL": "sandbox@repogym.invalid",
        **({"VIRTUAL_ENV": VENV_DIR} if has_venv else {}),
    }


def _outer_env() -> dict[str, str]:
    """The environment of the launcher processes (unshare, setpriv, prlimit), never of the jailed command."""
    return {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
