"""Bad input to `train verifier` and `verify`: one line naming the file or field, exit status 2, no traceback,
and nothing trained."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repogym.cli import app


def cli(*args: str):
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    return " ".join(result.output.split())  # the error line, unwrapped


def copy_without(folder: Path, target: Path, *names: str) -> Path:
    shutil.copytree(folder, target, ignore=shutil.ignore_patterns(*names))
    return target


def test_a_verifier_folder_without_its_tokenizer_is_named(tmp_path, tiny_model, graded_rollouts):
    folder = copy_without(tiny_model, tmp_path / "v", "tokenizer*")
    output = cli("verify", *graded_rollouts.all, "--verifier", str(folder), "--out", str(tmp_path / "out"))
    assert f"--verifier: {folder} has no tokenizer" in output
    assert not (tmp_path / "out").exists()


def test_a_verifier_folder_without_a_chat_template_is_named(tmp_path, tiny_model, graded_rollouts):
    folder = copy_without(tiny_model, tmp_path / "v", "chat_template.jinja")
    output = cli("verify", *graded_rollouts.all, "--verifier", str(folder), "--out", str(tmp_path / "out"))
    assert f"--verifier: the tokenizer in {folder} has no chat template" in output
    assert "repogym train verifier" in output  # the fix


@pytest.mark.parametrize(("kinds", "missing"), [(("note", "empty"), "resolved"), (("gold",), "unresolved")])
def test_rollouts_with_only_one_kind_of_attempt_are_refused(
    tmp_path, tiny_model, graded_rollouts, kinds, missing
):
    folders = [str(graded_rollouts.folders[kind]) for kind in kinds]
    output = cli("train", "verifier", *folders, "--base-model", str(tiny_model), "--out", str(tmp_path / "v"))
    assert f"{', '.join(folders)}: no {missing} attempt among {11 * len(kinds)} graded one(s)" in output
    assert not (tmp_path / "v").exists()


def test_an_explicit_split_with_a_task_on_both_sides_is_refused(tmp_path, tiny_model, graded_rollouts):
    split = tmp_path / "split.json"
    split.write_text(json.dumps({"train": ["toy__calc-1", "a"], "heldout": ["b", "toy__calc-1"]}))
    output = cli("train", "verifier", *graded_rollouts.all, "--base-model", str(tiny_model), "--out",
                 str(tmp_path / "v"), "--split", str(split))  # fmt: skip
    assert f"--split {split}: 1 task(s) on both sides (toy__calc-1)" in output


def test_a_split_whose_training_side_has_one_kind_is_refused(tmp_path, tiny_model, graded_rollouts):
    """Every attempt of a task is on one side, so a training side of tasks with no resolved attempt is caught
    even when the rollouts as a whole hold both kinds."""
    split = tmp_path / "split.json"
    split.write_text(json.dumps({"train": ["nothing-here"], "heldout": ["toy__calc-1"]}))
    output = cli("train", "verifier", *graded_rollouts.all, "--base-model", str(tiny_model), "--out",
                 str(tmp_path / "v"), "--split", str(split))  # fmt: skip
    assert "the training side of the split (1 task(s)): no resolved attempt among 0 graded one(s)" in output


def test_a_folder_that_is_no_rollout_is_named(tmp_path, tiny_model):
    output = cli(
        "train", "verifier", str(tmp_path), "--base-model", str(tiny_model), "--out", str(tmp_path / "v")
    )
    assert f"{tmp_path}: not a rollout folder" in output
