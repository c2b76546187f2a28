"""Task files: every format round-trips, the format comes from content, bad input is named, writes are atomic."""

from __future__ import annotations

import json
import os
import time
import tracemalloc
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from repogym.dataset import (
    Format,
    Style,
    TaskSet,
    detect_format,
    iter_tasks,
    load_tasks,
    save_tasks,
    tasks_from_dataset,
    tasks_to_dataset,
)
from repogym.errors import DatasetError, UnknownNameError
from repogym.files import append_jsonl, read_jsonl_records
from repogym.task import REPOGYM_FIELDS, SWEBENCH_FIELDS, EnvSpec, Source, Task

# -- strategies -------------------------------------------------------------------------------

# Any text, including NUL, CR, U+2028 and other characters that break naive line splitting.
TEXT = st.text(max_size=30)
JSON_SCALARS = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TEXT
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
KNOWN_FIELDS = {*SWEBENCH_FIELDS, *REPOGYM_FIELDS}

# env.python and env.exclude_newer are checked when a task loads: generate the forms they accept.
PYTHONS = st.just("") | st.from_regex(r"3(\.[0-9]{1,2}){0,2}", fullmatch=True) | st.just("/usr/bin/python3.9")
env_specs = st.builds(
    EnvSpec,
    python=PYTHONS,
    install=st.lists(TEXT, max_size=3).map(tuple),
    packages=st.lists(TEXT, max_size=2).map(tuple),
    test_cmd=TEXT,
    log_parser=TEXT,
    test_env=st.dictionaries(
        st.from_regex(r"[A-Z_][A-Z0-9_]{0,8}", fullmatch=True),
        TEXT.filter(lambda v: "\0" not in v),
        max_size=3,
    ),
    exclude_newer=st.sampled_from(["", "2021-03-04", "2021-03-04T05:06:07Z", "2021-03-04T05:06:07+02:00"]),
)
tasks = st.builds(
    Task,
    instance_id=st.text(min_size=1, max_size=20),
    repo=st.text(min_size=1, max_size=20),
    base_commit=st.text(min_size=1, max_size=12),
    patch=st.text(min_size=1),
    test_patch=TEXT,
    problem_statement=st.text(),
    hints_text=TEXT,
    created_at=TEXT,
    version=TEXT,
    FAIL_TO_PASS=st.lists(TEXT, max_size=4),
    PASS_TO_PASS=st.lists(TEXT, max_size=4),
    environment_setup_commit=TEXT,
    source=st.sampled_from(Source),
    repo_source=TEXT,
    env=env_specs,
    license=TEXT,
    metadata=st.dictionaries(TEXT, JSON_VALUES, max_size=4),
    extra=st.dictionaries(TEXT.filter(lambda key: key not in KNOWN_FIELDS), JSON_VALUES, max_size=3),
)
task_lists = st.lists(tasks, min_size=1, max_size=4, unique_by=lambda task: task.instance_id)

# JSON text is cheap to round-trip, parquet and `datasets` cost ~40 ms a go: fewer examples there.
MANY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- round trips ------------------------------------------------------------------------------


@MANY
@given(generated=task_lists)
def test_tasks_round_trip_through_json_and_jsonl(generated, tmp_path_factory):
    folder = tmp_path_factory.mktemp("round_trip")
    for suffix in (".jsonl", ".json"):
        path = folder / f"tasks{suffix}"
        assert save_tasks(generated, path) == len(generated)
        assert list(load_tasks(path)) == generated, suffix


@FEW
@given(generated=task_lists)
def test_tasks_round_trip_through_parquet_and_datasets(generated, tmp_path_factory):
    path = tmp_path_factory.mktemp("round_trip") / "tasks.parquet"
    save_tasks(generated, path)
    assert list(load_tasks(path)) == generated
    assert list(tasks_from_dataset(tasks_to_dataset(generated))) == generated


swebench_tasks = st.builds(
    Task,
    instance_id=st.text(min_size=1, max_size=20),
    repo=st.text(min_size=1, max_size=20),
    base_commit=st.text(min_size=1, max_size=12),
    patch=st.text(min_size=1),
    test_patch=TEXT,
    problem_statement=st.text(),
    FAIL_TO_PASS=st.lists(TEXT, max_size=4),
    PASS_TO_PASS=st.lists(TEXT, max_size=4),
    version=TEXT,
    extra=st.dictionaries(
        st.sampled_from(["difficulty", "repo_language", "issue_numbers"]), TEXT, max_size=2
    ),
)


