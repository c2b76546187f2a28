"""Python environments: one per (repo, environment key), built once with uv, used read-only.

The key (sandbox/envkey.py) hashes what decides the environment's contents,
never how its tests run, so tasks that differ only there share one environment.

The build runs inside the jail with network (for the package index), the
environment at its fixed in-jail path and the checkout at /testbed, so the
repo's editable install points at /testbed in every later episode. What the
install writes inside the repo is kept as the install layer of the build's
commit (sandbox/installs.py does the same for every other commit). Every
installer gets the machine's CA bundle; pip is in every environment.

Rules that make an environment the one its spec describes (each shown by tests/sandbox/test_envbuild_rules.py
on a small repository):

- pip: the one the task's packages name, resolved with them as of `exclude_newer` (SWE-bench's conda
  environments hold the pip of the day its images were built, and a pip before 25.3 still installs a
  setup.py project editable with `setup.py develop`, which puts /testbed on sys.path); else the newest.
- Dated builds are dated for pip too: every pip of a step with `exclude_newer` reads the index through a
  loopback view that hides later uploads (sandbox/datedindex.py), since a pip before 26 cannot filter.
  The date never hides the spec's own exact pins: a pinned release the date would hide whole is let
  through, to pip by the view and to uv by a date of its own project's (`exclude-newer-package`).
- repogym's own step (the build requirements installed for an offline re-install) changes no version
  the environment already holds: each requirement is installed with every installed distribution held,
  or left out (said in the log).
- Offline: with `$REPOGYM_WHEELS` set to a folder of wheels, every build installs from that folder alone
  (uv offline, pip without an index, no dated view): a machine with no network, such as a GPU node, builds
  the environments whose packages the folder holds. The folder is part of the environment's key.
- Layout: the environment is a venv whose interpreter also stands as a Python prefix of its own
  (`.prefix/`: a copy of the executable, the standard library by links, the venv's site-packages), so a
  tool that links a new name to sys.executable outside the venv (tox-current-env's `.tox/*/bin/python`)
  runs a Python that still sees the environment's packages, as a conda environment's does.
"""

from __future__ import annotations

import configparser
import hashlib
import json
import os
import shlex
import shutil
import tempfile
import time
import tomllib
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path

import uv
from filelock import FileLock
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from repogym.errors import EnvBuildError
from repogym.sandbox.base import VENV_DIR, Bind, ExecResult, Limits, Mounts, Sandbox
from repogym.sandbox.bwrap import SANDBOX_UID, is_root
from repogym.sandbox.cache import cache_dir
from repogym.sandbox.datedindex import DatedView, dated_view
from repogym.sandbox.datedpins import exact_pins
from repogym.sandbox.envkey import (
    env_key,
    environment_packages,
    exclude_newer_timestamp,
    offline_wheels,
    wheels_listing,
)
from repogym.sandbox.interpreters import (
    Interpreter,
    find_interpreters,
    pick_interpreter,
    prefix_layout_lines,
)
from repogym.sandbox.network_attempts import needs_network
from repogym.sandbox.syspackages import LACKS, describe_needs, find_system_needs
from repogym.sandbox.workspace import EpisodeLayer
from repogym.task import Task

__all__ = [
    "EnvBuilder",
    "EnvHandle",
    "Interpreter",
    "env_key",
    "find_interpreters",
    "install_script",
    "pick_interpreter",
]

_TEST_EXTRAS = ("test", "tests", "testing", "dev")
UV_JAIL = "/opt/repogym/bin/uv"
_UV_CACHE_JAIL = "/opt/repogym/uv-cache"
_CA_JAIL = "/opt/repogym/ca-certificates.crt"
_UV_DATED_JAIL = "/opt/repogym/uv-dated.toml"
_WHEELS_JAIL = "/opt/repogym/wheels"
_CA_CANDIDATES = (
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
)
#: Host variables that point installers at another package index (URLs only: host paths are not visible).
_INDEX_VARIABLES = (
    "UV_INDEX_URL",
    "UV_EXTRA_INDEX_URL",
    "UV_DEFAULT_INDEX",
    "UV_INDEX",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_TRUSTED_HOST",
)
UV_PIP = f"{UV_JAIL} pip install --python {VENV_DIR}/bin/python"
BUILD_LIMITS = Limits(wall_s=900, cpu_s=1800, memory_mb=8192, processes=512)


