"""The `local` backend: commands run directly on the host. Use it only when you trust the code.

Guarantees:
- The same wall-clock, output and rlimit limits as bwrap (they need no privileges).
- A clean environment (TZ=UTC, PYTHONHASHSEED=0, LANG=C.UTF-8, HOME in the episode's tmp).

Not guaranteed (everything bwrap adds):
- No network isolation, no read-only host, no protection of $HOME, caches or mirrors: the
  command runs as you, with your files.
- The workspace is the episode's folder on the host, not /testbed: the environment's
  editable install of the repo does not apply; the repo root (and its src/) is put on PYTHONPATH.
  What the install step writes into the repo is not kept per commit (no install layers), and
  a packaging patch is not re-installed; no private /dev/shm, no per-command process cgroup.
- Daemons that start their own session escape the kill at the end of a command.
"""

from __future__ import annotations

import re
import resource
import warnings

from repogym.sandbox.base import OUT_DIR, REPO_DIR, VENV_DIR, Checkpoint, ExecResult, Limits, Mounts
from repogym.sandbox.bwrap import jail_environment
from repogym.sandbox.process import run_process


def _warn() -> None:
    warnings.warn(
        "sandbox 'local' runs model-written code on this machine WITHOUT isolation (network, files, processes)",
        stacklevel=3,
    )


class LocalSandbox:
    name = "local"
    isolated = False
    supports_overlay = False

    def __init__(self) -> None:
        _warn()

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
        workspace = mounts.workspace
        environment = jail_environment(mounts)
        host_paths = {REPO_DIR: str(workspace), "/tmp": str(mounts.tmp)}
        if mounts.venv is not None:
            host_paths[VENV_DIR] = str(mounts.venv)
        for bind in mounts.extra:
            host_paths[bind.jail] = str(bind.host)
        host_paths.setdefault(OUT_DIR, str(mounts.tmp))
        environment = {k: _to_host(v, host_paths) for k, v in {**environment, **(env or {})}.items()}
        environment["PYTHONPATH"] = f"{workspace}/src:{workspace}"
        # Workspaces belong to the sandbox uid (shared with bwrap), not to the user running git here.
        environment.update(
            {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory", "GIT_CONFIG_VALUE_0": "*"}
        )
        command = _to_host(command, host_paths)

        def _limits() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (limits.memory_mb * 2**20,) * 2)
            resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s,) * 2)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size_mb * 2**20,) * 2)

        return run_process(
            ["/bin/sh", "-c", command],
            limits,
            env=environment,
            cwd=_to_host(cwd, host_paths),
            preexec_fn=_limits,
            checkpoint=checkpoint,
        )


def _to_host(text: str, host_paths: dict[str, str]) -> str:
    """Rewrite jail paths to their host folders (longest first, so /opt/repogym/x wins over /opt)."""

    pattern = "|".join(re.escape(jail) for jail in sorted(host_paths, key=len, reverse=True))
    return re.sub(pattern, lambda match: host_paths[match.group(0)], text)
