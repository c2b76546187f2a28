"""Environment setup on real projects (issue 31): does `repogym env check` build and collect them?

The projects below were chosen before any was measured, to cover the packaging styles users have (setup.py,
setup.cfg, pyproject with setuptools / hatch / flit / poetry / pdm, requirements and lock files, tox / nox,
C and Rust extensions, src and flat layouts, namespace packages) and a few whose suites need a service that
is not there (named as such: their misses are the service's, not repogym's).

For each project: HEAD, then five commits spread evenly over the first-parent history of the three years
before HEAD. Each check is one `repogym env check CLONE --commit SHA --json` in its own process (nice 19)
against a private REPOGYM_CACHE, so the environments are built here, from the commit. HEADs are measured
first, then the historic commits round by round (every project's oldest, then the next...), so a run stopped
by --budget leaves a spread. Results go to a JSONL file, one row per (project, commit): rerunning skips the
rows already there. Disk is what the check added to the cache's envs/ and installs/ folders ("reused" when
an environment built for another commit served).

    # clone each project into REPOS/<dir> first (git clone MIRROR REPOS/<dir>), then:
    python bench/bench_setup.py --repos REPOS --work WORK --budget 3600
    python bench/bench_setup.py --repos REPOS --work WORK --table-only   # the tables from the results
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine_line, markdown_table

REPOGYM = [sys.executable, "-m", "repogym"]
HISTORIC = 5
YEARS = 3


@dataclass(frozen=True)
class Project:
    name: str
    """owner/name on GitHub."""
    directory: str
    """The clone's folder under --repos."""
    style: str
    """How it is packaged and tested."""
    reason: str
    """Why it is in the benchmark."""
    service: str = ""
    """What its suite needs that a bare machine lacks (a server, the network): misses are named, not counted."""