@FEW
@given(generated=st.lists(swebench_tasks, min_size=1, max_size=4, unique_by=lambda task: task.instance_id))
def test_swebench_form_round_trips_through_every_format(generated, tmp_path_factory):
    folder = tmp_path_factory.mktemp("swebench_round_trip")
    for suffix in (".jsonl", ".json", ".parquet"):
        path = folder / f"tasks{suffix}"
        save_tasks(generated, path, style=Style.SWEBENCH)
        assert list(load_tasks(path)) == generated, suffix


def test_swebench_array_imports_and_exports_back_field_for_field(
    swebench_sample_path, swebench_rows, tmp_path
):
    tasks = load_tasks(swebench_sample_path)
    assert tasks.ids() == [row["instance_id"] for row in swebench_rows]
    exported = tmp_path / "export.json"
    save_tasks(tasks, exported, style="swebench")
    assert json.loads(exported.read_text(encoding="utf-8")) == swebench_rows
    for fmt in ("jsonl", "parquet"):
        repogym_form = tmp_path / f"tasks.{fmt}"
        save_tasks(tasks, repogym_form)
        again = tmp_path / f"again.{fmt}.json"
        save_tasks(load_tasks(repogym_form), again, style="swebench")
        assert json.loads(again.read_text(encoding="utf-8")) == swebench_rows


def test_swebench_parquet_with_json_encoded_test_lists_loads(tmp_path, swebench_rows):
    path = tmp_path / "swe-bench-lite.parquet"
    pq.write_table(pa.Table.from_pylist(swebench_rows), path)
    tasks = load_tasks(path)
    assert tasks.get("pallets__flask-4992").FAIL_TO_PASS == [
        "tests/test_config.py::test_config_from_file_toml"
    ]
    assert [task.to_swebench() for task in tasks] == swebench_rows


def test_empty_swebench_parquet_still_reads_back(tmp_path):
    path = tmp_path / "none.parquet"
    save_tasks([], path, style="swebench")
    assert len(load_tasks(path)) == 0


# -- format by content ------------------------------------------------------------------------


def test_format_comes_from_content_not_suffix(tmp_path, swebench_sample_path):
    tasks = load_tasks(swebench_sample_path)
    disguised = {
        "jsonl_named.json": Format.JSONL,
        "array_named.jsonl": Format.JSON,
        "parquet_named.data": Format.PARQUET,
    }
    for name, fmt in disguised.items():
        save_tasks(tasks, tmp_path / name, fmt=fmt)
        assert detect_format(tmp_path / name) is fmt
        assert list(load_tasks(tmp_path / name)) == list(tasks)


def test_bom_and_blank_lines_in_jsonl_are_fine(tmp_path):
    path = tmp_path / "tasks.jsonl"
    row = {"instance_id": "a__b-1", "repo": "a/b", "base_commit": "c", "patch": "p"}
    path.write_bytes(b"\xef\xbb\xbf\n" + json.dumps(row).encode() + b"\r\n\n")
    assert load_tasks(path).ids() == ["a__b-1"]


def test_jsonl_is_streamed_not_loaded_whole(tmp_path):
    path = tmp_path / "big.jsonl"
    line = json.dumps(
        {"instance_id": "{}", "repo": "o/r", "base_commit": "c", "patch": "x" * 300, "FAIL_TO_PASS": '["t"]'}
    )
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(line.replace("{}", f"o__r-{number}") + "\n" for number in range(50_000))
        handle.write("{this line is broken\n")  # reading the whole file would fail here
    assert path.stat().st_size > 15_000_000

    tracemalloc.start()
    started = time.perf_counter()
    first = next(iter_tasks(path))
    elapsed = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert first.instance_id == "o__r-0"
    assert elapsed < 1.0
    assert peak < 2_000_000, f"{peak} bytes to read one line of a {path.stat().st_size}-byte file"


# -- bad input --------------------------------------------------------------------------------

GOOD = {"instance_id": "a__b-1", "repo": "a/b", "base_commit": "c0ffee", "patch": "diff"}


def _jsonl(path: Path, *rows: object) -> Path:
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows))
    return path


def test_malformed_json_line_names_file_and_line(tmp_path):
    path = _jsonl(tmp_path / "tasks.jsonl", GOOD, '{"instance_id": "a__b-2", "repo": ')
    with pytest.raises(DatasetError, match=rf"^{path}:2: malformed JSON"):
        load_tasks(path)


