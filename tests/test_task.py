"""The Task record: SWE-bench rows in, SWE-bench rows out, and every bad field named."""

from __future__ import annotations

import json

import pytest

from repogym.errors import DatasetError
from repogym.task import SWEBENCH_FIELDS, EnvSpec, Source, Task, parse_test_list


def test_swebench_row_becomes_typed_task(swebench_rows):
    row = swebench_rows[3]  # django: PASS_TO_PASS is the JSON string "[]"
    task = Task.from_dict(row)
    assert task.instance_id == "django__django-11099"
    assert task.FAIL_TO_PASS == [
        "test_ascii_validator (auth_tests.test_validators.UsernameValidatorsTests)",
        "test_unicode_validator (auth_tests.test_validators.UsernameValidatorsTests)",
    ]
    assert task.fail_to_pass is task.FAIL_TO_PASS
    assert task.PASS_TO_PASS == []
    assert task.version == "3.0"
    assert task.source is Source.IMPORTED
    assert task.env == EnvSpec()


def test_to_swebench_is_exactly_the_input_row(swebench_rows):
    for row in swebench_rows:
        exported = Task.from_dict(row).to_swebench()
        assert exported == row
        assert list(exported) == list(row), "SWE-bench's field order"
        assert list(exported) == list(SWEBENCH_FIELDS)


def test_test_lists_accept_lists_and_json_strings():
    base = {"instance_id": "o__r-1", "repo": "o/r", "base_commit": "c0ffee", "patch": "diff"}
    as_list = Task.from_dict({**base, "FAIL_TO_PASS": ["t::a", "t::b"], "PASS_TO_PASS": []})
    as_text = Task.from_dict({**base, "FAIL_TO_PASS": '["t::a", "t::b"]', "PASS_TO_PASS": ""})
    assert as_list == as_text
    assert as_text.to_swebench()["FAIL_TO_PASS"] == '["t::a", "t::b"]'
    assert as_text.to_swebench()["PASS_TO_PASS"] == "[]"


def test_numeric_version_is_kept_as_text():
    task = Task.from_dict(
        {"instance_id": "a__b-1", "repo": "a/b", "base_commit": "c", "patch": "p", "version": 3.0}
    )
    assert task.version == "3.0"


def test_unknown_fields_survive_to_swebench_export():
    row = {
        "instance_id": "a__b-1",
        "repo": "a/b",
        "base_commit": "c",
        "patch": "p",
        "difficulty": "<15 min fix",
    }
    task = Task.from_dict(row)
    assert task.extra == {"difficulty": "<15 min fix"}
    assert task.to_swebench()["difficulty"] == "<15 min fix"
    assert Task.from_dict(task.to_dict()) == task


def test_repogym_row_round_trips_through_to_dict():
    task = Task(
        "a__b-7",
        "a/b",
        "0123abc",
        "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n",
        FAIL_TO_PASS=["tests/test_x.py::test_b"],
        source=Source.MINED,
        repo_source="/srv/git/b.git",
        env=EnvSpec(
            python="3.9", install=("pip install -e .",), packages=("pytest<8",), test_cmd="pytest -q"
        ),
        license="MIT",
        metadata={"mined_from": "3f2a", "timings": {"validate_s": 1.5}},
        extra={"difficulty": "hard"},
    )
    row = json.loads(json.dumps(task.to_dict()))
    assert Task.from_dict(row) == task


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"repo": None}, "repo"),
        ({"patch": ""}, "patch"),
        ({"instance_id": None}, "instance_id"),
    ],
)
def test_missing_required_field_is_named(changes, field):
    row = {"instance_id": "a__b-1", "repo": "a/b", "base_commit": "c", "patch": "p", **changes}
    with pytest.raises(DatasetError, match=rf"tasks.jsonl:4.*missing required field.*'{field}'"):
        Task.from_dict(row, "tasks.jsonl:4")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"FAIL_TO_PASS": "tests/test_x.py::test_y"},
            r"field 'FAIL_TO_PASS' must be a list .*not valid JSON",
        ),
        ({"FAIL_TO_PASS": '{"a": 1}'}, r"field 'FAIL_TO_PASS' must be a list of test ids"),
        ({"PASS_TO_PASS": [1, 2]}, r"field 'PASS_TO_PASS' must be a list of test ids"),
        ({"PASS_TO_PASS": 7}, r"field 'PASS_TO_PASS' must be a list of test ids"),
        ({"problem_statement": ["x"]}, r"field 'problem_statement' must be a string, got list"),
        ({"source": "scraped"}, r"field 'source' is 'scraped'; allowed: mined, synthetic, imported"),
        ({"metadata": "{}"}, r"field 'metadata' must be an object"),
        ({"env": {"pyhton": "3.9"}}, r"unknown key\(s\) in 'env': \['pyhton'\]; allowed: .*'python'"),
        ({"env": {"install": [1]}}, r"'env.install' must be a list of strings"),
        ({"extra": {"repo": "other/repo"}}, r"field 'extra' has key\(s\) \['repo'\] that are Task fields"),
    ],
)
def test_bad_field_names_where_and_field(changes, message):
    row = {"instance_id": "a__b-1", "repo": "a/b", "base_commit": "c", "patch": "p", **changes}
    with pytest.raises(DatasetError, match=r"^tasks.jsonl:9 \(instance_id 'a__b-1'\): " + message):
        Task.from_dict(row, "tasks.jsonl:9")


