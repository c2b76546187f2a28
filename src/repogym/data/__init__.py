"""Data repogym ships, and the built-in env specs made of it (`repogym tasks import --specs NAME`).

`swebench.toml` is SWE-bench's per-version environment specs for its Python repositories, written as an env
file (repogym.envfile): its header says how each of SWE-bench's fields maps onto EnvSpec and what cannot be
mapped. SWE-rebench's instances carry their specs themselves (`install_config`): swerebench.py makes each
into its task's env.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from repogym.envfile import EnvFile, parse_env_file
from repogym.errors import EnvBuildError, UnknownNameError
from repogym.sandbox.envbuild import find_interpreters, pick_interpreter
from repogym.task import Task

#: Built-in specs: name -> data file.
SPECS: dict[str, str] = {"swebench": "swebench.toml"}


def data_path(name: str) -> Path:
    """The installed path of the shipped data file `name` (a real file: the package is never zipped)."""
    return Path(str(resources.files(__name__) / name))


def builtin_specs(name: str) -> EnvFile:
    """The built-in env file called `name`; an unknown name lists the known ones.

    >>> len(builtin_specs("swebench").rules) > 50
    True
    """
    if name not in SPECS:
        raise UnknownNameError(f"--specs {name!r}: no such built-in specs; known: {', '.join(sorted(SPECS))}")
    text = data_path(SPECS[name]).read_text(encoding="utf-8")
    return parse_env_file(tomllib.loads(text), f"{name} specs ({SPECS[name]})")


@dataclass
class SpecsApplied:
    """What applying env specs did to a set of tasks."""

    tasks: list[Task]
    shaped: int = 0
    """Tasks at least one rule matched."""
    unmatched: dict[str, int] = field(default_factory=dict)
    """(repo@version) -> tasks no rule matched (they keep the env they had)."""


def apply_specs(tasks: Iterable[Task], *env_files: EnvFile) -> SpecsApplied:
    """Tasks with every env file applied in order (a later file's matching rules win); each task records the
    rules that shaped it in `metadata["env_rules"]`, after any it had."""
    out: list[Task] = []
    applied = SpecsApplied(out)
    for task in tasks:
        rules: list[str] = []
        for env_file in env_files:
            spec, used = env_file.spec_for(task)
            task = task.replace(env=spec)
            rules += used
        if rules:
            applied.shaped += 1
            earlier = task.metadata.get("env_rules", [])  # e.g. the instance's own install_config
            if isinstance(earlier, list):
                rules = [*earlier, *(rule for rule in rules if rule not in earlier)]
            task = task.replace(metadata={**task.metadata, "env_rules": rules})
        else:
            key = f"{task.repo}@{task.version or '?'}"
            applied.unmatched[key] = applied.unmatched.get(key, 0) + 1
        out.append(task)
    return applied


def missing_interpreters(tasks: Iterable[Task]) -> dict[str, int]:
    """env.python versions (or paths) the tasks ask for that this machine does not have -> how many ask."""

    wanted: dict[str, int] = {}
    for task in tasks:
        wanted[task.env.python] = wanted.get(task.env.python, 0) + 1
    missing: dict[str, int] = {}
    for version, count in wanted.items():
        try:
            pick_interpreter(version)
        except EnvBuildError:
            missing[version] = count
    return missing


def installed_pythons() -> str:
    """The Python versions this machine has, for messages ('installed: 3.9.18, 3.11.7')."""

    return "installed: " + (", ".join(i.version for i in find_interpreters()) or "none")
