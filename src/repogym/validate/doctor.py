"""What a task file or a repository needs from this machine, and what of it is missing (`repogym doctor`).

Three things decide whether an environment can be built here: the tools repogym itself runs (git,
bubblewrap) and the ones builds run in the jail (a C compiler, pkg-config, cargo: the jail sees the host's
/usr); a Python the commit allows (`pythons.choose_python` over the commit's packaging files, as validation
chooses, or the task's own env.python); and the C libraries and programs its build asks for, named as Debian
packages (`repogym.sandbox.syspackages`). The last comes from three places, each said in the report:

- a recorded build failure: validation's partial file (beside the task file, or `partial`), whose
  env_build_failed records keep the build's words and the path of its log;
- a dry check of each commit, without building: the `#include <...>` lines (and Cython's `cdef extern from`)
  of its C, C++ and Cython sources whose header the table knows and this machine does not have (a header the
  repository ships itself does not count), and sources that need a compiler or cargo the jail lacks;
- the tasks' own `env.system_packages` (what SWE-bench's images apt-get: graphviz, ffmpeg, texlive), those
  dpkg does not record as installed ("task spec"; every one of them, said so, where dpkg cannot tell).

A dry check sees what the sources name, not what a setup.py probes for at build time; a build that
fails that way is named once it has failed (`repogym env check`, `repogym validate`).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import shutil
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repogym.errors import DatasetError, EnvBuildError, RepoSourceError
from repogym.files import read_jsonl_records
from repogym.hostgit import run_git
from repogym.reposource import resolve_repo_source
from repogym.sandbox.interpreters import find_interpreters, pick_interpreter
from repogym.sandbox.syspackages import (
    NeedKind,
    SystemNeed,
    find_system_needs,
    installed_packages,
    package_for,
)
from repogym.task import Task
from repogym.validate.diagnose import read_log
from repogym.validate.outcome import CandidateOutcome, Verdict
from repogym.validate.pythons import choose_python

#: The jail's PATH without the environment (sandbox/bwrap.py's jail_environment): where builds find programs.
_JAIL_PATH = "/usr/local/bin:/usr/bin:/bin"
_INCLUDE_ROOTS = (Path("/usr/include"), Path("/usr/local/include"))
_SOURCES = ("*.c", "*.h", "*.cc", "*.cpp", "*.cxx", "*.hpp", "*.pyx", "*.pxd", "*.pxi")
_INCLUDE = re.compile(r'^\s*(?:#\s*include\s*<([^>]+)>|cdef\s+extern\s+from\s+["<]([^">]+)[">])')
_GREP_LINE = re.compile(r"^[^:]+:(.+?):(\d+):(.*)$")
_PACKAGING_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "tox.ini")
_BUILD_LOG = re.compile(r"; log (\S+);")
_BUILD_REPO = re.compile(r" for (\S+) failed \(")


@dataclass(frozen=True)
class ToolCheck:
    """One program repogym or a build runs, and where it was found ('' when it was not)."""

    name: str
    package: str
    needed_for: str
    required: bool
    """Needed whatever the tasks (git, bubblewrap); the others only by repositories whose sources ask."""
    path: str


@dataclass(frozen=True)
class PythonNeed:
    """The installed Python that serves some tasks of a repository ('' when none does), and why."""

    python: str
    tasks: int
    detail: str
    """Why that one (the commit's requires-python, classifiers, date; or env.python), or why none fits."""


@dataclass(frozen=True)
class PackageNeed:
    """A Debian package (None when the table does not know one) some tasks of a repository need."""

    package: str | None
    need: str
    """What is missing, in words: 'header gdal.h not found'."""
    source: str
    """"dry check", "recorded build failure" or "task spec" (`env.system_packages`)."""
    evidence: str
    tasks: int


@dataclass(frozen=True)
class RepoNeeds:
    repo: str
    source: str
    tasks: int
    commits: int
    pythons: tuple[PythonNeed, ...] = ()
    packages: tuple[PackageNeed, ...] = ()
    unchecked: str = ""
    """Why the repository's commits were not read ('' when they were)."""

    @property
    def ok(self) -> bool:
        return not self.unchecked and all(p.python for p in self.pythons) and not self.packages


@dataclass(frozen=True)
class DoctorReport:
    target: str
    installed_pythons: tuple[str, ...]
    tools: tuple[ToolCheck, ...]
    repos: tuple[RepoNeeds, ...]

    @property
    def missing_packages(self) -> tuple[str, ...]:
        """The Debian packages to install: required tools that are missing, then what the repositories need."""
        tools = [tool.package for tool in self.tools if tool.required and not tool.path]
        needed = [need.package for repo in self.repos for need in repo.packages if need.package]
        return tuple(dict.fromkeys([*tools, *needed]))

    @property
    def ok(self) -> bool:
        return all(tool.path or not tool.required for tool in self.tools) and all(r.ok for r in self.repos)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "missing_packages": list(self.missing_packages), **dataclasses.asdict(self)}


