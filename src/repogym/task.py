"""The Task record: SWE-bench's fields plus repogym's own, and its conversions.

Field names are SWE-bench's, so SWE-bench, SWE-Gym and SWE-smith files load as
they are. In memory FAIL_TO_PASS / PASS_TO_PASS are `list[str]`; on input a
list or SWE-bench's JSON-encoded string is accepted; `to_swebench()` writes
exactly what SWE-bench writes.
"""

from __future__ import annotations

import dataclasses
import enum
import json
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


@dataclass(frozen=True)
class EnvSpec:
    """How to build and test a task's Python environment.

    Empty fields mean "detect from the repository" (see `repogym.sandbox.envbuild`).
    """

    python: str = ""
    """Python version to use, e.g. "3.11" or "3.9.18"; empty = the interpreter repogym runs on."""
    install: tuple[str, ...] = ()
    """Shell commands run at build time in the repo with the env activated; empty = detect."""
    packages: tuple[str, ...] = ()
    """Extra requirements installed with uv before `install` (e.g. "pytest<8")."""
    test_cmd: str = ""
    """Command that runs tests; test ids are appended. Empty = the log parser's default."""
    log_parser: str = "pytest"
    """Name of the log parser that reads the test run (see `repogym.grading.parsers`)."""

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
        for name in ("python", "test_cmd", "log_parser"):
            if name in data and data[name] is not None:
                if not isinstance(data[name], str):
                    raise DatasetError(f"{where}: 'env.{name}' must be a string, got {data[name]!r}")
                kwargs[name] = data[name]
        for name in ("install", "packages"):
            value = data.get(name)
            if value is None:
                continue
            if isinstance(value, str):
                value = [value]
            if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
                raise DatasetError(f"{where}: 'env.{name}' must be a list of strings, got {value!r}")
            kwargs[name] = tuple(value)
        return cls(**kwargs)

    def to_dict(self) -> dict[str, Any]:
        return {
            "python": self.python,
            "install": list(self.install),
            "packages": list(self.packages),
            "test_cmd": self.test_cmd,
            "log_parser": self.log_parser,
        }


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
