"""Shared parts of the sandbox benchmarks: the machine line, a private cache, statistics, the big repo.

Every benchmark runs against a REPOGYM_CACHE created for it in a temporary
folder (never the user's cache), and on a repository generated here with the
git CLI: a flat package of ~1,200 small modules with a pytest suite and a few
commits, big enough that a per-file cost shows.
"""

from __future__ import annotations

import contextlib
import datetime
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from repogym.task import Source, Task

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
}


# -- statistics and tables ------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation between closest ranks.

    >>> percentile([1, 2, 3, 4], 50)
    2.5
    >>> percentile([5.0], 95)
    5.0
    >>> percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 95)
    9.55
    """
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return round(ordered[low] + (ordered[high] - ordered[low]) * (rank - low), 12)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub markdown table; numeric-looking columns are right-aligned.

    >>> print(markdown_table(["what", "ms"], [["reset", "4.1"]]))
    | what | ms |
    | --- | ---: |
    | reset | 4.1 |
    """

    def _numeric(column: int) -> bool:
        cells = [str(row[column]) for row in rows]
        return bool(cells) and all(
            c.replace(".", "").replace(",", "").rstrip("x%").lstrip("-").isdigit() for c in cells
        )

    align = ["---:" if _numeric(i) else "---" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def ms(seconds: float) -> str:
    """Seconds as milliseconds with a sensible number of digits.

    >>> ms(0.0041234), ms(0.25), ms(1.5)
    ('4.12', '250', '1500')
    """
    value = seconds * 1000
    return f"{value:.2f}" if value < 10 else f"{value:.1f}" if value < 100 else f"{value:.0f}"


# -- the machine --------------------------------------------------------------------------------


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _version(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return "absent"
    return out.split()[-1] if out else "absent"


def machine_line() -> str:
    """One line naming the machine, for the header of each result table."""
    user = "root (overlayfs episodes)" if os.geteuid() == 0 else "not root (copied episodes)"
    return (
        f"{datetime.date.today()}: {os.cpu_count()} cores (`nproc`), {cpu_model()}, "
        f"Linux {platform.release()}, Python {sys.version.split()[0]}, git {_version(['git', '--version'])}, "
        f"bubblewrap {_version(['bwrap', '--version'])}, {user}, filesystem of the cache: "
        f"{_filesystem(tempfile.gettempdir())}, load average at the end {load_average()}"
    )


def load_average() -> str:
    """The 1-minute load average: on a shared machine it explains much of the spread."""
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "unknown"


def _filesystem(path: str) -> str:
    out = subprocess.run(
        ["df", "--output=fstype", path], capture_output=True, text=True, check=False
    ).stdout.split()
    return out[-1] if out else "unknown"


# -- a private cache ------------------------------------------------------------------------------


@contextlib.contextmanager
def private_cache(keep: bool = False) -> Iterator[Path]:
    """A temporary folder holding REPOGYM_CACHE and scratch space; removed afterwards unless `keep`."""
    scratch = Path(tempfile.mkdtemp(prefix="repogym-bench-"))
    cache = scratch / "cache"
    cache.mkdir()
    previous = os.environ.get("REPOGYM_CACHE")
    os.environ["REPOGYM_CACHE"] = str(cache)
    try:
        yield scratch
    finally:
        if previous is None:
            os.environ.pop("REPOGYM_CACHE", None)
        else:
            os.environ["REPOGYM_CACHE"] = previous
        if keep:
            print(f"(kept {scratch})", file=sys.stderr)
        else:
            shutil.rmtree(scratch, ignore_errors=True)


def wait_for_background_deletions() -> None:
    """Join the threads that delete discarded episode layers (so that disk figures are settled)."""
    for thread in threading.enumerate():
        if thread.name == "repogym-discard":
            thread.join()


def disk_kib(*paths: Path) -> int:
    """KiB actually allocated under `paths`, each hardlinked inode counted once (one `du` call).

    Waits first for background deletions of closed or reset episodes, which would otherwise be counted.
    """
    wait_for_background_deletions()
    out = subprocess.run(["du", "-sck", *map(str, paths)], capture_output=True, text=True, check=True).stdout
    return int(out.strip().splitlines()[-1].split()[0])


# -- the generated repository ---------------------------------------------------------------------


@dataclass(frozen=True)
class BigRepo:
    path: Path
    commits: tuple[str, ...]
    """Oldest first: the initial tree, then small fixes (each a few modules and one test file)."""
    files: int
    tests: int


def git(repo: Path, *args: str) -> str:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(repo), **_GIT_ENV}
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout


_PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "biglib"
version = "0.1.0"
requires-python = ">=3.8"

[project.optional-dependencies]
test = ["pytest"]

[tool.setuptools.packages.find]
include = ["biglib*"]
"""


def _module(package: int, module: int, offset: int = 0) -> str:
    return (
        f'"""Module {module} of biglib.pkg{package:02d}: a small pure function and a constant."""\n\n'
        f"FACTOR = {package + 2}\n\n\n"
        f"def value(x):\n"
        f'    """Return x scaled by FACTOR plus the module number."""\n'
        f"    return x * FACTOR + {module + offset}\n"
    )


def _test_file(package: int, modules: int) -> str:
    lines = ["import importlib\n\nimport pytest\n\n"]
    lines.append(f"MODULES = [f'biglib.pkg{package:02d}.m{{i:03d}}' for i in range({modules})]\n\n\n")
    lines.append("@pytest.mark.parametrize('index', range(len(MODULES)))\n")
    lines.append("def test_value(index):\n")
    lines.append("    module = importlib.import_module(MODULES[index])\n")
    lines.append(f"    assert module.value(3) == 3 * {package + 2} + index\n\n\n")
    lines.append("def test_factor_is_shared():\n")
    lines.append("    factors = {importlib.import_module(name).FACTOR for name in MODULES}\n")
    lines.append(f"    assert factors == {{{package + 2}}}\n")
    return "".join(lines)


def make_big_repo(root: Path, packages: int = 40, modules: int = 30, fixes: int = 2) -> BigRepo:
    """A git repo with `packages` x `modules` modules, one test file per package, and `fixes` later commits.

    The first commit has a bug in one module of each of the first `fixes` packages; commit k+1 fixes
    package k's bug (one module) and touches its test file, like a small bug-fix PR.
    """
    repo = root / "biglib"
    package_root = repo / "biglib"
    (repo / "tests").mkdir(parents=True)
    package_root.mkdir()
    (repo / "pyproject.toml").write_text(_PYPROJECT)
    (repo / "README.md").write_text("# biglib\n\nA generated library for repogym's benchmarks.\n")
    (package_root / "__init__.py").write_text('"""biglib: generated."""\n')
    for package in range(packages):
        folder = package_root / f"pkg{package:02d}"
        folder.mkdir()
        (folder / "__init__.py").write_text(f'"""Package {package}."""\n')
        for module in range(modules):
            bug = 1 if (package < fixes and module == 0) else 0
            (folder / f"m{module:03d}.py").write_text(_module(package, module, offset=bug))
        (repo / "tests" / f"test_pkg{package:02d}.py").write_text(_test_file(package, modules))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "biglib: initial tree")
    commits = [git(repo, "rev-parse", "HEAD").strip()]
    for package in range(fixes):
        (package_root / f"pkg{package:02d}" / "m000.py").write_text(_module(package, 0))
        test = repo / "tests" / f"test_pkg{package:02d}.py"
        test.write_text(test.read_text() + f"\n\ndef test_fix_{package}():\n    assert True\n")
        git(repo, "commit", "-q", "-am", f"pkg{package:02d}: fix off-by-one in m000")
        commits.append(git(repo, "rev-parse", "HEAD").strip())
    files = int(git(repo, "ls-files").count("\n"))
    return BigRepo(repo, tuple(commits), files, packages * (modules + 1))


def big_task(repo: BigRepo, commit: str | None = None, instance_id: str = "bench__biglib-1") -> Task:
    """A task over the generated repo at `commit` (the last one by default)."""
    commit = commit or repo.commits[-1]
    return Task(
        instance_id=instance_id,
        repo="bench/biglib",
        base_commit=commit,
        patch="",
        FAIL_TO_PASS=["tests/test_pkg00.py::test_factor_is_shared"],
        PASS_TO_PASS=[],
        source=Source.SYNTHETIC,
        repo_source=str(repo.path),
        license="MIT",
    )
