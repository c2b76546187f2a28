"""The Task record: SWE-bench's fields plus repogym's own, and its conversions.

Field names are SWE-bench's, so SWE-bench, SWE-Gym and SWE-smith files load as
they are. In memory FAIL_TO_PASS / PASS_TO_PASS are `list[str]`; on input a
list or SWE-bench's JSON-encoded string is accepted; `to_swebench()` writes
exactly what SWE-bench writes.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from repogym.errors import DatasetError

#: Fields of a SWE-bench instance, in SWE-bench's order.
SWEBENCH_FIELDS: tuple[str, ...] = (
    "repo",
    "instance_id",
    "base_commit",
    "patch",
    "test_patch",
    "problem_statement",
    "hints_text",
    "created_at",
    "version",
    "FAIL_TO_PASS",
    "PASS_TO_PASS",
    "environment_setup_commit",
)
REQUIRED_FIELDS: tuple[str, ...] = ("instance_id", "repo", "base_commit", "patch")
REPOGYM_FIELDS: tuple[str, ...] = ("source", "repo_source", "env", "license", "metadata", "extra")
TEST_LIST_FIELDS: tuple[str, ...] = ("FAIL_TO_PASS", "PASS_TO_PASS")


class Source(enum.StrEnum):
    """Where a task came from."""

    MINED = "mined"
    SYNTHETIC = "synthetic"
    IMPORTED = "imported"


#: A Debian package name (Debian policy 5.6.1: lower case letters, digits, + - . ; two characters or more).
_DEBIAN_PACKAGE = re.compile(r"[a-z0-9][a-z0-9+.-]+")
_PYTHON_VERSION = re.compile(r"\d+(\.\d+){0,2}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_RFC3339 = re.compile(
    r"\d{4}-\d{2}-\d{2}"  # a date, or a date-time with seconds and a zone (Z or +hh:mm)
    r"|\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})"
)


@dataclass(frozen=True)
class EnvSpec:
    """How to build and test a task's Python environment.

    Empty fields mean "detect from the repository" (see `repogym.sandbox.envbuild`). Which fields decide
    the environment's contents (and so its cache key): python, install, packages, exclude_newer and the
    repository's dependency files. test_cmd, log_parser (except for the packages it needs) and test_env
    only change how tests run, so tasks differing only there share one environment.
    """

    python: str = ""
    """Python for the environment: a version ("3.9" picks the newest 3.9.x installed, "3.9.18" that one)
    or an interpreter's absolute path ("/opt/py/bin/python3.9"); empty = the interpreter repogym runs on."""
    install: tuple[str, ...] = ()
    """Shell commands run in the repo with the env activated (pip is there: `python -m pip install -e .`
    works). They run once per environment and once per commit of it, so what they write inside the repo
    (a generated _version.py, in-place extensions, egg-info) is in every episode of that commit; the grader
    runs them again when a candidate patch changes packaging files. Empty = detect (requirements files,
    then an editable install of the repo with its test extras)."""
    packages: tuple[str, ...] = ()
    """Extra requirements installed with uv before `install` (e.g. "pytest<8")."""
    test_cmd: str = ""
    """Command that runs tests; test ids are appended. Empty = the log parser's default."""
    log_parser: str = "pytest"
    """Name of the log parser that reads the test run (see `repogym.grading.parsers`)."""
    test_env: dict[str, str] = field(default_factory=dict, hash=False)
    """Environment variables set for every command of the task's episodes (test runs and the agent's tools),
    over the jail's clean environment; never for environment builds. E.g. {"DJANGO_SETTINGS_MODULE": ...}."""
    exclude_newer: str = ""
    """Resolve every package as of this moment: an RFC 3339 date-time ("2021-03-04T12:00:00Z") or a date
    ("2021-03-04", meaning the end of that day in UTC). Applied to uv (UV_EXCLUDE_NEWER) and pip
    (PIP_UPLOADED_PRIOR_TO, pip >= 25.3) in every build step. Empty = today's packages."""
    system_packages: tuple[str, ...] = ()
    """Debian packages the tests expect on the machine (SWE-bench's images install them with apt-get:
    graphviz for sphinx 7.2+, ffmpeg and texlive for matplotlib). repogym never runs apt-get: the jail sees
    the host's /usr, so `repogym doctor TASKS` names those this machine lacks, with the line that installs
    them. They do not decide the environment's contents (not in its cache key)."""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None, where: str = "env") -> EnvSpec:
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise DatasetError(f"{where}: field 'env' must be an object, got {type(data).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise DatasetError(f"{where}: unknown key(s) in 'env': {unknown}; allowed: {sorted(known)}")
        kwargs: dict[str, Any] = {}
        for name in ("python", "test_cmd", "log_parser", "exclude_newer"):
            if name in data and data[name] is not None:
                if not isinstance(data[name], str):
                    raise DatasetError(f"{where}: 'env.{name}' must be a string, got {data[name]!r}")
                kwargs[name] = data[name]
        for name in ("install", "packages", "system_packages"):
            value = data.get(name)
            if value is None:
                continue
            if isinstance(value, str):
                value = [value]
            if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
                raise DatasetError(f"{where}: 'env.{name}' must be a list of strings, got {value!r}")
            kwargs[name] = tuple(value)
        if data.get("test_env") is not None:
            kwargs["test_env"] = _test_env(data["test_env"], where)
        for package in kwargs.get("system_packages", ()):
            if not _DEBIAN_PACKAGE.fullmatch(package):
                raise DatasetError(
                    f"{where}: 'env.system_packages' holds {package!r}: give Debian package names (e.g. \"graphviz\")"
                )
        _check_python(kwargs.get("python", ""), where)
        _check_exclude_newer(kwargs.get("exclude_newer", ""), where)
        return cls(**kwargs)

    def to_dict(self) -> dict[str, Any]:
        return {
            "python": self.python,
            "install": list(self.install),
            "packages": list(self.packages),
            "test_cmd": self.test_cmd,
            "log_parser": self.log_parser,
            "test_env": dict(self.test_env),
            "exclude_newer": self.exclude_newer,
            # Only when set: validation's candidate fingerprints hash this dict, and a key every task
            # gained would have made every saved outcome stale.
            **({"system_packages": list(self.system_packages)} if self.system_packages else {}),
        }


def _check_python(value: str, where: str) -> None:
    """`env.python` is empty, a version, or an absolute interpreter path.

    >>> _check_python("3.9", "t"); _check_python("/usr/bin/python3", "t")
    >>> _check_python("python3.9", "tasks.jsonl:3")
    Traceback (most recent call last):
    ...
    repogym.errors.DatasetError: tasks.jsonl:3: 'env.python' is 'python3.9': give a version ("3.9", "3.9.18") or an interpreter's absolute path ("/usr/bin/python3.9")
    """
    if not value or _PYTHON_VERSION.fullmatch(value) or (value.startswith("/") and "\0" not in value):
        return
    raise DatasetError(
        f'{where}: \'env.python\' is {value!r}: give a version ("3.9", "3.9.18") or an interpreter\'s '
        'absolute path ("/usr/bin/python3.9")'
    )


def _check_exclude_newer(value: str, where: str) -> None:
    """`env.exclude_newer` is empty, an RFC 3339 date-time with a zone, or a date.

    >>> _check_exclude_newer("2021-03-04", "t"); _check_exclude_newer("2021-03-04T05:06:07+02:00", "t")
    >>> _check_exclude_newer("2021-03-04T05:06", "t")
    Traceback (most recent call last):
    ...
    repogym.errors.DatasetError: t: 'env.exclude_newer' is '2021-03-04T05:06': give an RFC 3339 date-time with seconds and a zone ("2021-03-04T05:06:07Z") or a date ("2021-03-04")
    """
    if not value:
        return
    try:
        valid = bool(_RFC3339.fullmatch(value)) and bool(
            datetime.date.fromisoformat(value[:10])
            and datetime.datetime.fromisoformat(value.replace("z", "Z"))
        )
    except ValueError:
        valid = False
    if not valid:
        raise DatasetError(
            f"{where}: 'env.exclude_newer' is {value!r}: give an RFC 3339 date-time with seconds and a zone "
            '("2021-03-04T05:06:07Z") or a date ("2021-03-04")'
        )


def _test_env(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise DatasetError(f"{where}: 'env.test_env' must be an object of strings, got {value!r}")
    for name, text in value.items():
        if not _ENV_NAME.fullmatch(name) or "\0" in text:
            raise DatasetError(
                f"{where}: 'env.test_env' has a bad variable {name!r}: names are letters, digits and _, "
                "not starting with a digit; values hold no NUL"
            )
    return dict(value)


@dataclass(frozen=True)
class Task:
    """One verifiable bug-fix task (a SWE-bench instance plus repogym's fields)."""

    instance_id: str
    repo: str
    base_commit: str
    patch: str
    test_patch: str = ""
    problem_statement: str = ""
    hints_text: str = ""
    created_at: str = ""
    version: str = ""
    FAIL_TO_PASS: list[str] = field(default_factory=list)
    PASS_TO_PASS: list[str] = field(default_factory=list)
    environment_setup_commit: str = ""
    source: Source = Source.IMPORTED
    repo_source: str = ""
    """Path or URL of the git repository; empty = resolve `repo` under --repos-dir."""
    env: EnvSpec = field(default_factory=EnvSpec)
    license: str = ""
    """SPDX id of the repository's licence, when known."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Free-form, JSON-serialisable facts (mining provenance, validation timings)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Top-level fields of the input that repogym does not know, kept so exports round-trip."""

    @property
    def fail_to_pass(self) -> list[str]:
        return self.FAIL_TO_PASS

    @property
    def pass_to_pass(self) -> list[str]:
        return self.PASS_TO_PASS

    def replace(self, **changes: Any) -> Task:
        return dataclasses.replace(self, **changes)

    # -- conversions ------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "task") -> Task:
        """Build a Task from a SWE-bench row or a repogym row; `where` names the file and line for errors."""
        if not isinstance(data, Mapping):
            raise DatasetError(f"{where}: expected a JSON object, got {type(data).__name__}")
        instance_id = data.get("instance_id")
        if isinstance(instance_id, str) and instance_id:
            where = f"{where} (instance_id {instance_id!r})"
        missing = [name for name in REQUIRED_FIELDS if data.get(name) in (None, "")]
        if missing:
            raise DatasetError(f"{where}: missing required field(s) {missing}")
        kwargs: dict[str, Any] = {}
        for name in SWEBENCH_FIELDS:
            if name not in data or data[name] is None:
                continue
            value = data[name]
            if name in TEST_LIST_FIELDS:
                kwargs[name] = parse_test_list(value, f"{where}: field {name!r}")
            elif name == "version" and isinstance(value, int | float):
                kwargs[name] = str(value)  # SWE-bench versions like 3.0 sometimes arrive as numbers
            elif name == "created_at" and isinstance(value, datetime.datetime):
                kwargs[name] = value.isoformat()  # a parquet timestamp column, as SWE-rebench's files have
            elif not isinstance(value, str):
                raise DatasetError(f"{where}: field {name!r} must be a string, got {type(value).__name__}")
            else:
                kwargs[name] = value
        source = data.get("source") or Source.IMPORTED.value
        try:
            kwargs["source"] = Source(source)
        except ValueError:
            allowed = ", ".join(s.value for s in Source)
            raise DatasetError(f"{where}: field 'source' is {source!r}; allowed: {allowed}") from None
        for name in ("repo_source", "license"):
            value = data.get(name)
            if value is not None:
                if not isinstance(value, str):
                    raise DatasetError(f"{where}: field {name!r} must be a string, got {value!r}")
                kwargs[name] = value
        kwargs["env"] = EnvSpec.from_dict(data.get("env"), where)
        for name in ("metadata", "extra"):
            value = data.get(name)
            if value is None:
                continue
            if not isinstance(value, Mapping):
                raise DatasetError(f"{where}: field {name!r} must be an object, got {type(value).__name__}")
            kwargs[name] = dict(value)
        shadowing = sorted(set(kwargs.get("extra", {})) & {*SWEBENCH_FIELDS, *REPOGYM_FIELDS})
        if shadowing:
            # SWE-bench export writes `extra` at the top level, where these would overwrite real fields.
            raise DatasetError(
                f"{where}: field 'extra' has key(s) {shadowing} that are Task fields; rename them"
            )
        unknown = {k: v for k, v in data.items() if k not in SWEBENCH_FIELDS and k not in REPOGYM_FIELDS}
        if unknown:
            kwargs["extra"] = {**kwargs.get("extra", {}), **unknown}
        return cls(**kwargs)

    def to_dict(self) -> dict[str, Any]:
        """repogym's native row: every field, test lists as lists, nested objects as objects."""
        row: dict[str, Any] = {name: getattr(self, name) for name in SWEBENCH_FIELDS}
        row["FAIL_TO_PASS"] = list(self.FAIL_TO_PASS)
        row["PASS_TO_PASS"] = list(self.PASS_TO_PASS)
        row["source"] = self.source.value
        row["repo_source"] = self.repo_source
        row["env"] = self.env.to_dict()
        row["license"] = self.license
        row["metadata"] = self.metadata
        row["extra"] = self.extra
        return row

    def to_swebench(self) -> dict[str, Any]:
        """Exactly SWE-bench's row: its fields in its order, test lists JSON-encoded, unknown input fields kept."""
        row: dict[str, Any] = {}
        for name in SWEBENCH_FIELDS:
            value = getattr(self, name)
            row[name] = json.dumps(list(value)) if name in TEST_LIST_FIELDS else value
        row.update(self.extra)
        return row


def parse_test_list(value: Any, where: str) -> list[str]:
    """Accept a list of test ids or SWE-bench's JSON-encoded string of one.

    >>> parse_test_list('["tests/test_a.py::test_x", "test_y"]', "FAIL_TO_PASS")
    ['tests/test_a.py::test_x', 'test_y']
    >>> parse_test_list("test_x", "FAIL_TO_PASS")
    Traceback (most recent call last):
    ...
    repogym.errors.DatasetError: FAIL_TO_PASS must be a list of test ids or a JSON-encoded list; got 'test_x' (not valid JSON)
    """
    if isinstance(value, str):
        try:
            decoded = json.loads(value) if value.strip() else []
        except json.JSONDecodeError:
            raise DatasetError(
                f"{where} must be a list of test ids or a JSON-encoded list; got {_short(value)} (not valid JSON)"
            ) from None
        value = decoded
    if hasattr(value, "tolist"):  # numpy arrays from parquet / datasets
        value = value.tolist()
    if not isinstance(value, list | tuple) or not all(isinstance(item, str) for item in value):
        raise DatasetError(f"{where} must be a list of test ids (strings); got {_short(value)}")
    return list(value)


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