def host_tools() -> tuple[ToolCheck, ...]:
    """git and bubblewrap on the host's PATH (repogym runs them); the build tools on the jail's."""

    def found(name: str, jail: bool) -> str:
        return shutil.which(name, path=_JAIL_PATH if jail else None) or ""

    return (
        ToolCheck("git", "git", "mirrors and checkouts", True, found("git", False)),
        ToolCheck("bwrap", "bubblewrap", "the default sandbox", True, found("bwrap", False)),
        ToolCheck("gcc", "build-essential", "C extensions", False, found("gcc", True)),
        ToolCheck("pkg-config", "pkg-config", "finding C libraries", False, found("pkg-config", True)),
        ToolCheck("cargo", "cargo", "Rust extensions", False, found("cargo", True)),
    )


def diagnose_tasks(
    tasks: Sequence[Task], target: str, repos_dir: str | None = None, partial: Path | None = None
) -> DoctorReport:
    """What the tasks need, per repository; `partial`: validation's partial file with recorded failures."""
    tools = host_tools()
    recorded = _recorded_needs(partial, {task.instance_id: task.repo for task in tasks}) if partial else {}
    by_repo: dict[str, list[Task]] = {}
    for task in tasks:
        by_repo.setdefault(task.repo, []).append(task)
    repos = tuple(
        _repo_needs(repo, group, repos_dir, tools, recorded.get(repo, [])) for repo, group in by_repo.items()
    )
    return DoctorReport(target, _installed(), tools, repos)


def diagnose_repo(repo: Path, commit: str = "HEAD") -> DoctorReport:
    """What the clone at `repo` needs at `commit` (a dry check: nothing is built)."""
    found = run_git(repo, "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}")
    if not (repo / ".git").exists() or found.returncode != 0:
        raise RepoSourceError(f"{repo}: not a git clone with a commit {commit!r}")
    task = Task(f"{repo.name}@{commit}", f"local/{repo.name}", found.stdout.decode().strip(), "",
                repo_source=str(repo))  # fmt: skip
    return diagnose_tasks([task], str(repo))


def _installed() -> tuple[str, ...]:
    return tuple(sorted({i.version for i in find_interpreters()}, key=_version_key))


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version))


def _repo_needs(
    repo: str,
    tasks: list[Task],
    repos_dir: str | None,
    tools: tuple[ToolCheck, ...],
    recorded: list[PackageNeed],
) -> RepoNeeds:
    """One repository's row: its tasks' Pythons, and its recorded and dry-checked needs (commits read once)."""
    per_commit = Counter(task.base_commit for task in tasks)
    counts = (repo, "", len(tasks), len(per_commit))
    recorded = [*recorded, *spec_needs(tasks)]
    try:
        source = Path(resolve_repo_source(tasks[0], repos_dir))
    except RepoSourceError as exc:
        return RepoNeeds(*counts, packages=tuple(recorded), unchecked=str(exc))
    if not (source / ".git").exists() and not (source / "HEAD").exists():
        why = f"{source} is not a local clone: clone it and pass --repos-dir to check its commits"
        return RepoNeeds(*counts, packages=tuple(recorded), unchecked=why)
    installed = [i.version for i in find_interpreters()]
    pythons = Counter(_python_need(source, task, installed) for task in tasks)
    dry: dict[tuple[str | None, str], tuple[str, int]] = {}
    for commit, count in per_commit.items():
        for need, evidence in dry_check(source, commit, tools):
            first, seen = dry.get((need.package, need.describe()), (evidence, 0))
            dry[(need.package, need.describe())] = (first, seen + count)
    checked = [PackageNeed(package, what, "dry check", evidence, count)
               for (package, what), (evidence, count) in dry.items()]  # fmt: skip
    return RepoNeeds(
        repo, str(source), len(tasks), len(per_commit),
        tuple(PythonNeed(python, count, detail) for (python, detail), count in pythons.items()),
        tuple(_merge([*recorded, *checked])),
    )  # fmt: skip


def spec_needs(tasks: Sequence[Task]) -> list[PackageNeed]:
    """The Debian packages the tasks' `env.system_packages` name (what SWE-bench's images install with
    apt-get: graphviz, ffmpeg, texlive) that this machine does not have installed, as dpkg-query reports it;
    each once, with how many tasks name it. Where dpkg-query cannot run (not a Debian system), every named
    package is reported, said so in its words."""
    wanted = Counter(package for task in tasks for package in dict.fromkeys(task.env.system_packages))
    if not wanted:
        return []
    installed = installed_packages(wanted)
    return [
        PackageNeed(
            package,
            "not installed" if installed is not None else "not checked (no dpkg-query on this machine)",
            "task spec",
            "env.system_packages (SWE-bench's image apt-gets it; repogym never runs apt-get)",
            count,
        )
        for package, count in wanted.items()
        if installed is None or package not in installed
    ]


