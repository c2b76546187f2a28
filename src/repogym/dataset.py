"""Reading and writing task datasets: JSONL, a JSON array (SWE-bench's files), parquet, `datasets`.

The format is picked from the file's content (parquet's magic bytes, a leading
`[` or `{`), not only from its suffix. JSONL is streamed. Every error names the
file, the line or row, and the field; every write is atomic.
"""

from __future__ import annotations

import difflib
import enum
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from repogym.errors import DatasetError, UnknownNameError
from repogym.files import atomic_writer
from repogym.task import REPOGYM_FIELDS, SWEBENCH_FIELDS, Task

if TYPE_CHECKING:
    import datasets
    import pyarrow


class Format(enum.StrEnum):
    JSONL = "jsonl"
    JSON = "json"
    PARQUET = "parquet"


class Style(enum.StrEnum):
    """Which fields a written row carries."""

    REPOGYM = "repogym"
    """Every field; test lists as lists."""
    SWEBENCH = "swebench"
    """Exactly SWE-bench's fields, test lists JSON-encoded."""


_PARQUET_MAGIC = b"PAR1"
# Columns whose values are free-form objects: parquet needs one schema for all
# rows, so they are stored as JSON text there (and only there).
_JSON_TEXT_COLUMNS = ("metadata", "extra")
_KNOWN_COLUMNS = frozenset((*SWEBENCH_FIELDS, *REPOGYM_FIELDS))


def detect_format(path: str | os.PathLike[str]) -> Format:
    """The file's format from its first bytes."""
    file = Path(path)
    try:
        with open(file, "rb") as handle:
            head = handle.read(4096)
    except FileNotFoundError:
        raise DatasetError(f"{file}: no such file") from None
    except IsADirectoryError:
        raise DatasetError(f"{file}: is a directory, expected a task file") from None
    except OSError as exc:
        raise DatasetError(f"{file}: cannot read: {exc.strerror or exc}") from None
    if head.startswith(_PARQUET_MAGIC):
        return Format.PARQUET
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not stripped:
        raise DatasetError(f"{file}: the file is empty (expected JSONL, a JSON array or parquet)")
    if stripped[:1] == b"[":
        return Format.JSON
    if stripped[:1] == b"{":
        return Format.JSONL
    raise DatasetError(
        f"{file}: cannot tell the format: it starts with {stripped[:20]!r}; expected JSONL (one object per line), "
        "a JSON array or parquet"
    )


