"""Python environments: one per (repo, environment key), built once with uv, used read-only.

The key hashes the repo, the Python version, the task's install commands and
packages, and the repository's dependency files at the commit, so tasks whose
dependencies did not change share one environment. The build runs inside the
jail (with network, for the package index) with a throwaway copy of the
checkout at /testbed and the environment at its fixed in-jail path, so the
repo's editable install points at /testbed in every later episode.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from repogym.errors import EnvBuildError
from repogym.sandbox.base import VENV_DIR, Bind, Limits, Mounts, Sandbox
from repogym.sandbox.bwrap import SANDBOX_UID, is_root
from repogym.sandbox.cache import cache_dir
from repogym.sandbox.workspace import EpisodeLayer
from repogym.task import Task

_DEP_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "requirements*.txt", "requirements/*.txt", "tox.ini")
_TEST_EXTRAS = ("test", "tests", "testing", "dev")
_UV_JAIL = "/opt/repogym/bin/uv"
_UV_CACHE_JAIL = "/opt/repogym/uv-cache"
BUILD_LIMITS = Limits(wall_s=900, cpu_s=1800, memory_mb=8192, processes=512)


@dataclass(frozen=True)
class Interpreter:
    version: str
    """Full version, e.g. 3.9.18."""
    executable: Path
    prefix: Path


@dataclass(frozen=True)
class EnvHandle:
    """A built environment, ready to bind read-only at VENV_DIR."""

    key: str
    venv: Path
    interpreter: Interpreter
    log_path: Path
    build_s: float = 0.0
    """Seconds the build took (0 when it came from the cache)."""


def find_interpreters() -> list[Interpreter]:
    """CPython installations on this machine: pyenv's, the one running repogym, and /usr/bin's."""
    import sys

    found: dict[str, Interpreter] = {}
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates = sorted(glob.glob(str(pyenv_root / "versions" / "*" / "bin" / "python[23].*")))
    candidates += [
        sys.executable,
        *sorted(glob.glob("/usr/bin/python3.*")),
        *sorted(glob.glob("/usr/local/bin/python3.*")),
    ]
    for raw in candidates:
        path = Path(raw)
        match = re.fullmatch(r"python(\d+\.\d+)", path.name)
        if raw != sys.executable and not match:
            continue
        if path.parent.parent.name.count(".") == 2 and "versions" in path.parts:
            version = path.parent.parent.name
            prefix = path.parent.parent
        elif raw == sys.executable:
            version = ".".join(map(str, sys.version_info[:3]))
            prefix = Path(sys.base_prefix)
            path = Path(sys._base_executable) if hasattr(sys, "_base_executable") else path
        else:
            version = match.group(1) if match else ""
            prefix = path.parent.parent
        found.setdefault(version, Interpreter(version, path.resolve(), prefix.resolve()))
    return sorted(found.values(), key=lambda i: [int(p) for p in re.findall(r"\d+", i.version)])


def pick_interpreter(wanted: str) -> Interpreter:
    """The newest interpreter whose version starts with `wanted` ('' = the one running repogym)."""
    import sys

    interpreters = find_interpreters()
    if not wanted:
        wanted = ".".join(map(str, sys.version_info[:3]))
    matches = [i for i in interpreters if i.version == wanted or i.version.startswith(wanted + ".")]
    if not matches:
        have = ", ".join(i.version for i in interpreters) or "none"
        raise EnvBuildError(
            f"Python {wanted} is not installed on this machine (found: {have}); "
            "repogym cannot download interpreters here"
        )
    return matches[-1]


def env_key(task: Task, pristine: Path, interpreter: Interpreter) -> str:
    """What decides the environment: repo, Python, the task's env spec and the dependency files.

    Of pyproject.toml only the parts that change what gets installed count (build system,
    dependencies, extras, requires-python, build-tool tables), so a version bump or a tool
    setting does not force a rebuild. Other dependency files count whole.
    """
    digest = hashlib.sha256()
    spec = {"repo": task.repo, "python": interpreter.version, "env": task.env.to_dict(), "v": 2}
    digest.update(json.dumps(spec, sort_keys=True).encode())
    for pattern in _DEP_FILES:
        for path in sorted(pristine.glob(pattern)):
            content = _pyproject_deps(path) if path.name == "pyproject.toml" else path.read_bytes()
            digest.update(path.name.encode() + b"\0" + content + b"\0")
    return digest.hexdigest()[:20]


def _pyproject_deps(path: Path) -> bytes:
    """The install-relevant tables of a pyproject.toml, canonically serialised (the whole file if unreadable).

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> a, b = folder / "a.toml", folder / "b.toml"
    >>> _ = a.write_text('[project]\\nname = "x"\\nversion = "1.0"\\ndependencies = ["attrs"]\\n')
    >>> _ = b.write_text('[project]\\nname = "x"\\nversion = "2.0"\\ndependencies = ["attrs"]\\n')
    >>> _pyproject_deps(a) == _pyproject_deps(b)
    True
    """
    raw = path.read_bytes()
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return raw
    project = data.get("project", {})
    tool = data.get("tool", {})
    relevant = {
        "build-system": data.get("build-system"),
        "project": {
            k: project.get(k)
            for k in (
                "name",
                "dependencies",
                "optional-dependencies",
                "requires-python",
                "dynamic",
                "scripts",
                "entry-points",
            )
        },
        "tool": {k: tool.get(k) for k in ("setuptools", "poetry", "hatch", "flit", "pdm")},
    }
    return json.dumps(relevant, sort_keys=True, default=str).encode()


def install_script(task: Task, pristine: Path, interpreter: Interpreter) -> str:
    """The shell script that builds the environment (printed at the top of the build log)."""
    uv = f"{_UV_JAIL} pip install --python {VENV_DIR}/bin/python"
    lines = ["set -ex"]
    major_minor = tuple(int(p) for p in interpreter.version.split(".")[:2])
    if major_minor >= (3, 8):
        lines.append(f"{_UV_JAIL} venv --quiet --python {interpreter.executable} {VENV_DIR}")
    else:
        lines.append(f"{interpreter.executable} -m venv {VENV_DIR}")
    packages = ["pytest", *task.env.packages] if task.env.log_parser == "pytest" else list(task.env.packages)
    if packages:
        lines.append(f"{uv} " + " ".join(_quote(p) for p in packages))
    if task.env.install:
        lines.append(f". {VENV_DIR}/bin/activate")
        lines += list(task.env.install)
    else:
        lines += _detected_install(pristine, uv)
    return "\n".join(lines) + "\n"


def _detected_install(pristine: Path, uv: str) -> list[str]:
    lines = []
    for requirements in sorted(pristine.glob("requirements*.txt")) + sorted(
        pristine.glob("requirements/*.txt")
    ):
        lines.append(f"{uv} -r {_quote(str(requirements.relative_to(pristine)))}")
    if any((pristine / name).exists() for name in ("pyproject.toml", "setup.py", "setup.cfg")):
        extras = _test_extras(pristine)
        target = f".[{','.join(extras)}]" if extras else "."
        lines.append(f"{uv} -e {_quote(target)}")
    return lines


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
        import configparser

        parser = configparser.ConfigParser()
        try:
            parser.read(setup_cfg, encoding="utf-8")
            if parser.has_section("options.extras_require"):
                declared |= set(parser.options("options.extras_require"))
        except configparser.Error:
            pass
    return [extra for extra in _TEST_EXTRAS if extra in declared]


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


class EnvBuilder:
    """Builds (once) and finds environments; concurrent builds of one key build once."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox

    def ensure(self, task: Task, pristine: Path) -> EnvHandle:
        """The task's environment, built if needed; raises EnvBuildError with the log's tail on failure."""
        import time

        interpreter = pick_interpreter(task.env.python)
        key = env_key(task, pristine, interpreter)
        envs = cache_dir("envs")
        venv, log_path = envs / key, envs / f"{key}.log"
        if (envs / f"{key}.ok").exists():
            return EnvHandle(key, venv, interpreter, log_path)
        with FileLock(str(envs / f"{key}.lock")):
            if (envs / f"{key}.ok").exists():
                return EnvHandle(key, venv, interpreter, log_path)
            started = time.perf_counter()
            self._build(task, pristine, interpreter, venv, log_path)
            (envs / f"{key}.ok").touch()
            return EnvHandle(key, venv, interpreter, log_path, time.perf_counter() - started)

    def _build(
        self, task: Task, pristine: Path, interpreter: Interpreter, venv: Path, log_path: Path
    ) -> None:
        script = install_script(task, pristine, interpreter)
        staging = Path(tempfile.mkdtemp(prefix=venv.name + ".", dir=venv.parent))
        uv_cache = cache_dir("uv-cache")
        if is_root():
            for path in (staging, uv_cache):
                os.chown(path, SANDBOX_UID, SANDBOX_UID)
        layer = EpisodeLayer.create(pristine, overlay=self.sandbox.supports_overlay)
        try:
            import uv

            mounts = Mounts(
                workspace=layer.workspace,
                tmp=layer.tmp,
                interpreter_prefix=interpreter.prefix,
                overlay=layer.overlay(),
                network=True,
                extra=(
                    Bind(staging, VENV_DIR, writable=True),
                    Bind(Path(uv.find_uv_bin()), _UV_JAIL),
                    Bind(uv_cache, _UV_CACHE_JAIL, writable=True),
                ),
            )
            env = {
                "UV_CACHE_DIR": _UV_CACHE_JAIL,
                "UV_PYTHON_DOWNLOADS": "never",
                "UV_LINK_MODE": "copy",
                "UV_NO_PROGRESS": "1",
                "UV_COMPILE_BYTECODE": "1",  # the jail never writes .pyc files, so ship them
                # Trust the machine's CA store (corporate proxies re-sign the package index's certificates).
                "UV_SYSTEM_CERTS": "1",
                "UV_NATIVE_TLS": "1",
                "SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt",
                **{
                    k: v
                    for k, v in os.environ.items()
                    if k in ("UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_DEFAULT_INDEX")
                },
            }
            result = self.sandbox.run(script, mounts, BUILD_LIMITS, env=env)
            log_path.write_text(f"# build script\n{script}\n# output\n{result.output}\n", encoding="utf-8")
            if not result.ok:
                tail = "\n".join(result.output.strip().splitlines()[-15:])
                why = "timed out" if result.timed_out else f"exit code {result.exit_code}"
                raise EnvBuildError(
                    f"environment build for {task.repo} failed ({why}); log {log_path}; tail:\n{tail}"
                )
            if venv.exists():
                shutil.rmtree(venv)
            os.replace(staging, venv)
        finally:
            layer.close()
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