def test_pretty_printed_object_gets_a_hint(tmp_path):
    path = tmp_path / "task.json"
    path.write_text(json.dumps(GOOD, indent=2))
    with pytest.raises(
        DatasetError, match=rf"^{path}:1: malformed JSON.*one object spread over several lines"
    ):
        load_tasks(path)


def test_missing_field_names_file_line_and_field(tmp_path):
    path = _jsonl(tmp_path / "tasks.jsonl", GOOD, {**GOOD, "instance_id": "a__b-2", "base_commit": None})
    with pytest.raises(
        DatasetError, match=rf"^{path}:2 \(instance_id 'a__b-2'\): missing required .*'base_commit'"
    ):
        load_tasks(path)


def test_duplicate_ids_name_both_places(tmp_path):
    path = _jsonl(tmp_path / "tasks.jsonl", GOOD, {**GOOD, "instance_id": "x__y-9"}, GOOD)
    with pytest.raises(
        DatasetError, match=rf"^{path}:3: duplicate instance_id 'a__b-1' \(first at {path}:1\)"
    ):
        load_tasks(path)


def test_duplicate_ids_in_a_json_array_name_both_items(tmp_path):
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps([GOOD, GOOD]))
    with pytest.raises(DatasetError, match=r"item 1: duplicate instance_id 'a__b-1' \(first at .*item 0\)"):
        load_tasks(path)


def test_bad_fail_to_pass_names_line_and_field(tmp_path):
    path = _jsonl(tmp_path / "tasks.jsonl", {**GOOD, "FAIL_TO_PASS": "test_a, test_b"})
    with pytest.raises(DatasetError, match=rf"^{path}:1 .*field 'FAIL_TO_PASS' must be a list of test ids"):
        load_tasks(path)


def test_parquet_without_task_columns_names_them(tmp_path):
    path = tmp_path / "tasks.parquet"
    pq.write_table(pa.Table.from_pylist([{"id": "a__b-1", "diff": "p"}]), path)
    with pytest.raises(
        DatasetError, match=rf"^{path}: parquet schema has no column\(s\) \['instance_id', 'repo'"
    ):
        load_tasks(path)


def test_parquet_with_wrong_column_type_names_row_and_field(tmp_path):
    path = tmp_path / "tasks.parquet"
    pq.write_table(pa.Table.from_pylist([{**GOOD, "instance_id": 17}]), path)
    with pytest.raises(DatasetError, match=rf"^{path}: row 0: field 'instance_id' must be a string, got int"):
        load_tasks(path)


def test_parquet_with_bad_test_list_names_row_and_field(tmp_path):
    path = tmp_path / "tasks.parquet"
    rows = [{**GOOD, "FAIL_TO_PASS": '["t1"]'}, {**GOOD, "instance_id": "a__b-2", "FAIL_TO_PASS": "t1 t2"}]
    pq.write_table(pa.Table.from_pylist(rows), path)
    with pytest.raises(DatasetError, match=rf"^{path}: row 1 \(instance_id 'a__b-2'\): field 'FAIL_TO_PASS'"):
        load_tasks(path)


def test_damaged_parquet_is_an_error(tmp_path):
    path = tmp_path / "tasks.parquet"
    save_tasks([Task(**GOOD)], path)
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(DatasetError, match=rf"^{path}: not a readable parquet file"):
        load_tasks(path)


@pytest.mark.parametrize("content", [b"", b"  \n\n\t"])
def test_empty_file_is_an_error(tmp_path, content):
    path = tmp_path / "tasks.jsonl"
    path.write_bytes(content)
    with pytest.raises(DatasetError, match=rf"^{path}: the file is empty"):
        load_tasks(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"instance_id,repo\n", r"cannot tell the format"),
        (b'[{"instance_id": "a"', r":1: malformed JSON"),
        (b"[1, 2]", r"item 0: expected a JSON object, got int"),
        (b'{"instance_id": "\xff"}\n', r":1: not UTF-8 text"),
    ],
)
def test_other_bad_files(tmp_path, content, message):
    path = tmp_path / "tasks.data"
    path.write_bytes(content)
    with pytest.raises(DatasetError, match=message):
        load_tasks(path)