def iter_task_rows(path: str | os.PathLike[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield `(where, row)` for each task row; JSONL is streamed line by line."""
    file = Path(path)
    fmt = detect_format(file)
    if fmt is Format.JSONL:
        yield from _iter_jsonl_rows(file)
    elif fmt is Format.JSON:
        data = file.read_bytes()
        try:
            rows = json.loads(data.decode("utf-8-sig"))
        except json.JSONDecodeError as exc:
            raise DatasetError(
                f"{file}:{exc.lineno}: malformed JSON: {exc.msg} at column {exc.colno}"
            ) from None
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise DatasetError(f"{file}:{line}: not UTF-8 text: {exc.reason}") from None
        if not isinstance(rows, list):
            raise DatasetError(f"{file}: expected a JSON array of tasks, got {type(rows).__name__}")
        for index, row in enumerate(rows):
            yield f"{file}: item {index}", row
    else:
        yield from _iter_parquet_rows(file)


def _iter_jsonl_rows(file: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    # Bytes, decoded line by line: a text-mode reader decodes ahead in chunks, so its
    # UnicodeDecodeError could not say which line holds the bad byte.
    with open(file, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            where = f"{file}:{number}"
            try:
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise DatasetError(f"{where}: not UTF-8 text: {exc.reason}") from None
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                hint = ""
                if line.strip() == "{":
                    hint = (
                        " (one object spread over several lines? write one object per line, or a JSON array)"
                    )
                raise DatasetError(
                    f"{where}: malformed JSON: {exc.msg} at column {exc.colno}{hint}"
                ) from None
            yield where, row


def iter_tasks(path: str | os.PathLike[str]) -> Iterator[Task]:
    """Stream tasks from a file without loading it whole (JSONL); duplicates are not checked here."""
    for where, row in iter_task_rows(path):
        yield Task.from_dict(row, where)


class TaskSet(Sequence[Task]):
    """An ordered set of tasks with unique instance ids and lookup by id."""

    def __init__(self, tasks: Iterable[Task], origin: str = "tasks") -> None:
        self._tasks: list[Task] = []
        self._by_id: dict[str, Task] = {}
        self._where: dict[str, str] = {}
        self.origin = origin
        for index, task in enumerate(tasks):
            self.add(task, f"{origin}: item {index}")

    def add(self, task: Task, where: str | None = None) -> None:
        """Append a task; a duplicate id is an error naming both places it came from."""
        where = where or f"{self.origin}: item {len(self._tasks)}"
        if task.instance_id in self._by_id:
            raise DatasetError(
                f"{where}: duplicate instance_id {task.instance_id!r} (first at {self._where[task.instance_id]})"
            )
        self._tasks.append(task)
        self._by_id[task.instance_id] = task
        self._where[task.instance_id] = where

    def get(self, instance_id: str) -> Task:
        """The task with this id; an unknown id lists the closest known ones."""
        try:
            return self._by_id[instance_id]
        except KeyError:
            close = difflib.get_close_matches(instance_id, self._by_id, n=5, cutoff=0.4)
            hint = f"; closest: {', '.join(close)}" if close else ""
            raise UnknownNameError(
                f"{self.origin}: no task with instance_id {instance_id!r} ({len(self)} tasks){hint}"
            ) from None

    def ids(self) -> list[str]:
        return [task.instance_id for task in self._tasks]

    def __contains__(self, item: object) -> bool:
        if isinstance(item, Task):
            return self._by_id.get(item.instance_id) == item
        return item in self._by_id

    @overload
    def __getitem__(self, index: int) -> Task: ...
    @overload
    def __getitem__(self, index: slice) -> list[Task]: ...
    def __getitem__(self, index: int | slice) -> Task | list[Task]:
        return self._tasks[index]

    def __len__(self) -> int:
        return len(self._tasks)

    def __repr__(self) -> str:
        return f"TaskSet({len(self)} tasks from {self.origin})"


def load_tasks(path: str | os.PathLike[str]) -> TaskSet:
    """Load a task file (JSONL, JSON array or parquet, detected from content); ids must be unique."""
    task_set = TaskSet((), origin=str(path))
    for where, row in iter_task_rows(path):
        task_set.add(Task.from_dict(row, where), where)
    return task_set


def coerce_tasks(tasks: str | os.PathLike[str] | Iterable[Task]) -> TaskSet:
    """Accept a path or loaded tasks, as the public API does."""
    if isinstance(tasks, TaskSet):
        return tasks
    if isinstance(tasks, str | os.PathLike):
        return load_tasks(tasks)
    return TaskSet(tasks)


def format_for_path(path: str | os.PathLike[str]) -> Format:
    """The output format named by a file's suffix."""
    suffix = Path(path).suffix.lower()
    try:
        return {".jsonl": Format.JSONL, ".json": Format.JSON, ".parquet": Format.PARQUET}[suffix]
    except KeyError:
        raise DatasetError(
            f"{path}: unknown output suffix {suffix!r}; use .jsonl, .json or .parquet"
        ) from None


def save_tasks(
    tasks: Iterable[Task],
    path: str | os.PathLike[str],
    fmt: Format | str | None = None,
    style: Style | str = Style.REPOGYM,
) -> int:
    """Write tasks atomically; the format comes from `fmt` or the suffix. Returns the number written.

    Rows are built and checked before anything is written: a task that cannot be
    serialised leaves an existing file at `path` untouched and no temporary file behind.
    """
    fmt = _choice(Format, fmt, "format", path) if fmt else format_for_path(path)
    style = _choice(Style, style, "style", path)
    rows = [task.to_swebench() if style is Style.SWEBENCH else task.to_dict() for task in tasks]
    try:
        if fmt is Format.PARQUET:
            table = _rows_to_arrow(rows, style, path)
            import pyarrow.parquet as pq

            with atomic_writer(path, "wb") as handle:
                pq.write_table(table, handle)
        else:
            text = _rows_to_json_text(rows, fmt, path)
            with atomic_writer(path) as handle:
                handle.write(text)
    except OSError as exc:
        raise DatasetError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return len(rows)


def _choice(kind: type[enum.StrEnum], value: Any, name: str, path: Any) -> Any:
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(member.value for member in kind)
        raise DatasetError(f"{path}: unknown {name} {value!r}; allowed: {allowed}") from None


def _rows_to_json_text(rows: list[dict[str, Any]], fmt: Format, path: Any) -> str:
    # Strict JSON (no NaN/Infinity): other tools (jq, datasets, SWE-bench) must read what we write.
    try:
        if fmt is Format.JSONL:
            return "".join(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n" for row in rows)
        return json.dumps(rows, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    except (TypeError, ValueError):
        _raise_unserialisable(rows, path)
        raise


def _raise_unserialisable(rows: list[dict[str, Any]], path: Any) -> None:
    """Name the task and field that JSON cannot hold."""
    for index, row in enumerate(rows):
        for name, value in row.items():
            try:
                json.dumps(value, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise DatasetError(
                    f"{path}: task {index} ({row.get('instance_id')!r}): field {name!r} is not JSON-serialisable: {exc}"
                ) from None


# -- parquet and datasets ---------------------------------------------------------------------


def _flatten_for_columns(row: dict[str, Any]) -> dict[str, Any]:
    flat = dict(row)
    for name in _JSON_TEXT_COLUMNS:
        if name in flat:
            # Key order is kept: SWE-bench export writes `extra` fields back in their input order.
            flat[name] = json.dumps(flat[name], ensure_ascii=False, allow_nan=False)
    env = flat.get("env")
    if isinstance(env, dict) and isinstance(env.get("test_env"), dict):
        # A map column would not survive `datasets` (no map feature): JSON text, as for metadata.
        flat["env"] = {**env, "test_env": json.dumps(env["test_env"], ensure_ascii=False)}
    return flat


def _unflatten_from_columns(row: dict[str, Any], where: str) -> dict[str, Any]:
    restored = dict(row)
    env = restored.get("env")
    if isinstance(env, dict) and "test_env" in env:
        text = env["test_env"]
        try:
            restored["env"] = {**env, "test_env": json.loads(text) if text else None}
        except (TypeError, json.JSONDecodeError):
            raise DatasetError(
                f"{where}: column 'env.test_env' must hold JSON text, got {text!r:.60}"
            ) from None
    for name in _JSON_TEXT_COLUMNS:
        value = restored.get(name)
        if isinstance(value, str):
            try:
                restored[name] = json.loads(value) if value else {}
            except json.JSONDecodeError:
                raise DatasetError(
                    f"{where}: column {name!r} must hold JSON text, got {value[:60]!r}"
                ) from None
    return restored


def _rows_to_arrow(rows: list[dict[str, Any]], style: Style, path: Any = "parquet") -> pyarrow.Table:
    import pyarrow as pa

    try:
        if style is Style.REPOGYM:
            flat = [_flatten_for_columns(row) for row in rows]
            return pa.Table.from_pylist(flat, schema=_repogym_schema())
        if not rows:  # an empty file still needs SWE-bench's columns to be read back
            return pa.Table.from_pylist(
                [], schema=pa.schema([(name, pa.string()) for name in SWEBENCH_FIELDS])
            )
        # Not from_pylist: it takes the columns of the first row only, dropping other rows' extra fields.
        columns = dict.fromkeys(key for row in rows for key in row)
        return pa.table({name: [row.get(name) for row in rows] for name in columns})
    except (TypeError, ValueError, pa.ArrowException) as exc:
        _raise_unserialisable(rows, path)
        raise DatasetError(f"{path}: cannot write parquet: {exc}") from None


def _repogym_schema() -> pyarrow.Schema:
    import pyarrow as pa

    text = pa.string()
    env = pa.struct(
        [
            ("python", text),
            ("install", pa.list_(text)),
            ("packages", pa.list_(text)),
            ("test_cmd", text),
            ("log_parser", text),
            ("test_env", text),
            ("exclude_newer", text),
        ]
    )
    return pa.schema(
        [
            ("repo", text),
            ("instance_id", text),
            ("base_commit", text),
            ("patch", text),
            ("test_patch", text),
            ("problem_statement", text),
            ("hints_text", text),
            ("created_at", text),
            ("version", text),
            ("FAIL_TO_PASS", pa.list_(text)),
            ("PASS_TO_PASS", pa.list_(text)),
            ("environment_setup_commit", text),
            ("source", text),
            ("repo_source", text),
            ("env", env),
            ("license", text),
            ("metadata", text),
            ("extra", text),
        ]
    )


def _iter_parquet_rows(file: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(file)
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise DatasetError(f"{file}: not a readable parquet file: {exc}") from None
    columns = set(parquet.schema_arrow.names)
    missing = [name for name in ("instance_id", "repo", "base_commit", "patch") if name not in columns]
    if missing:
        raise DatasetError(
            f"{file}: parquet schema has no column(s) {missing}; columns present: {sorted(columns)}"
        )
    row_number = 0
    batches = parquet.iter_batches(batch_size=256)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except Exception as exc:  # a damaged row group: say where reading stopped
            raise DatasetError(f"{file}: row {row_number}: cannot read parquet data: {exc}") from None
        for row in batch.to_pylist():
            where = f"{file}: row {row_number}"
            row_number += 1
            yield where, _unflatten_from_columns(_drop_absent_extras(row), where)


def _drop_absent_extras(row: dict[str, Any]) -> dict[str, Any]:
    # A parquet column exists in every row: null in a column repogym does not know means
    # "this row had no such field", which must not come back as an extra field set to None.
    return {key: value for key, value in row.items() if value is not None or key in _KNOWN_COLUMNS}


def tasks_to_dataset(tasks: Iterable[Task]) -> datasets.Dataset:
    """A `datasets.Dataset` of the tasks (same columns as repogym's parquet)."""
    import datasets

    rows = [_flatten_for_columns(task.to_dict()) for task in tasks]
    features = datasets.Features.from_arrow_schema(_repogym_schema())
    return datasets.Dataset.from_list(rows, features=features)


def tasks_from_dataset(dataset: datasets.Dataset, origin: str = "dataset") -> TaskSet:
    """Tasks from a `datasets.Dataset` in repogym's or SWE-bench's columns."""
    task_set = TaskSet((), origin=origin)
    for index, row in enumerate(dataset):
        where = f"{origin}: row {index}"
        restored = _unflatten_from_columns(_drop_absent_extras(dict(row)), where)
        task_set.add(Task.from_dict(restored, where), where)
    return task_set
