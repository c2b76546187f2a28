"""Which paths a project's own test command hands pytest, read from its CI workflows and tox.ini.

`repogym env check` runs "the whole suite"; pytest with no `testpaths` collects every `test_*.py` under the
root, including folders the project never runs in CI (jmespath's `extra/test_hypothesis.py` needs a package
its requirements pin only for old Pythons, and its CI runs `cd tests && py.test`). A suite collected as the
project collects it is the one its maintainers keep green, so env check asks here first.

Only test-runner invocations are read (`pytest`, `py.test`, `python -m pytest`, and nose's `nosetests` or `nose2`,
whose suites pytest collects too: the folder a runner is pointed at is the suite, whichever runner), from GitHub
Actions steps (`run`, with the step's or job's `working-directory`) and tox's `commands`. A path counts when it names a folder or
`.py` file that exists in the checkout; an option's value (`--cov jmespath`) is not a path. The first command
that names paths wins: workflows before tox.ini, files in name order. A project whose pytest configuration sets
`testpaths` is left alone: pytest already collects what the project chose.

No library parses CI files into commands (each CI system is its own YAML dialect and tox's ini has its own
substitutions), so this reads the few shapes above and gives up (no paths) on anything else.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from repogym.grading.pytest_config import DEDICATED_FILES, SHARED_FILES, sets_option
from repogym.validate.metadata_files import read_config

#: pytest options whose value is the next word (`--cov jmespath`): that word is never a path to collect.
_VALUED_OPTIONS = frozenset(
    {
        "-k", "-m", "-p", "-c", "-n", "-o", "-W", "-r", "--cov", "--cov-report", "--cov-config", "--junitxml",
        "--junit-xml", "--rootdir", "--ignore", "--ignore-glob", "--deselect", "--log-level", "--dist",
        "--timeout", "--maxfail", "--tb", "--durations", "--basetemp", "--import-mode", "--confcutdir",
        "--html", "--benchmark-storage", "--hypothesis-profile", "--hypothesis-seed", "--reruns", "--capture",
        "--log-cli-level", "--log-file", "--randomly-seed", "--override-ini", "--config-file",
        "--cover-package", "-a", "--attr", "-A", "--eval-attr", "--processes", "--process-timeout",
    }
)  # fmt: skip
_RUNNER = re.compile(r"^(py\.test|pytest|nosetests|nose2)(-\d(\.\d+)?)?$")
_MODULES = ("pytest", "nose", "nose2")


@dataclass(frozen=True)
class SuitePaths:
    """The paths (relative to the checkout's root) and the file whose command named them."""

    paths: tuple[str, ...]
    source: str


def suite_paths(checkout: Path) -> SuitePaths | None:
    """The paths the project's CI runs pytest on, None when pytest's own config chooses or nothing says."""
    if _has_testpaths(checkout):
        return None
    workflows = sorted(
        [*checkout.glob(".github/workflows/*.yml"), *checkout.glob(".github/workflows/*.yaml")],
        key=lambda p: p.name,
    )
    for workflow in workflows:
        for cwd, script in _workflow_scripts(workflow):
            if found := _paths_in_script(checkout, cwd, script):
                return SuitePaths(found, str(workflow.relative_to(checkout)))
    tox = checkout / "tox.ini"
    for script in _tox_commands(tox):
        if found := _paths_in_script(checkout, "", script):
            return SuitePaths(found, "tox.ini")
    return None


def _has_testpaths(checkout: Path) -> bool:
    """Whether a pytest configuration file in the root sets `testpaths` in its pytest section (pytest then
    collects those; a `testpaths` of another tool's section is not pytest's)."""
    return any(
        (checkout / name).is_file() and sets_option(name, _read(checkout / name), "testpaths")
        for name in sorted(DEDICATED_FILES | SHARED_FILES)
    )


def _workflow_scripts(workflow: Path) -> list[tuple[str, str]]:
    """(working directory, script) of every `run` step in a GitHub Actions workflow; [] when unreadable."""
    try:
        document = yaml.safe_load(_read(workflow))
    except yaml.YAMLError:
        return []
    jobs = document.get("jobs") if isinstance(document, dict) else None
    scripts: list[tuple[str, str]] = []
    for job in (jobs or {}).values() if isinstance(jobs, dict) else ():
        if not isinstance(job, dict):
            continue
        job_cwd = _working_directory(job.get("defaults"))
        for step in job.get("steps") or ():
            if isinstance(step, dict) and isinstance(step.get("run"), str):
                cwd = step.get("working-directory")
                scripts.append((cwd if isinstance(cwd, str) else job_cwd, step["run"]))
    return scripts


def _working_directory(defaults: Any) -> str:
    run = defaults.get("run") if isinstance(defaults, dict) else None
    cwd = run.get("working-directory") if isinstance(run, dict) else None
    return cwd if isinstance(cwd, str) else ""


def _tox_commands(tox: Path) -> list[str]:
    """Every `commands` value of tox.ini's test environments, `{posargs}` and the like dropped."""
    if not tox.is_file():
        return []
    parser = read_config(_read(tox))
    return [
        re.sub(r"\{[^}]*\}", "", parser.get(section, "commands", raw=True))
        for section in parser.sections()
        if section.startswith("testenv") and parser.has_option(section, "commands")
    ]


def _paths_in_script(checkout: Path, cwd: str, script: str) -> tuple[str, ...]:
    """The paths of the first test-runner command in a shell script that names (or runs inside) existing ones."""
    script = re.sub(r"\\\n", " ", script)
    for line in script.splitlines():
        for command in re.split(r"&&|;|\|\|", line):
            try:
                words = shlex.split(command, comments=True)
            except ValueError:
                continue
            if words[:1] == ["cd"] and len(words) == 2:
                cwd = str(PurePosixPath(cwd) / words[1])
                continue
            args = _runner_args(words)
            if args is None:
                continue
            if found := _existing_paths(checkout, cwd, args):
                return found
    return ()


def _runner_args(words: list[str]) -> list[str] | None:
    """The words after the runner in a command (`pytest ...`, `python -m pytest ...`, `coverage run -m pytest`,
    `nosetests ...`), None when the command runs no test runner."""
    for i, word in enumerate(words):
        if _RUNNER.match(PurePosixPath(word).name):
            return words[i + 1 :]
        if word == "-m" and i + 1 < len(words) and words[i + 1] in _MODULES:
            return words[i + 2 :]
    return None


def _existing_paths(checkout: Path, cwd: str, args: list[str]) -> tuple[str, ...]:
    """Positional arguments naming an existing folder or .py file, relative to the root; else cwd itself."""
    root = checkout.resolve()
    positional: list[str] = []
    skip_next = False
    for word in args:
        if skip_next:
            skip_next = False
            continue
        if word.startswith("-"):
            skip_next = word in _VALUED_OPTIONS
            continue
        positional.append(word.split("::")[0])
    candidates = positional or ([""] if cwd.strip("./") else [])
    found: list[str] = []
    for word in candidates:
        path = (root / cwd / word).resolve()
        if not path.is_relative_to(root) or path == root:
            return ()
        if not (path.is_dir() or (path.is_file() and path.suffix == ".py")):
            return ()
        found.append(path.relative_to(root).as_posix())
    return tuple(found)


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")
