"""Durable JSONL appends: the first record of a file in a folder that does not exist yet."""

from __future__ import annotations

from repogym.files import append_jsonl, read_jsonl_records


def test_append_creates_the_missing_folder(tmp_path):
    # `repogym validate --out sub/tasks.jsonl` appends to sub/tasks.jsonl.partial.jsonl before sub/ exists.
    path = tmp_path / "sub" / "deeper" / "out.partial.jsonl"
    append_jsonl(path, {"n": 1})
    append_jsonl(path, {"n": 2})
    assert [row["n"] for row in read_jsonl_records(path)] == [1, 2]
