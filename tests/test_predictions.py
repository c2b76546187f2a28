"""SWE-bench predictions files: read what SWE-bench reads, write what it writes, name every bad line."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repogym.errors import DatasetError
from repogym.predictions import Prediction, load_predictions, save_predictions

predictions = st.lists(
    st.builds(
        Prediction,
        instance_id=st.text(min_size=1, max_size=20),
        model_name_or_path=st.text(max_size=20),
        # Any text: patches of real files carry U+2028, U+0085 and form feeds.
        model_patch=st.text(),
    ),
    max_size=5,
    unique_by=lambda prediction: prediction.instance_id,
)


@settings(max_examples=80, deadline=None)
@given(generated=predictions)
def test_predictions_round_trip(generated, tmp_path_factory):
    path = tmp_path_factory.mktemp("predictions") / "preds.jsonl"
    assert save_predictions(generated, path) == len(generated)
    if generated:
        assert load_predictions(path) == generated


def test_line_separators_inside_a_patch_do_not_split_the_record(tmp_path):
    path = tmp_path / "preds.jsonl"
    patch = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-s = 'a\u2028b'\n+s = 'a\x85b\x1cc'\n"
    save_predictions([Prediction("a__b-1", "m", patch), Prediction("a__b-2", "m", "")], path)
    assert [p.model_patch for p in load_predictions(path)] == [patch, ""]


def test_written_rows_are_swebench_rows(tmp_path):
    path = tmp_path / "preds.jsonl"
    save_predictions([Prediction("a__b-1", "qwen-7b-grpo", "diff")], path)
    assert [json.loads(line) for line in path.read_text().splitlines()] == [
        {"instance_id": "a__b-1", "model_name_or_path": "qwen-7b-grpo", "model_patch": "diff"}
    ]


def test_null_model_patch_means_no_patch(tmp_path):
    path = tmp_path / "preds.jsonl"
    path.write_text('{"instance_id": "a__b-1", "model_name_or_path": "m", "model_patch": null}\n')
    assert load_predictions(path) == [Prediction("a__b-1", "m", "")]


def test_json_array_and_keyed_object_forms(tmp_path):
    rows = [{"instance_id": "a__b-1", "model_name_or_path": "m", "model_patch": "p1"}]
    array = tmp_path / "preds.json"
    array.write_text(json.dumps(rows, indent=2))
    keyed = tmp_path / "keyed.json"
    keyed.write_text(json.dumps({"a__b-1": {"model_name_or_path": "m", "model_patch": "p1"}}, indent=2))
    assert load_predictions(array) == load_predictions(keyed) == [Prediction("a__b-1", "m", "p1")]


def test_duplicate_ids_name_both_lines(tmp_path):
    path = tmp_path / "preds.jsonl"
    row = json.dumps({"instance_id": "a__b-1", "model_name_or_path": "m", "model_patch": "p"})
    path.write_text(f"{row}\n\n{row}\n")
    with pytest.raises(
        DatasetError, match=rf"^{path}:3: duplicate instance_id 'a__b-1' \(first at {path}:1\)"
    ):
        load_predictions(path)


def test_malformed_line_names_file_and_line(tmp_path):
    path = tmp_path / "preds.jsonl"
    path.write_text(
        '{"instance_id": "a__b-1", "model_patch": ""}\n{"instance_id": "a__b-2", "model_patch": \n'
    )
    with pytest.raises(DatasetError, match=rf"^{path}:2: malformed JSON"):
        load_predictions(path)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"model_patch": "p"}, r":1: missing or empty field 'instance_id'"),
        ({"instance_id": "a", "model_patch": 3}, r":1: field 'model_patch' must be a string, got int"),
        (
            {"instance_id": "a", "model_name_or_path": ["m"]},
            r":1: field 'model_name_or_path' must be a string",
        ),
    ],
)
def test_bad_fields_are_named(tmp_path, row, message):
    path = tmp_path / "preds.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(DatasetError, match=message):
        load_predictions(path)


def test_empty_missing_and_binary_files(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(DatasetError, match=rf"^{empty}: the file is empty"):
        load_predictions(empty)
    with pytest.raises(DatasetError, match="no such file"):
        load_predictions(tmp_path / "missing.jsonl")
    binary = tmp_path / "preds.parquet"
    binary.write_bytes(b"PAR1\xff\xfe")
    with pytest.raises(DatasetError, match="not UTF-8 text"):
        load_predictions(binary)


def test_failed_save_keeps_the_old_file(tmp_path):
    path = tmp_path / "preds.jsonl"
    save_predictions([Prediction("a__b-1", "m", "p")], path)
    before = path.read_bytes()

    def broken():
        yield Prediction("a__b-2", "m", "p")
        raise RuntimeError("the policy crashed")

    with pytest.raises(RuntimeError):
        save_predictions(broken(), path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["preds.jsonl"]