@dataclass(frozen=True)
class EnvHandle:
    """A built environment, ready to bind read-only at VENV_DIR."""

    key: str
    venv: Path
    interpreter: Interpreter
    log_path: Path
    build_s: float = 0.0
    """Seconds the build took (0 when it came from the cache)."""


def install_script(task: Task, pristine: Path, interpreter: Interpreter) -> str:
    """The shell script that builds the environment (printed at the top of the build log)."""
    lines = ["set -ex"]
    major_minor = tuple(int(p) for p in interpreter.version.split(".")[:2])
    packages = environment_packages(task)
    if major_minor >= (3, 8):
        lines.append(f"{UV_JAIL} venv --quiet --python {interpreter.executable} {VENV_DIR}")
        lines += prefix_layout_lines(major_minor)
        if not names_package(packages, "pip"):
            # pip for `python -m pip ...` install lines: the newest one this Python supports, where the
            # task names none (a task that names pip gets it with its packages, as of exclude_newer).
            lines.append(f"env -u UV_EXCLUDE_NEWER {UV_PIP} pip")
        if major_minor < (3, 12):
            lines.append(f"{UV_PIP} setuptools wheel")
    else:
        lines.append(f"{interpreter.executable} -m venv {VENV_DIR}")  # its ensurepip brings pip
        if major_minor >= (3, 0):
            lines += prefix_layout_lines(major_minor)
        if major_minor < (3, 7):
            # uv's bytecode compiler uses py_compile.PycInvalidationMode (3.7+): with it on, every uv install fails.
            lines.append("export UV_COMPILE_BYTECODE=0")
    if packages:
        constrained = ""
        if old_setuptools_pin(packages):
            lines.append(f"echo {shlex.quote(ISOLATED_SETUPTOOLS)} > {_BUILD_CONSTRAINTS}")
            constrained = f"--build-constraints {_BUILD_CONSTRAINTS} "
        lines.append(f"{UV_PIP} {constrained}" + " ".join(shlex.quote(p) for p in packages))
    repo_step = repo_install_lines(task, pristine)
    if not task.env.install:
        lines += _requirements_lines(pristine)
    build_requires = _build_requirements(pristine) if repo_step else []
    if build_requires:
        lines += held_install_lines(build_requires)
    if repo_step:
        lines.append(f". {VENV_DIR}/bin/activate")
        lines += repo_step
    return "\n".join(lines) + "\n"


#: What isolated sdist builds may use where the spec pins an older setuptools (see `old_setuptools_pin`).
ISOLATED_SETUPTOOLS = "setuptools<=40.8.0"
_BUILD_CONSTRAINTS = "/tmp/repogym-build-constraints.txt"


def old_setuptools_pin(requirements: list[str]) -> bool:
    """The requirements pin a setuptools older than 40.8.0, the oldest an isolated build can run (PEP 517's
    fallback backend, `setuptools.build_meta`, came in it).

    The pip of such a spec's era built a source distribution without pyproject.toml with the environment's own
    setuptools, the pinned one; uv builds every sdist in isolation, with the newest setuptools for the Python.
    Where the package relies on what later setuptools removed (MarkupSafe 1.0 imports `Feature`, gone in 46:
    astropy 0.1-1.3's rule), the build fails. So those specs' sdists are built with the oldest setuptools an
    isolated build can use, 40.8.0: the nearest to the pin that can run.

    >>> old_setuptools_pin(["setuptools==38.2.4", "numpy==1.16.0"]), old_setuptools_pin(["setuptools==68.0.0"])
    (True, False)
    >>> old_setuptools_pin(["setuptools>=30"]), old_setuptools_pin(["numpy"])
    (False, False)
    """
    for pin in exact_pins(requirements, ()):
        if pin.name == "setuptools":
            try:
                return any(Version(spec.version) < Version("40.8.0") for spec in pin.specifier)
            except InvalidVersion:
                return False
    return False


def names_package(requirements: list[str], name: str) -> bool:
    """Some requirement names the distribution `name` (compared as PyPI names are).

    >>> names_package(["pytest==7.4.0", "Pip>=24"], "pip"), names_package(["pipx"], "pip")
    (True, False)
    """
    wanted = canonicalize_name(name)
    for text in requirements:
        try:
            if canonicalize_name(Requirement(text).name) == wanted:
                return True
        except InvalidRequirement:
            continue
    return False