PROJECTS = (
    Project("python-attrs/attrs", "attrs", "hatch, src layout, uv.lock, tox", "hatch with hatch-vcs and fancy-pypi-readme plugins; a lock file"),
    Project("python-poetry/tomlkit", "tomlkit", "poetry, poetry.lock, flat, git submodule test data", "poetry's own library; its tests read a submodule"),
    Project("pytoolz/toolz", "toolz", "setuptools pyproject (setup.py before), versioneer, flat", "two packages in one repo (toolz, tlz); moved from setup.py"),
    Project("more-itertools/more-itertools", "more-itertools", "flit, requirements/ folder, tox, unittest", "flit-core; unittest suite"),
    Project("benjaminp/six", "six", "setup.py + setup.cfg, single module, tox", "the oldest style: one module, setup.py"),
    Project("kjd/idna", "idna", "flit, flat", "flit-core, tiny suite, old history"),
    Project("pallets/click", "click", "flit, src, requirements/*.txt then uv.lock, tox", "pip-compile'd requirements, later a uv lock"),
    Project("pallets/itsdangerous", "itsdangerous", "flit, src, requirements then uv.lock", "the same pallets layout on a small project"),
    Project("pallets/markupsafe", "markupsafe", "setuptools + setup.py, C extension, src", "an optional C extension built at install"),
    Project("yaml/pyyaml", "pyyaml", "setup.py, C extension (libyaml, Cython)", "setup.py with a C library it may need (libyaml-dev)"),
    Project("dateutil/dateutil", "dateutil", "setup.cfg, setuptools_scm, requirements-dev, tox", "setup.cfg metadata, version from git tags"),
    Project("jquast/wcwidth", "wcwidth", "setup.py then hatch, requirements-tests*.in/.txt, tox", "per-Python requirement files"),
    Project("astanin/python-tabulate", "python-tabulate", "setuptools pyproject, single module, tox", "one module plus a package; optional deps in tests"),
    Project("pytest-dev/pluggy", "pluggy", "setuptools pyproject, setuptools_scm, src, tox", "pytest's plugin system: scm version, src"),
    Project("pytest-dev/iniconfig", "iniconfig", "hatch + hatch-vcs, src", "hatch-vcs versioning, small"),
    Project("pypa/packaging", "packaging", "flit, src, nox", "nox instead of tox; flit"),
    Project("tox-dev/platformdirs", "platformdirs", "hatch + hatch-vcs, src, tox.toml", "hatch with a tox.toml"),
    Project("tox-dev/filelock", "filelock", "hatch + hatch-vcs, src, tox.toml", "hatch; tests use threads and the filesystem"),
    Project("pypa/distlib", "distlib", "setup.cfg + pyproject, flat, tox", "setup.cfg era, large unittest suite, some tests want network"),
    Project("python-humanize/humanize", "humanize", "hatch + hatch-vcs, src, tox", "hatch; tests need freezegun"),
    Project("r1chardj0n3s/parse", "parse", "setuptools pyproject, single module", "a single-module project moved off setup.py"),
    Project("mahmoud/boltons", "boltons", "flit (setup.py before), flat, tox", "setup.py to flit over its history"),
    Project("tkem/cachetools", "cachetools", "setup.cfg + pyproject, src, tox", "setup.cfg declarative metadata"),
    Project("grantjenks/python-sortedcontainers", "python-sortedcontainers", "setup.py then pyproject, requirements.txt, tox", "a requirements.txt of dev tools"),
    Project("jmespath/jmespath.py", "jmespath.py", "setup.py + setup.cfg, requirements.txt, flat", "setup.py with a pinned requirements.txt (old pins)"),
    Project("marshmallow-code/marshmallow", "marshmallow", "flit, src, tox", "flit with extras for tests"),
    Project("hynek/structlog", "structlog", "hatch + hatch-vcs + fancy-pypi-readme, src, tox", "hatch with plugins; optional integrations in tests"),
    Project("sdispater/pendulum", "pendulum", "poetry then maturin (Rust extension), poetry.lock", "a Rust extension: needs cargo, expect a named cause"),
    Project("zopefoundation/zope.interface", "zope.interface", "setup.py, namespace package (zope.*), C extension", "a namespace package with a C speedup"),
    Project("redis/redis-py", "redis-py", "setup.py then hatch, dev_requirements.txt", "suite needs a Redis server", service="a Redis server on localhost:6379"),
    Project("frostming/marko", "marko", "pdm-backend, pdm.lock, nox", "pdm packaging and a pdm lock"),
    Project("pinterest/pymemcache", "pymemcache", "setup.py + setup.cfg, requirements files, tox", "integration tests need memcached", service="a memcached server (integration tests)"),
    Project("jaraco/jaraco.functools", "jaraco.functools", "setuptools + setuptools_scm, namespace package (jaraco.*), tox", "jaraco's skeleton: a namespace package, flat"),
    Project("simplejson/simplejson", "simplejson", "setup.py, optional C extension, flat", "setup.py with an optional C speedup"),
)  # fmt: skip


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def commits_to_check(repo: Path) -> list[tuple[str, str]]:
    """[(label, sha)]: HEAD, then HISTORIC first-parent commits spread evenly over the YEARS before HEAD,
    oldest first."""
    head = git(repo, "rev-parse", "HEAD").strip()
    head_date = datetime.datetime.fromtimestamp(int(git(repo, "log", "-1", "--format=%ct", head)))
    since = (head_date - datetime.timedelta(days=365 * YEARS)).strftime("%Y-%m-%d")
    history = git(repo, "rev-list", "--first-parent", "--reverse", f"--since={since}", head).split()
    history = [sha for sha in history if sha != head]
    picked: list[str] = []
    if history:
        step = len(history) / HISTORIC
        picked = list(dict.fromkeys(history[int(i * step)] for i in range(HISTORIC)))
    return [("HEAD", head)] + [(f"h{i + 1}", sha) for i, sha in enumerate(picked)]


def cache_entries(cache: Path) -> set[Path]:
    return {
        entry
        for folder in ("envs", "installs")
        if (cache / folder).is_dir()
        for entry in (cache / folder).iterdir()
    }


