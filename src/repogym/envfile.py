"""Environment overrides a team commits next to its code (`repogym.toml`) or passes as `--env-file`.

Detection gets most repositories right; the rest need a human's word: "this repo needs Python 3.7
before 2020", "install with `pip install -e .[test]`", "sympy's tests run with bin/test". An env
file says it once, as EnvSpec fields (see `repogym.task.EnvSpec`), for every task or for the tasks
a rule matches:

```toml
[env]                                  # every task
test_env = { LANG = "C.UTF-8" }

[[env.when]]                           # then each matching rule, in file order
until = "2019-12-31"                   # the task's created_at (the commit date), inclusive
python = "3.7"

[[env.when]]
repo = "sympy/sympy"                   # exact, or a glob such as "sympy/*"
versions = ["1.1", "1.2"]              # the task's `version` (SWE-bench's per-version specs)
paths = ["sympy/physics/*"]            # some file the gold patch touches matches
python = "3.9"
packages = ["mpmath==1.3.0"]
install = ["python -m pip install -e ."]
test_cmd = "bin/test -C --verbose"
log_parser = "sympy"
```

A rule's match keys all have to hold; a field a rule sets replaces the task's value whole (lists and
tables are not merged), so what a task gets reads off the file top to bottom. SWE-bench's own
per-version specs ship in this form (`repogym tasks import --specs swebench`).
"""

from __future__ import annotations

import dataclasses
import datetime
import fnmatch
import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repogym.errors import ConfigError, DatasetError
from repogym.hostgit import run_git
from repogym.patches import changed_paths
from repogym.task import EnvSpec, Task

#: The file a repository may commit at its root.
ENV_FILE_NAME = "repogym.toml"
MATCH_KEYS = ("repo", "versions", "paths", "since", "until")


@dataclass(frozen=True)
class EnvRule:
    """EnvSpec fields for the tasks that match; an empty match matches every task."""

    fields: dict[str, Any]
    """EnvSpec field name -> value, as written (validated through EnvSpec.from_dict)."""
    repo: str = ""
    versions: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    since: datetime.date | None = None
    until: datetime.date | None = None
    where: str = ""
    """Where the rule is written (file and table), for messages and provenance."""

    def matches(self, task: Task) -> bool:
        if self.repo and not fnmatch.fnmatchcase(task.repo, self.repo):
            return False
        if self.versions and task.version not in self.versions:
            return False
        if self.paths:
            touched = changed_paths(task.patch)
            if not any(fnmatch.fnmatchcase(path, glob) for path in touched for glob in self.paths):
                return False
        if self.since or self.until:
            day = _task_date(task)
            if day is None or (self.since and day < self.since) or (self.until and day > self.until):
                return False
        return True


@dataclass(frozen=True)
class EnvFile:
    """The rules of one env file, in order."""

    rules: tuple[EnvRule, ...]
    source: str = ""

    def spec_for(self, task: Task, base: EnvSpec | None = None) -> tuple[EnvSpec, tuple[str, ...]]:
        """The task's EnvSpec with every matching rule applied, and where the applied rules are written."""
        values = (base or task.env).to_dict()
        applied = []
        for rule in self.rules:
            if rule.matches(task):
                values.update(rule.fields)
                applied.append(rule.where)
        where = f"{self.source} (for {task.instance_id})"
        return EnvSpec.from_dict(values, where), tuple(applied)

    def apply(self, tasks: Iterable[Task]) -> list[Task]:
        """Tasks with their env replaced; `metadata["env_rules"]` names the rules that shaped each."""
        out = []
        for task in tasks:
            spec, applied = self.spec_for(task)
            earlier = task.metadata.get("env_rules", [])  # a repo's own file, then the command line's
            rules = [*earlier, *applied] if isinstance(earlier, list) else list(applied)
            metadata = {**task.metadata, "env_rules": rules} if applied else task.metadata
            out.append(task.replace(env=spec, metadata=metadata))
        return out


def load_env_file(path: str | os.PathLike[str]) -> EnvFile:
    """Read and check an env file; every error names the file, the table and the key."""
    file = Path(path)
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{file}: no such env file") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{file}: not UTF-8 text (byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: not valid TOML: {exc}") from None
    return parse_env_file(data, str(file))