def test_not_an_object_is_an_error():
    with pytest.raises(DatasetError, match=r"tasks.jsonl:2: expected a JSON object, got list"):
        Task.from_dict(["a"], "tasks.jsonl:2")  # type: ignore[arg-type]


def test_env_accepts_one_install_command_as_text():
    spec = EnvSpec.from_dict({"install": "pip install -e .", "python": "3.11"})
    assert spec.install == ("pip install -e .",)
    assert EnvSpec.from_dict(spec.to_dict()) == spec


def test_parse_test_list_accepts_numpy_style_arrays():
    class ArrayLike:  # what parquet and datasets hand back
        def tolist(self):
            return ["t1", "t2"]

    assert parse_test_list(ArrayLike(), "FAIL_TO_PASS") == ["t1", "t2"]


def test_replace_returns_a_new_task():
    task = Task("a__b-1", "a/b", "c", "p")
    changed = task.replace(FAIL_TO_PASS=["t"])
    assert changed.FAIL_TO_PASS == ["t"]
    assert task.FAIL_TO_PASS == []


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"python": "python3.9"},
            r"'env.python' is 'python3.9': give a version .* or an interpreter's absolute path",
        ),
        ({"python": "3.9-dev"}, r"'env.python' is '3.9-dev'"),
        ({"exclude_newer": "2021-13-01"}, r"'env.exclude_newer' is '2021-13-01': give an RFC 3339 date-time"),
        ({"exclude_newer": "2021-03-04T05:06:07"}, r"'env.exclude_newer' is .*with seconds and a zone"),
        ({"test_env": {"A": 1}}, r"'env.test_env' must be an object of strings"),
        ({"test_env": {"1A": "x"}}, r"'env.test_env' has a bad variable '1A'"),
        ({"system_packages": ["graphviz; rm -rf /"]}, r"'env.system_packages' holds 'graphviz; rm -rf /'"),
    ],
)
def test_bad_env_fields_fail_when_the_task_file_loads(env, message):
    row = {"instance_id": "a__b-1", "repo": "a/b", "base_commit": "c", "patch": "p", "env": env}
    with pytest.raises(DatasetError, match=r"^tasks.jsonl:3 \(instance_id 'a__b-1'\): " + message):
        Task.from_dict(row, "tasks.jsonl:3")


def test_env_python_exclude_newer_and_test_env_round_trip():
    spec = EnvSpec.from_dict(
        {
            "python": "/opt/py/bin/python3.9",
            "exclude_newer": "2021-03-04T05:06:07+02:00",
            "test_env": {"DJANGO_SETTINGS_MODULE": "tests.settings", "LANG": "en_US.UTF-8"},
            "system_packages": ["graphviz", "texlive-latex-extra"],
        }
    )
    assert spec.system_packages == ("graphviz", "texlive-latex-extra")
    assert spec.test_env["LANG"] == "en_US.UTF-8"
    assert EnvSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    assert EnvSpec.from_dict({"python": "3.9.18", "exclude_newer": "2021-03-04"}).python == "3.9.18"