def disk_mb(paths: Iterable[Path]) -> float:
    folders = [str(p) for p in paths if p.is_dir()]
    if not folders:
        return 0.0
    out = subprocess.run(["du", "-sck", *folders], capture_output=True, text=True, check=False).stdout
    return round(int(out.splitlines()[-1].split()[0]) / 1024, 1)


def not_checked(kind: str, detail: str) -> dict:
    """A row's result when `repogym env check` gave no JSON: its own failure, named like env check's causes."""
    return {"built": False, "collected": False, "cause_kind": kind, "cause": f"{kind}: {detail}"}


def check(project: Project, label: str, sha: str, repos: Path, cache: Path, timeout_s: float) -> dict:
    """One `repogym env check` in its own process; a crash of the command is a row with its own cause."""
    before = cache_entries(cache)
    started = time.perf_counter()
    env = {**os.environ, "REPOGYM_CACHE": str(cache)}
    argv = ["nice", "-n", "19", *REPOGYM, "env", "check", str(repos / project.directory), "--commit", sha,
            "--json", "--timeout", str(timeout_s)]  # fmt: skip
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, env=env, timeout=timeout_s + 3600, check=False
        )
        result = json.loads(done.stdout) if done.stdout.strip().startswith("{") else None
        if result is None:
            result = not_checked("check_crashed", (done.stderr.strip().splitlines() or ["no output"])[-1])
    except subprocess.TimeoutExpired:
        result = not_checked("check_timed_out", f"no answer in {timeout_s + 3600:.0f} s")
    new = cache_entries(cache) - before
    row = {
        "project": project.name,
        "label": label,
        "sha": sha,
        "date": git(repos / project.directory, "log", "-1", "--format=%cs", sha).strip(),
        "service": project.service,
        "wall_s": round(time.perf_counter() - started, 1),
        "disk_mb": disk_mb(new) if new else None,
    }
    keep = ("built", "collected", "tests", "passed", "failed", "skipped", "seconds", "cause", "cause_kind",
            "system_packages", "python", "log", "complete", "suite", "suite_source")  # fmt: skip
    row.update({key: result.get(key) for key in keep})
    return row


def cause_words(row: dict) -> str:
    """The cause's first line without the log's path (a path on the measuring machine, not for the docs)."""
    return re.sub(r" ?\(log [^)]*\)", "", (row.get("cause") or "?").splitlines()[0])[:300]


