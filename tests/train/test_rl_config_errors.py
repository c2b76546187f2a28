"""Bad input to `repogym train rl` fails before any training, naming the key at fault and the fix."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repogym.cli import app
from repogym.config import load_config
from repogym.errors import ConfigError
from repogym.train.grpo import train_rl

from ..support.rl import fast_settings

RUNNER = CliRunner()


@pytest.fixture
def run(tiny_model, toy_tasks_file, tmp_path, examples_dir):
    """The seed's YAML with overrides (a callable: extra overrides -> RunConfig), runnable on the toy task."""

    def make(*overrides: str):
        base = [
            f"base_model={tiny_model}", f"env.task_set={toy_tasks_file}", "env.mode=agentless",
            "rollout.num_candidates=2", "batch_size=2", "total_steps=1", f"output_dir={tmp_path / 'out'}",
            *(f"grpo.{key}={value}" for key, value in fast_settings().items() if key != "report_to"),
            "grpo.report_to=[]",
        ]  # fmt: skip
        return load_config(examples_dir / "seed_grpo.yaml", [*base, *overrides])

    return make


def fails(config, *needles: str) -> str:
    with pytest.raises(ConfigError) as caught:
        train_rl(config)
    message = str(caught.value)
    for needle in needles:
        assert needle in message, message
    return message


def test_unknown_reward_component_names_the_key_and_lists_the_known(run, tmp_path):
    fails(
        run("reward.components.1.fn=no_such_reward"), "reward.components.1.fn", "no_such_reward", "run_pytest"
    )
    assert not (tmp_path / "out").exists(), "nothing was written before the error"


def test_group_size_that_does_not_divide_the_batch(run):
    fails(run("batch_size=10", "rollout.num_candidates=4"), "batch_size", "rollout.num_candidates=4",
          "batch_size=12 or batch_size=8")  # fmt: skip
    fails(run("batch_size=4", "rollout.num_candidates=1"), "rollout.num_candidates", "at least 2")
    fails(run("batch_size=4", "grpo.gradient_accumulation_steps=3"), "grpo.gradient_accumulation_steps=3")


def test_no_tasks(run, tmp_path):
    fails(
        run("env.task_set=SWE-bench-verified-train"), "env.task_set", "not a task file", "repogym quickstart"
    )
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    fails(run(f"env.task_set={empty}"), "env.task_set", "empty")
    no_rows = tmp_path / "none.json"
    no_rows.write_text("[]")
    fails(run(f"env.task_set={no_rows}"), "env.task_set", "holds no tasks")


def test_base_model_that_is_not_a_model(run, tmp_path, tiny_model):
    fails(run("base_model=Qwen2.5-Coder-32B"), "base_model", "does not exist", "repogym model init DIR")
    not_model = tmp_path / "not-a-model"
    not_model.mkdir()
    fails(run(f"base_model={not_model}"), "base_model", "no config.json")
    no_weights = tmp_path / "no-weights"
    no_weights.mkdir()
    shutil.copy(tiny_model / "config.json", no_weights / "config.json")
    fails(run(f"base_model={no_weights}"), "base_model", "no weights")


def test_tokenizer_without_a_chat_template(run, tmp_path, tiny_model):
    copy = tmp_path / "no-template"
    shutil.copytree(tiny_model, copy)
    (copy / "chat_template.jinja").unlink()
    fails(run(f"base_model={copy}"), "base_model", "no chat template")


def test_env_options_are_checked(run):
    fails(run("env.options={observation_chars: many}"), "env.options", "observation_chars")
    fails(run("env.options={mode: agent}"), "env.options.mode", "env.mode")


def test_a_second_run_into_the_same_output_dir_needs_resume(run, tmp_path):
    checkpoint = tmp_path / "out" / "checkpoint-3"
    checkpoint.mkdir(parents=True)
    for name in ("trainer_state.json", "optimizer.pt", "scheduler.pt"):
        (checkpoint / name).write_text("{}")
    fails(run(), "output_dir", "checkpoint-3", "--resume")


def test_cli_exits_2_with_one_line_and_no_traceback(run, tmp_path, examples_dir, tiny_model, toy_tasks_file):
    result = RUNNER.invoke(app, [
        "train", "rl", str(examples_dir / "seed_grpo.yaml"), f"base_model={tiny_model}",
        f"env.task_set={toy_tasks_file}", "batch_size=30", f"output_dir={tmp_path / 'cli'}",
    ])  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "error: batch_size: 30 completions is not a multiple of rollout.num_candidates=16" in result.stderr
    assert not Path(tmp_path / "cli").exists()


def test_flywheel_needs_a_held_out_split(examples_dir, tiny_model, toy_tasks_file, tmp_path):
    result = RUNNER.invoke(app, [
        "train", "flywheel", str(examples_dir / "seed_grpo.yaml"), "--rounds", "1", f"base_model={tiny_model}",
        f"env.task_set={toy_tasks_file}", "rollout.num_candidates=2", "batch_size=2", f"output_dir={tmp_path / 'fw'}",
    ])  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "flywheel.eval_task_set: not set" in result.stderr
    same = RUNNER.invoke(app, [
        "train", "flywheel", str(examples_dir / "seed_grpo.yaml"), "--rounds", "1", f"base_model={tiny_model}",
        f"env.task_set={toy_tasks_file}", f"flywheel.eval_task_set={toy_tasks_file}", "rollout.num_candidates=2",
        "batch_size=2", f"output_dir={tmp_path / 'fw'}",
    ])  # fmt: skip
    assert same.exit_code == 2 and "must not be trained on" in same.stderr