def held_install_lines(requirements: list[str]) -> list[str]:
    """Install each requirement with every distribution the environment holds kept at its version, or
    leave it out and say so: repogym's own steps never change a version the task's spec set."""
    held = "/tmp/repogym-held.txt"
    lines = [f"{UV_JAIL} pip freeze --python {VENV_DIR}/bin/python --exclude-editable > {held}"]
    for requirement in requirements:
        quoted = shlex.quote(requirement)
        lines.append(
            f"{UV_PIP} --constraint {held} {quoted} || echo 'repogym: build requirement not installed "
            f"(it would change a version the environment holds, or failed): '{quoted}"
        )
    return lines


def repo_install_lines(task: Task, pristine: Path) -> list[str]:
    """The install step that writes into the repo (run per commit, and again after a packaging patch):
    the task's install commands, else a detected editable install. [] when there is none."""
    if task.env.install:
        return list(task.env.install)
    if any((pristine / name).exists() for name in ("pyproject.toml", "setup.py", "setup.cfg")):
        extras = _test_extras(pristine)
        target = f".[{','.join(extras)}]" if extras else "."
        return [f"{UV_PIP} -e {shlex.quote(target)}"]
    return []


def repo_install_script(task: Task, pristine: Path) -> str:
    """The repo install step as a script ('' when there is none)."""
    lines = repo_install_lines(task, pristine)
    return "\n".join(["set -ex", f". {VENV_DIR}/bin/activate", *lines]) + "\n" if lines else ""


def _requirements_lines(pristine: Path) -> list[str]:
    found = sorted(pristine.glob("requirements*.txt")) + sorted(pristine.glob("requirements/*.txt"))
    return [f"{UV_PIP} -r {shlex.quote(str(path.relative_to(pristine)))}" for path in found]


def _build_requirements(pristine: Path) -> list[str]:
    """[build-system].requires of pyproject.toml, else setuptools and wheel for a setup.py project."""
    pyproject = pristine / "pyproject.toml"
    if pyproject.exists():
        try:
            requires = (
                tomllib.loads(pyproject.read_text(encoding="utf-8")).get("build-system", {}).get("requires")
            )
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            requires = None
        if isinstance(requires, list) and all(isinstance(r, str) for r in requires):
            return list(requires)
    return ["setuptools", "wheel"]


def _test_extras(pristine: Path) -> list[str]:
    declared: set[str] = set()
    pyproject = pristine / "pyproject.toml"
    if pyproject.exists():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
            declared |= set(data.get("project", {}).get("optional-dependencies", {}))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            pass
    setup_cfg = pristine / "setup.cfg"
    if setup_cfg.exists():
        parser = configparser.ConfigParser()
        try:
            parser.read(setup_cfg, encoding="utf-8")
            if parser.has_section("options.extras_require"):
                declared |= set(parser.options("options.extras_require"))
        except configparser.Error:
            pass
    return [extra for extra in _TEST_EXTRAS if extra in declared]