def read_rows(path: Path) -> list[dict]:
    return (
        [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    )


def plan(projects: list[Project], repos: Path) -> list[tuple[Project, str, str]]:
    """Every (project, label, sha) to check, in the order they are measured: HEADs, then round by round."""
    per_project = {p.name: commits_to_check(repos / p.directory) for p in projects}
    rounds = max(len(c) for c in per_project.values())
    return [
        (p, *per_project[p.name][i]) for i in range(rounds) for p in projects if i < len(per_project[p.name])
    ]


def share(rows: list[dict]) -> str:
    ok = sum(1 for r in rows if r.get("built") and r.get("collected"))
    return f"{ok}/{len(rows)} ({100 * ok / len(rows):.0f}%)" if rows else "0/0"


def pass_fraction(row: dict) -> str:
    tests = row.get("tests") or 0
    return f"{100 * (row.get('passed') or 0) / tests:.0f}%" if tests else "-"


def cell(row: dict | None) -> str:
    if row is None:
        return "pending"
    if row.get("built") and row.get("collected") and row.get("complete") is False:
        return f"ok, {row['tests']} collected, cut at the time limit"
    if row.get("built") and row.get("collected"):
        return f"ok {pass_fraction(row)} of {row['tests']}, {row['wall_s']:.0f} s"
    return f"**{row.get('cause_kind')}**"


def tables(rows: list[dict], todo: list[tuple[Project, str, str]]) -> str:
    """The summary (shares, causes) and the per-project table, as markdown."""
    by_key = {(r["project"], r["sha"]): r for r in rows}
    counted = [r for r in rows if not r["service"]]
    heads = [r for r in counted if r["label"] == "HEAD"]
    historic = [r for r in counted if r["label"] != "HEAD"]
    causes = collections.Counter(r["cause_kind"] for r in counted if r.get("cause_kind"))
    service = [r for r in rows if r["service"]]
    pending = [t for t in todo if (t[0].name, t[2]) not in by_key]
    lines = [
        f"Built and collected at HEAD: {share(heads)}; at historic commits: {share(historic)} "
        f"(projects whose suite needs a service left out: {share(service)} of theirs).",
        "Causes of the misses (service projects left out): "
        + (", ".join(f"{k} {n}" for k, n in causes.most_common()) or "none")
        + ".",
        f"Pending (not measured yet): {len(pending)} checks.",
        "",
    ]
    labels = ["HEAD"] + [f"h{i + 1}" for i in range(HISTORIC)]
    table = []
    for project in PROJECTS:
        mine = {label: by_key.get((project.name, sha)) for p, label, sha in todo if p is project}
        if not mine:
            continue
        head = mine.get("HEAD")
        disk = f"{head['disk_mb']:.0f}" if head and head.get("disk_mb") else "n/a"
        name = project.name + (f" (needs {project.service})" if project.service else "")
        table.append(
            [
                name,
                project.style,
                *(cell(mine.get(label)) if label in mine else "-" for label in labels),
                disk,
            ]
        )
    lines.append(markdown_table(["project", "packaging", *labels, "HEAD MB"], table))
    misses = [r for r in rows if not (r.get("built") and r.get("collected"))]
    if misses:
        lines += ["", "Every miss, with its cause:", ""]
        lines += [
            f"- {r['project']} {r['label']} {r['sha'][:10]} ({r['date']}, Python {r.get('python') or '?'}): "
            + cause_words(r)
            for r in misses
        ]
    return "\n".join(lines)


def project_list() -> str:
    """The projects, chosen before measuring, with why each is here."""
    rows = [[p.name, p.style, p.reason + (f"; needs {p.service}" if p.service else "")] for p in PROJECTS]
    return markdown_table(["project", "packaging", "why it is here"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repos", type=Path, required=True, help="folder holding a clone of each project")
    parser.add_argument(
        "--work", type=Path, required=True, help="results.jsonl, table.md and the cache go here"
    )
    parser.add_argument(
        "--budget", type=float, default=0, help="stop starting checks after this many seconds"
    )
    parser.add_argument("--timeout", type=float, default=900, help="seconds each suite may run")
    parser.add_argument("--only", nargs="*", default=[], help="directories of the projects to check")
    parser.add_argument(
        "--table-only", action="store_true", help="write the tables from the results, check nothing"
    )
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    results, cache = args.work / "results.jsonl", (args.work / "cache").resolve()
    projects = [p for p in PROJECTS if not args.only or p.directory in args.only]
    todo = plan(projects, args.repos.resolve())
    done = {(r["project"], r["sha"]) for r in read_rows(results)}
    started = time.monotonic()
    for n, (project, label, sha) in enumerate(todo, 1):
        if args.table_only or (project.name, sha) in done:
            continue
        if args.budget and time.monotonic() - started > args.budget:
            print(f"budget spent: {sum((p.name, s) not in done for p, _, s in todo[n - 1 :])} checks pending")
            break
        print(f"[{n}/{len(todo)}] {project.name} {label} {sha[:10]} ...", end=" ", flush=True)
        row = check(project, label, sha, args.repos.resolve(), cache, args.timeout)
        with results.open("a") as handle:
            handle.write(json.dumps(row) + "\n")
        done.add((project.name, sha))
        print(cell(row), row.get("cause") or "", flush=True)
    measured = tables(read_rows(results), plan(list(PROJECTS), args.repos.resolve()))
    text = f"{machine_line()}\n\n{measured}\n\nThe projects:\n\n{project_list()}\n"
    (args.work / "table.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
