"""A pool of forking pytest servers for running generated repositories' own suites, and a checkout of a
commit's tree into a plain folder.

The generated suites are our own trusted code, so they run without the sandbox.
Starting Python and importing pytest costs most of a run, and the sample tests run
dozens of suites, so a small server imports pytest once and forks a child per
run; the child has never imported a generated package, so runs stay isolated.
"""

from __future__ import annotations

import io
import json
import os
import queue
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .git import git

SERVER = r"""
import json, os, sys
import pytest
from _pytest.config import default_plugins
for name in default_plugins:
    try:
        __import__("_pytest." + name)
    except ImportError:
        pass
for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.chdir(request["cwd"])
        os._exit(pytest.main(request["args"]))
    _, status = os.waitpid(pid, 0)
    print(json.dumps(os.waitstatus_to_exitcode(status)), flush=True)
"""


@dataclass(frozen=True)
class SuiteRun:
    """Outcome per pytest node id ("passed", "failed", "skipped") and the exit code."""

    outcomes: dict[str, str]
    exit_code: int

    def with_outcome(self, outcome: str) -> set[str]:
        return {test for test, value in self.outcomes.items() if value == outcome}


class PytestServers:
    """A pool of forking pytest servers; `run_many` spreads runs over them."""

    def __init__(self, size: int) -> None:
        env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}
        env.pop("PYTEST_ADDOPTS", None)
        self.processes = [
            subprocess.Popen(
                [sys.executable, "-c", SERVER],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env=env,
            )
            for _ in range(size)
        ]
        self.free: queue.Queue[subprocess.Popen[str]] = queue.Queue()
        for process in self.processes:
            self.free.put(process)

    def run(self, cwd: Path, paths: Sequence[str] = ()) -> SuiteRun:
        junit = cwd.parent / f"{cwd.name}.junit.xml"
        args = ["-q", "-p", "no:cacheprovider", f"--junitxml={junit}", *paths]
        process = self.free.get()
        try:
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(json.dumps({"cwd": str(cwd), "args": args}) + "\n")
            process.stdin.flush()
            exit_code = json.loads(process.stdout.readline())
        finally:
            self.free.put(process)
        return SuiteRun(read_junit(junit), exit_code)

    def run_many(self, jobs: Sequence[tuple[Path, Sequence[str]]]) -> list[SuiteRun]:
        with ThreadPoolExecutor(len(self.processes)) as pool:
            return list(pool.map(lambda job: self.run(*job), jobs))

    def close(self) -> None:
        for process in self.processes:
            assert process.stdin is not None
            process.stdin.close()
            process.wait(timeout=30)


def read_junit(path: Path) -> dict[str, str]:
    outcomes: dict[str, str] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        node = case.get("classname", "").replace(".", "/") + ".py::" + case.get("name", "")
        tags = {child.tag for child in case}
        outcomes[node] = (
            "failed" if tags & {"failure", "error"} else "skipped" if "skipped" in tags else "passed"
        )
    return outcomes


def checkout(
    repo: Path, commit: str, dest: Path, overlay_from: str = "", overlay: Sequence[str] = ()
) -> Path:
    """Extract `commit`'s tree to `dest`; files in `overlay` are then taken from commit `overlay_from`."""
    archive = subprocess.run(["git", "archive", commit], cwd=repo, capture_output=True, check=True).stdout
    dest.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")
    for path in overlay:
        (dest / path).parent.mkdir(parents=True, exist_ok=True)
        (dest / path).write_text(git(repo, "show", f"{overlay_from}:{path}"))
    return dest