def build_environment(task: Task, view: DatedView | None = None) -> dict[str, str]:
    """Variables of every build step (never of test runs): uv's settings, the CA bundle for every
    installer, the package index the host is configured for, and exclude_newer (for pip, `view`: the
    dated view of the index that `run_build_step` serves, and uv's dates for late pins)."""
    env = {
        "UV_CACHE_DIR": _UV_CACHE_JAIL,
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_LINK_MODE": "copy",
        "UV_NO_PROGRESS": "1",
        "UV_COMPILE_BYTECODE": "1",  # the jail never writes .pyc files, so ship them
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    if host_ca_bundle() is not None:
        # Trust the machine's CA store (corporate proxies re-sign the package index's certificates): uv,
        # pip, requests, curl and Python's ssl module each read their own variable.
        env.update(
            UV_SYSTEM_CERTS="1",
            UV_NATIVE_TLS="1",
            SSL_CERT_FILE=_CA_JAIL,
            PIP_CERT=_CA_JAIL,
            REQUESTS_CA_BUNDLE=_CA_JAIL,
            CURL_CA_BUNDLE=_CA_JAIL,
        )
    wheels = offline_wheels()
    if wheels is not None:
        # uv has no variable for --no-index: offline, it still reads --find-links folders.
        env.update(UV_OFFLINE="1", UV_FIND_LINKS=_WHEELS_JAIL, PIP_NO_INDEX="1", PIP_FIND_LINKS=_WHEELS_JAIL)
    else:
        env.update(_host_index())
    cutoff = exclude_newer_timestamp(task.env.exclude_newer)
    if cutoff:
        env["UV_EXCLUDE_NEWER"] = cutoff
        if view is not None:
            # The view hides what came later from any pip; another index beside it would not.
            env["PIP_INDEX_URL"] = view.index_url
            env.pop("PIP_EXTRA_INDEX_URL", None)
            if view.uv_config is not None:
                env["UV_CONFIG_FILE"] = _UV_DATED_JAIL  # uv reads per-project dates from settings only
        elif wheels is None:  # a wheel folder has no upload dates: what it holds is what the build may use
            env["PIP_UPLOADED_PRIOR_TO"] = cutoff
    return env


def _host_index() -> dict[str, str]:
    """The host's index settings for the build's installers (URLs only: host paths are not visible)."""
    index = {k: v for k, v in os.environ.items() if k in _INDEX_VARIABLES and "file:" not in v}
    if "PIP_INDEX_URL" not in index and (index.get("UV_DEFAULT_INDEX") or index.get("UV_INDEX_URL")):
        index["PIP_INDEX_URL"] = index.get("UV_DEFAULT_INDEX") or index["UV_INDEX_URL"]
    return index


def upstream_index() -> str:
    """The index pip would read on this host: its configured index, else PyPI's."""
    return _host_index().get("PIP_INDEX_URL") or "https://pypi.org/simple/"


def host_ca_bundle() -> Path | None:
    """The machine's CA bundle: $SSL_CERT_FILE if it is a file, else the distribution's usual place."""
    for candidate in (os.environ.get("SSL_CERT_FILE", ""), *_CA_CANDIDATES):
        if candidate and Path(candidate).is_file():
            return Path(candidate).resolve()
    return None


def build_binds(pristine: Path, isolated: bool = True) -> tuple[Bind, ...]:
    """What every build step sees besides the repo and venv: uv, its cache, the CA bundle. (git works in the
    build from the checkout's own .git, which holds the commit's history: setuptools_scm reads it.)

    `isolated` False (the local backend, which runs uv as the invoking user): a uv cache of its own, so
    it never leaves files in the jails' cache that the sandbox uid cannot read.
    """

    wheels = offline_wheels()
    uv_cache = _uv_cache(isolated, wheels)
    if is_root():
        os.chown(uv_cache, SANDBOX_UID, SANDBOX_UID)
    binds = [Bind(Path(uv.find_uv_bin()), UV_JAIL), Bind(uv_cache, _UV_CACHE_JAIL, writable=True)]
    ca = host_ca_bundle()
    if ca is not None:
        binds.append(Bind(ca, _CA_JAIL))
    if wheels is not None:
        binds.append(Bind(wheels, _WHEELS_JAIL))
    return tuple(binds)


def _uv_cache(isolated: bool, wheels: Path | None) -> Path:
    """uv's cache for a build. Offline, one per content of the wheel folder (area `uv-cache-wheels`): uv keeps a
    wheel by its file name (an index's wheels never change) and, offline, resolves from whatever its cache
    holds, so a shared cache would install a wheel rebuilt in place as it was, and packages the folder lacks."""
    if wheels is None:
        return cache_dir("uv-cache" if isolated else "uv-cache-local")
    digest = hashlib.sha256(json.dumps(wheels_listing(wheels)).encode()).hexdigest()[:16]
    return cache_dir("uv-cache-wheels", digest if isolated else f"local-{digest}")


def run_build_step(
    sandbox: Sandbox, task: Task, script: str, mounts: Mounts, log_path: Path, what: str
) -> ExecResult:
    """Run a build script in the jail, keep its log; raises EnvBuildError with the log's tail on failure.

    With `exclude_newer` set, pip reads the index through a dated view served for this step only, and
    the task's exact pins are let through it (a pin the index lacks fails here, naming its field)."""
    cutoff = exclude_newer_timestamp(task.env.exclude_newer)
    dated = bool(cutoff) and mounts.network and offline_wheels() is None
    pins = exact_pins(task.env.packages, task.env.install) if dated else ()
    with dated_view(upstream_index(), cutoff, pins, host_ca_bundle()) if dated else nullcontext() as view:
        if view is not None and view.uv_config is not None:
            mounts = replace(mounts, extra=(*mounts.extra, Bind(view.uv_config, _UV_DATED_JAIL)))
        result = sandbox.run(script, mounts, BUILD_LIMITS, env=build_environment(task, view))
    late = " ".join(view.let_through) if view is not None else ""
    late = f"# exact pins let through past exclude_newer: {late}\n" if late else ""
    log_path.write_text(f"# {what} script\n{script}\n{late}# output\n{result.output}\n", encoding="utf-8")
    if not result.ok:
        tail = "\n".join(result.output.strip().splitlines()[-15:])
        why = "timed out" if result.timed_out else f"exit code {result.exit_code}"
        # A compiler's missing header sits far above the tail: the package to install is said on its own line.
        # So is a download from a host the jail cannot reach (a setup.py cloning a submodule from GitHub):
        # the tail is then the installer's traceback, which names neither.
        needs = find_system_needs(result.output)
        missing = f"\n{LACKS}: {describe_needs(needs)}" if needs else ""
        if not needs and (reached := needs_network(result.output)):
            missing = (
                f"\nthe build tried to reach a host the jail does not (only the package index): {reached}"
            )
        raise EnvBuildError(f"{what} for {task.repo} failed ({why}); log {log_path}; tail:\n{tail}{missing}")
    return result


def env_stamp(venv: Path) -> str:
    """Which build of an environment this is (its folder's inode and change time): install layers made
    over one build are not used over another."""
    info = venv.stat()
    return f"{info.st_ino}-{info.st_ctime_ns}"


def install_layer_dir(key: str, pristine: Path, overlay: bool) -> Path:
    """Where the install layers of environment `key` at the commit of `pristine` are kept."""
    return cache_dir("installs") / f"{key}-{pristine.name}-{'overlay' if overlay else 'copy'}"


class EnvBuilder:
    """Builds (once) and finds environments; concurrent builds of one key build once."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox

    def ensure(self, task: Task, pristine: Path) -> EnvHandle:
        """The task's environment, built if needed; raises EnvBuildError with the log's tail on failure."""

        interpreter = pick_interpreter(task.env.python)
        key = env_key(task, pristine, interpreter)
        # The local backend builds with host paths in the venv: never the same folder as the jails' envs.
        envs = cache_dir("envs" if self.sandbox.isolated else "envs-local")
        venv, log_path = envs / key, envs / f"{key}.log"
        if (envs / f"{key}.ok").exists():
            return EnvHandle(key, venv, interpreter, log_path)
        with FileLock(str(envs / f"{key}.lock")):
            if (envs / f"{key}.ok").exists():
                return EnvHandle(key, venv, interpreter, log_path)
            started = time.perf_counter()
            self._build(task, pristine, interpreter, key, venv, log_path)
            (envs / f"{key}.ok").touch()
            return EnvHandle(key, venv, interpreter, log_path, time.perf_counter() - started)

    def _build(
        self, task: Task, pristine: Path, interpreter: Interpreter, key: str, venv: Path, log_path: Path
    ) -> None:
        script = install_script(task, pristine, interpreter)
        staging = Path(tempfile.mkdtemp(prefix=venv.name + ".", dir=venv.parent))
        if is_root():
            os.chown(staging, SANDBOX_UID, SANDBOX_UID)
        overlay = self.sandbox.supports_overlay
        layer = EpisodeLayer.create(pristine, overlay=overlay)
        try:
            mounts = Mounts(
                workspace=layer.workspace,
                tmp=layer.tmp,
                venv=staging,
                venv_writable=True,
                interpreter_prefix=interpreter.prefix,
                overlay=layer.overlay(),
                network=True,
                extra=build_binds(pristine, self.sandbox.isolated),
            )
            run_build_step(self.sandbox, task, script, mounts, log_path, "environment build")
            if venv.exists():
                shutil.rmtree(venv)
            os.replace(staging, venv)
            if self.sandbox.isolated and repo_install_lines(task, pristine):
                folder = install_layer_dir(key, pristine, overlay)
                self._keep_install_layer(layer, folder, env_stamp(venv))
        finally:
            layer.close()
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)

    @staticmethod
    def _keep_install_layer(layer: EpisodeLayer, folder: Path, stamp: str) -> None:
        """What the build's install wrote in the repo becomes its commit's install layer (installs.py
        finishes it), so the commit the environment was built at pays for no second install."""
        if folder.exists():
            shutil.rmtree(folder)
        folder.with_name(folder.name + ".ok").unlink(missing_ok=True)
        folder.mkdir()
        os.rename(layer.root / ("upper" if layer.uses_overlay else "copy"), folder / "repo")
        (folder / "from-build").write_text(stamp)