def test_bad_byte_is_reported_on_its_own_line(tmp_path):
    # Far enough down that a chunked text decoder would fail while still on an earlier line.
    rows = [json.dumps({**GOOD, "instance_id": f"a__b-{n}", "patch": "x" * 100}) for n in range(300)]
    jsonl = tmp_path / "tasks.jsonl"
    jsonl.write_bytes("\n".join(rows).encode() + b'\n{"instance_id": "caf\xe9"}\n')
    with pytest.raises(DatasetError, match=rf"^{jsonl}:301: not UTF-8 text"):
        load_tasks(jsonl)
    array = tmp_path / "tasks.json"
    array.write_bytes(b'[\n{"instance_id": "a"},\n{"instance_id": "caf\xe9"}\n]')
    with pytest.raises(DatasetError, match=rf"^{array}:3: not UTF-8 text"):
        load_tasks(array)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(DatasetError, match="no such file"):
        load_tasks(tmp_path / "nope.jsonl")
    with pytest.raises(DatasetError, match="is a directory"):
        load_tasks(tmp_path)


# -- atomic, complete writes ------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".parquet"])
@pytest.mark.parametrize("bad_metadata", [{"when": object()}, {"score": float("nan")}])
def test_failed_save_leaves_old_file_and_no_temp_files(tmp_path, suffix, bad_metadata):
    path = tmp_path / f"tasks{suffix}"
    good = [Task(**GOOD)]
    save_tasks(good, path)
    before = path.read_bytes()
    broken = [*good, Task(**{**GOOD, "instance_id": "a__b-2"}, metadata=bad_metadata)]
    with pytest.raises(DatasetError, match=r"task 1 \('a__b-2'\): field 'metadata' is not JSON-serialisable"):
        save_tasks(broken, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == [path.name]


def test_unwritable_destination_is_a_dataset_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(DatasetError, match="cannot write"):
        save_tasks([Task(**GOOD)], blocker / "tasks.jsonl")


def test_bad_suffix_format_and_style_list_what_is_allowed(tmp_path):
    with pytest.raises(DatasetError, match=r"unknown output suffix '.csv'; use .jsonl, .json or .parquet"):
        save_tasks([], tmp_path / "tasks.csv")
    with pytest.raises(DatasetError, match=r"unknown format 'csv'; allowed: jsonl, json, parquet"):
        save_tasks([], tmp_path / "tasks.out", fmt="csv")
    with pytest.raises(DatasetError, match=r"unknown style 'swe'; allowed: repogym, swebench"):
        save_tasks([], tmp_path / "tasks.json", style="swe")


def test_written_files_are_readable_by_others(tmp_path):
    path = tmp_path / "tasks.jsonl"
    save_tasks([Task(**GOOD)], path)
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
    path.chmod(0o640)
    save_tasks([Task(**GOOD)], path)
    assert path.stat().st_mode & 0o777 == 0o640, "an overwrite keeps the file's mode"


# -- TaskSet ----------------------------------------------------------------------------------


def test_unknown_id_lists_closest_ids(swebench_sample_path):
    tasks = load_tasks(swebench_sample_path)
    with pytest.raises(
        UnknownNameError, match=r"no task with instance_id 'psf__requests-2391'.*psf__requests-2931"
    ):
        tasks.get("psf__requests-2391")
    assert "psf__requests-2931" in tasks
    assert tasks[0] in tasks
    assert len(tasks[1:3]) == 2


def test_taskset_from_tasks_rejects_duplicates():
    with pytest.raises(DatasetError, match=r"item 1: duplicate instance_id 'a__b-1' \(first at .*item 0\)"):
        TaskSet([Task(**GOOD), Task(**GOOD)])


# -- append-only JSONL stores (repogym.files) ---------------------------------------------------


def test_torn_record_is_skipped_and_the_next_append_is_not_glued_to_it(tmp_path):
    store = tmp_path / "trajectories.jsonl"
    append_jsonl(store, {"n": 1})
    with open(store, "a", encoding="utf-8") as handle:
        handle.write('{"n": 2, "messa')  # a crash mid-write
    assert list(read_jsonl_records(store)) == [{"n": 1}]
    append_jsonl(store, {"n": 3})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert list(read_jsonl_records(store)) == [{"n": 1}, {"n": 3}]
    assert [str(w.message) for w in caught] == [f"{store}:2: skipped a torn or malformed record"]
    assert list(read_jsonl_records(tmp_path / "missing.jsonl")) == []
