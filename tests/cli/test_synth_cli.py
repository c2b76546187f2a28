"""`repogym synth ...` and `repogym tasks split` as a user runs them."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from repogym.cli import app, common
from repogym.dataset import load_tasks
from repogym.synth.methods import method_names

from ..support.shapes import REPO_NAME, make_shapes_repo, shapes_files

RUNNER = CliRunner()


@pytest.fixture(autouse=True)
def wide_console(monkeypatch):
    for console in (common.console, common.err_console):
        monkeypatch.setattr(console, "_width", 200)


def invoke(*args: str):
    return RUNNER.invoke(app, list(args))


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    import os

    os.environ["REPOGYM_CACHE"] = str(tmp_path_factory.getbasetemp().parent / "repogym-cache")
    return make_shapes_repo(tmp_path_factory.mktemp("cli") / "shapes", shapes_files())


def test_methods_lists_every_method():
    result = invoke("synth", "methods")
    assert result.exit_code == 0
    assert all(name in result.stdout for name in method_names())


@pytest.mark.slow
@pytest.mark.xdist_group("synth-shapes")
def test_synth_repo_writes_candidates_a_funnel_and_the_next_step(repo, tmp_path):
    out = tmp_path / "cands.jsonl"
    result = invoke(
        "synth",
        str(repo),
        "--out",
        str(out),
        "--seed",
        "0",
        "--methods",
        "op_change,op_swap",
        "--repo-name",
        REPO_NAME,
    )
    assert result.exit_code == 0, result.output
    tasks = list(load_tasks(out))
    assert tasks and {t.metadata["method"] for t in tasks} <= {"op_change", "op_swap"}
    funnel = json.loads((tmp_path / "cands.jsonl.funnel.json").read_text())
    assert funnel[0]["written"] == len(tasks)
    assert "next: repogym validate" in result.stdout
    assert (tmp_path / "synth-repos" / "acme__shapes.git").is_dir()
    split = invoke(
        "tasks",
        "split",
        str(out),
        "--by",
        "function",
        "--ratio",
        "0.5",
        "--out",
        str(tmp_path / "split"),
        "--seed",
        "1",
    )
    assert split.exit_code == 0, split.output
    assert {p.name for p in (tmp_path / "split").iterdir()} == {"train.jsonl", "test.jsonl", "manifest.json"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--methods", "op_chnage"], "unknown method(s) ['op_chnage']; known: class_remove_base"),
        (["--rev", "nope"], "no commit named 'nope'"),
    ],
)
def test_bad_synth_options_exit_2_with_the_fix(repo, tmp_path, args, message):
    result = invoke("synth", str(repo), "--out", str(tmp_path / "c.jsonl"), *args)
    assert result.exit_code == 2
    assert message in result.output


def test_split_refuses_an_unknown_mode(tmp_path, swebench_sample_path):
    result = invoke("tasks", "split", str(swebench_sample_path), "--by", "author", "--out", str(tmp_path))
    assert result.exit_code == 2 and "choose one of repo, file, function, time" in result.output


def test_validate_offers_the_issue_writer():
    result = invoke("validate", "--help")
    assert "--issue-writer" in result.stdout and "--base-url" in result.stdout