def _python_need(source: Path, task: Task, installed: list[str]) -> tuple[str, str]:
    """(the installed version that serves the task or '', why) as validation would choose it."""
    if task.env.python:
        try:
            return pick_interpreter(task.env.python).version, f"env.python {task.env.python}"
        except EnvBuildError as exc:
            return "", str(exc)
    files = {name: text for name in _PACKAGING_FILES if (text := _show(source, task.base_commit, name))}
    date = run_git(source, "log", "-1", "--format=%cI", task.base_commit).stdout.decode().strip()
    try:
        return choose_python(files, date or task.created_at, installed)
    except EnvBuildError as exc:  # Python2OnlyError too
        return "", str(exc)


def _show(source: Path, commit: str, path: str) -> str:
    done = run_git(source, "show", f"{commit}:{path}")
    return done.stdout.decode("utf-8", errors="replace") if done.returncode == 0 else ""


def dry_check(source: Path, commit: str, tools: Iterable[ToolCheck]) -> list[tuple[SystemNeed, str]]:
    """What the commit's sources need that this machine lacks, each with the line that shows it."""
    listed = run_git(source, "ls-tree", "-r", "--name-only", commit).stdout.decode("utf-8", errors="replace")
    files = listed.splitlines()
    missing_tools = {tool.name: tool for tool in tools if not tool.path}
    found: list[tuple[SystemNeed, str]] = []
    compiled = next((f for f in files if f.endswith((".c", ".cc", ".cpp", ".cxx", ".pyx"))), "")
    if compiled and "gcc" in missing_tools:
        found.append(
            (SystemNeed(NeedKind.COMMAND, "gcc", "build-essential", ""), f"{compiled}: compiled source")
        )
    rust = next((f for f in files if f.rsplit("/", 1)[-1] == "Cargo.toml"), "")
    if rust and "cargo" in missing_tools:
        found.append((SystemNeed(NeedKind.COMMAND, "cargo", "cargo", ""), f"{rust}: a Rust crate"))
    grep = run_git(source, "grep", "-I", "-n", "-E", r"^\s*(#\s*include\s*<|cdef\s+extern\s+from)", commit,
                   "--", *_SOURCES)  # fmt: skip
    shipped = {f.rsplit("/", 1)[-1] for f in files}
    seen: set[str] = set()
    for line in grep.stdout.decode("utf-8", errors="replace").splitlines():
        hit = _GREP_LINE.match(line)  # <commit>:<path>:<line number>:<text>
        if hit is None:
            continue
        path, number, text = hit.groups()
        match = _INCLUDE.match(text)
        header = (match.group(1) or match.group(2)).strip() if match else ""
        if not header or header in seen:
            continue
        seen.add(header)
        package = package_for(NeedKind.HEADER, header)
        if package and header.rsplit("/", 1)[-1] not in shipped and not header_present(header):
            need = SystemNeed(NeedKind.HEADER, header, package, text.strip())
            found.append((need, f"{path}:{number}: {text.strip()}"))
    return found


def header_present(header: str) -> bool:
    """Whether a build here could find `header`: under the system include folders (at any depth, as
    libxml2's and gdal's sit one folder down) or an installed Python's include folder."""
    return any(known == header or known.endswith("/" + header) for known in _system_headers())


@functools.lru_cache(maxsize=1)
def _system_headers() -> frozenset[str]:
    roots = [*_INCLUDE_ROOTS, *(i.prefix / "include" for i in find_interpreters())]
    found: set[str] = set()
    for root in roots:
        for folder, _dirs, names in os.walk(root):
            relative = os.path.relpath(folder, root)
            found.update(name if relative == "." else f"{relative}/{name}" for name in names)
    return frozenset(found)


def _recorded_needs(partial: Path, repos_of: dict[str, str]) -> dict[str, list[PackageNeed]]:
    """Per repository, what validation's recorded environment-build failures show missing."""
    found: dict[str, dict[tuple[str | None, str], tuple[str, int]]] = {}
    for record in read_jsonl_records(partial):
        try:
            outcome = CandidateOutcome.from_record(record, str(partial))
        except DatasetError:
            continue  # another kind of file: it records no build
        if outcome.verdict is not Verdict.ENV_BUILD_FAILED:
            continue
        log = _BUILD_LOG.search(outcome.detail)
        build_repo = _BUILD_REPO.search(outcome.detail)
        repo = repos_of.get(outcome.instance_id) or (build_repo.group(1) if build_repo else "")
        words = (read_log(log.group(1)) if log else "") or outcome.detail
        for need in find_system_needs(words):
            key = (need.package, need.describe())
            evidence, count = found.setdefault(repo, {}).get(key, (need.evidence, 0))
            found[repo][key] = (evidence, count + 1)
    return {
        repo: [PackageNeed(package, what, "recorded build failure", evidence, count)
               for (package, what), (evidence, count) in needs.items()]
        for repo, needs in found.items()
    }  # fmt: skip


def _merge(needs: list[PackageNeed]) -> list[PackageNeed]:
    """One entry per (package, what is missing): the first, so a recorded failure wins over a dry check."""
    merged: dict[tuple[str | None, str], PackageNeed] = {}
    for need in needs:
        merged.setdefault((need.package, need.need), need)
    return list(merged.values())
