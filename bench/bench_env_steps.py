"""Step latency of RepoEnv's tools and reset, against the sandbox's own command latency, on a 1,000+ file repo.

    .venv/bin/python bench/bench_env_steps.py [--packages 40 --modules 30] [--repeats 20] [--json out.json]

The repository is generated here with the git CLI (a package of packages x modules small modules
and a test file per package) and prepared once in a private REPOGYM_CACHE under bwrap. Every
measured operation then runs in the same env: the baseline `ep.run("true")` (one jailed command,
what any tool costs at least), env.reset(), and the tools view_file, search (whole repo),
edit_file, str_replace and bash('true'). Each row reports the median and 90th percentile and the
ratio of the median to the baseline's; a markdown table goes to stdout.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
}
_PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "wide"
version = "0.1.0"
requires-python = ">=3.8"

[tool.setuptools.packages.find]
include = ["wide*"]
"""


def git(repo: Path, *args: str) -> str:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(repo), **_GIT_ENV}
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout


def make_repo(root: Path, packages: int, modules: int):  # -> (Task, number of files)
    """A repo of `packages` x `modules` modules with one planted bug (wide/pkg00/m000.py) and its task."""
    from repogym.task import Source, Task

    repo = root / "wide"
    (repo / "tests").mkdir(parents=True)
    (repo / "pyproject.toml").write_text(_PYPROJECT)
    (repo / "wide").mkdir()
    (repo / "wide" / "__init__.py").write_text("")
    for package in range(packages):
        folder = repo / "wide" / f"pkg{package:02d}"
        folder.mkdir()
        (folder / "__init__.py").write_text("")
        for module in range(modules):
            offset = 1 if package == module == 0 else 0  # the bug
            (folder / f"m{module:03d}.py").write_text(
                f'"""Module {module} of package {package}."""\n\nFACTOR = {package + 2}\n\n\n'
                f"def helper_{module}(x):\n    return x * FACTOR + {module + offset}\n"
            )
    (repo / "tests" / "test_m000.py").write_text(
        "from wide.pkg00.m000 import helper_0\n\n\ndef test_helper():\n    assert helper_0(3) == 6\n"
    )
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "wide: initial tree")
    base = git(repo, "rev-parse", "HEAD").strip()
    target = repo / "wide" / "pkg00" / "m000.py"
    original = target.read_text()
    target.write_text(original.replace("+ 1\n", "+ 0\n"))
    patch = git(repo, "diff")
    target.write_text(original)
    files = int(git(repo, "ls-files").count("\n"))
    task = Task(
        instance_id="bench__wide-1",
        repo="bench/wide",
        base_commit=base,
        patch=patch,
        problem_statement="helper_0(3) returns 7, not 6.",
        FAIL_TO_PASS=["tests/test_m000.py::test_helper"],
        source=Source.SYNTHETIC,
        repo_source=str(repo),
    )
    return task, files


def measure(operation: Callable[[], object], repeats: int) -> list[float]:
    operation()  # warm up (first-call imports, page cache)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        operation()
        times.append(time.perf_counter() - started)
    return times


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def run(packages: int, modules: int, repeats: int, sandbox: str) -> dict[str, object]:
    import repogym.env
    from repogym.sandbox.runtime import TaskRuntime

    scratch = Path(tempfile.mkdtemp(prefix="repogym-bench-env-"))
    os.environ["REPOGYM_CACHE"] = str(scratch / "cache")
    try:
        task, files = make_repo(scratch, packages, modules)
        started = time.perf_counter()
        runtime = TaskRuntime.create(task, sandbox).prepare()
        prepare_s = time.perf_counter() - started
        # max_steps high enough that the measured steps never truncate the episode.
        env = repogym.env.make(task.instance_id, task, runtime=runtime, max_steps=10_000)
        env.reset()
        episode = env.episode
        assert episode is not None
        toggles = {"edit": 0, "replace": 0}

        def step(action: str) -> Callable[[], object]:
            def call() -> object:
                observation, _, _, _, info = env.step(action)
                if info["tool_error"] or info["format_error"]:
                    raise RuntimeError(f"{action}: {observation[:200]}")
                return observation

            return call

        def edit() -> object:  # the same line, written two ways in turn
            toggles["edit"] ^= 1
            return step(
                f"edit_file('wide/pkg07/m003.py', '7:7', '    return x * FACTOR + {3 + toggles['edit']}')"
            )()

        def replace() -> object:
            toggles["replace"] ^= 1
            old, new = ("FACTOR = 9", "FACTOR = 10") if toggles["replace"] else ("FACTOR = 10", "FACTOR = 9")
            return step(f"str_replace('wide/pkg07/m005.py', '{old}', '{new}')")()

        rows: list[tuple[str, list[float]]] = [
            ('sandbox baseline: ep.run("true")', measure(lambda: episode.run("true"), repeats)),
            ("env.reset()", measure(lambda: env.reset(), repeats)),
            ("view_file (30-line module)", measure(step("view_file('wide/pkg03/m017.py')"), repeats)),
            (f"search (regex over {files} files)", measure(step("search('def helper_17\\\\b')"), repeats)),
            ("edit_file (one line)", measure(edit, repeats)),
            ("str_replace (one line)", measure(replace, repeats)),
            ("bash('true')", measure(step("bash('true')"), repeats)),
        ]
        env.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    baseline = statistics.median(rows[0][1])
    table = [
        {
            "operation": name,
            "n": len(times),
            "median_ms": statistics.median(times) * 1000,
            "p90_ms": percentile(times, 90) * 1000,
            "ratio": statistics.median(times) / baseline,
        }
        for name, times in rows
    ]
    return {
        "files": files,
        "prepare_s": prepare_s,
        "sandbox": sandbox,
        "rows": table,
        "machine": machine_line(),
    }


def machine_line() -> str:
    load = Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "unknown"
    user = "root (overlay episodes)" if os.geteuid() == 0 else "not root (copied episodes)"
    return (
        f"{datetime.date.today()}: {os.cpu_count()} cores, Linux {platform.release()}, "
        f"Python {sys.version.split()[0]}, {user}, load average {load}"
    )


def markdown(result: dict[str, object]) -> str:
    lines = [
        f"RepoEnv step latency, {result['sandbox']} sandbox, repo of {result['files']} files "
        f"(prepared in {result['prepare_s']:.1f} s); {result['machine']}",
        "",
        "| operation | n | median ms | p90 ms | x baseline |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for row in result["rows"]:  # type: ignore[attr-defined]
        lines.append(
            f"| {row['operation']} | {row['n']} | {row['median_ms']:.1f} | {row['p90_ms']:.1f} | {row['ratio']:.2f}x |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--packages", type=int, default=40)
    parser.add_argument("--modules", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--sandbox", default="bwrap")
    parser.add_argument("--json", type=Path, help="Also write the results as JSON here.")
    args = parser.parse_args()
    result = run(args.packages, args.modules, args.repeats, args.sandbox)
    if result["files"] < 1000:  # type: ignore[operator]
        print(
            f"note: the repo has {result['files']} files, fewer than the 1,000 the issue asks for",
            file=sys.stderr,
        )
    print(markdown(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