def repo_env_file(repo: str | os.PathLike[str]) -> EnvFile | None:
    """The `repogym.toml` a repository commits at its root: the working copy's file, else HEAD's (a bare
    repository); None when it has none. Its rules are named `<repo>/repogym.toml`."""
    root = Path(repo)
    on_disk = root / ENV_FILE_NAME
    if on_disk.is_file():
        return load_env_file(on_disk)
    if not (root / "HEAD").exists() and not (root / ".git").exists():
        return None
    shown = run_git(root, "show", f"HEAD:{ENV_FILE_NAME}")
    if shown.returncode != 0:
        return None
    where = f"{root}/{ENV_FILE_NAME} (HEAD)"
    try:
        data = tomllib.loads(shown.stdout.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{where}: not valid TOML: {exc}") from None
    return parse_env_file(data, where)


def parse_env_file(data: Mapping[str, Any], source: str) -> EnvFile:
    unknown = sorted(set(data) - {"env"})
    if unknown:
        raise ConfigError(f"{source}: unknown top-level table(s) {unknown}; env overrides live under [env]")
    env = data.get("env", {})
    if not isinstance(env, Mapping):
        raise ConfigError(f"{source}: [env] must be a table")
    rules = []
    defaults = {k: v for k, v in env.items() if k != "when"}
    if defaults:
        rules.append(_rule(defaults, f"{source} [env]", allow_match=False))
    when = env.get("when", [])
    if not isinstance(when, list) or not all(isinstance(item, Mapping) for item in when):
        raise ConfigError(f"{source}: env.when must be an array of tables ([[env.when]])")
    rules += [_rule(item, f"{source} [[env.when]] #{index + 1}") for index, item in enumerate(when)]
    return EnvFile(tuple(rules), source)


def _rule(table: Mapping[str, Any], where: str, allow_match: bool = True) -> EnvRule:
    known = {f.name for f in _env_fields()}
    match = {k: table[k] for k in MATCH_KEYS if k in table}
    if match and not allow_match:
        raise ConfigError(f"{where}: match keys {sorted(match)} belong in an [[env.when]] rule")
    fields_ = {k: v for k, v in table.items() if k not in MATCH_KEYS}
    unknown = sorted(set(fields_) - known)
    if unknown:
        allowed = ", ".join(sorted(known) + list(MATCH_KEYS))
        raise ConfigError(f"{where}: unknown key(s) {unknown}; allowed: {allowed}")
    try:
        EnvSpec.from_dict(fields_, where)  # types and forms checked now, not when a task meets the rule
    except DatasetError as exc:
        raise ConfigError(str(exc)) from None
    return EnvRule(
        fields=dict(fields_),
        repo=_text(match, "repo", where),
        versions=_texts(match, "versions", where),
        paths=_texts(match, "paths", where),
        since=_date(match, "since", where),
        until=_date(match, "until", where),
        where=where,
    )


def _env_fields() -> tuple[Any, ...]:
    return dataclasses.fields(EnvSpec)


def _text(match: Mapping[str, Any], key: str, where: str) -> str:
    value = match.get(key, "")
    if not isinstance(value, str):
        raise ConfigError(f"{where}: '{key}' must be a string, got {value!r}")
    return value


def _texts(match: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = match.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str | int | float) for v in value):
        raise ConfigError(f"{where}: '{key}' must be a list of strings, got {value!r}")
    return tuple(str(v) for v in value)  # versions written as numbers (1.1) mean the string "1.1"


def _date(match: Mapping[str, Any], key: str, where: str) -> datetime.date | None:
    value = match.get(key)
    if value is None:
        return None
    if isinstance(value, datetime.datetime):
        return value.date()
    if isinstance(value, datetime.date):
        return value
    if isinstance(value, str):
        try:
            return datetime.date.fromisoformat(value[:10])
        except ValueError:
            pass
    raise ConfigError(f"{where}: '{key}' must be a date such as 2019-12-31, got {value!r}")


def _task_date(task: Task) -> datetime.date | None:
    try:
        return datetime.date.fromisoformat(task.created_at[:10]) if task.created_at else None
    except ValueError:
        return None
