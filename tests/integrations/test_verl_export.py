"""`repogym export verl`: rows in verl's schema, read back as verl's dataset reads them, prompts the env's own."""

from __future__ import annotations

import json

import pyarrow
import pyarrow.parquet
import yaml

import repogym.env
from repogym.dataset import save_tasks
from repogym.env.tools import tool_names
from repogym.integrations.verl import GroundTruth, Mode
from repogym.integrations.verl_export import AGENT_LOOP_CLASS, AGENT_LOOP_NAME, TOOL_CLASS, verl_row

from ..support.cli import cli

MESSAGES = pyarrow.list_(pyarrow.struct([("role", pyarrow.string()), ("content", pyarrow.string())]))


def test_the_parquet_has_verls_columns_and_types(agentless_export):
    schema = pyarrow.parquet.read_schema(agentless_export.parquet)
    assert schema.names == ["data_source", "prompt", "ability", "reward_model", "extra_info"]
    assert schema.field("prompt").type == MESSAGES  # chat messages, as RLHFDataset's prompt_key reads them
    assert schema.field("reward_model").type == pyarrow.struct(
        [("style", pyarrow.string()), ("ground_truth", pyarrow.string())]
    )
    assert schema.field("extra_info").type == pyarrow.struct(
        [("index", pyarrow.int64()), ("instance_id", pyarrow.string())]
    )


def test_rows_read_back_through_datasets_as_they_were_written(agentless_export, toy_task, toy_runtime):
    import datasets

    loaded = datasets.load_dataset("parquet", data_files=str(agentless_export.parquet))[
        "train"
    ]  # as verl does
    env = repogym.env.make(toy_task.instance_id, toy_task, mode="agentless", runtime=toy_runtime)
    observation, _ = env.reset()
    expected = verl_row(0, toy_task, [{"role": "user", "content": observation}], Mode.AGENTLESS, "bwrap")
    assert len(loaded) == 1 and loaded[0] == expected
    assert GroundTruth.from_json(loaded[0]["reward_model"]["ground_truth"]).task == toy_task


def test_agent_rows_name_repogym_agent_loop_and_give_every_tool_its_kwargs(agent_export, toy_task):
    row = pyarrow.parquet.read_table(agent_export.parquet).to_pylist()[0]
    assert row["agent_name"] == AGENT_LOOP_NAME
    assert [m["role"] for m in row["prompt"]] == ["system", "user"] and "submit" in row["prompt"][0][
        "content"
    ]
    assert list(row["extra_info"]["tools_kwargs"]) == tool_names()
    assert row["extra_info"]["tools_kwargs"]["bash"] == {
        "create_kwargs": {"instance_id": toy_task.instance_id}
    }
    assert GroundTruth.from_json(row["reward_model"]["ground_truth"]).mode is Mode.AGENT


def test_agent_mode_writes_verls_tool_and_agent_loop_configs(agent_export):
    tools = yaml.safe_load(agent_export.tool_config.read_text())["tools"]
    assert [tool["config"] for tool in tools] == [{"type": "native", "tool": name} for name in tool_names()]
    assert {tool["class_name"] for tool in tools} == {TOOL_CLASS}
    assert yaml.safe_load(agent_export.agent_loop_config.read_text()) == [
        {"name": AGENT_LOOP_NAME, "_target_": AGENT_LOOP_CLASS}
    ]


def test_the_command_writes_the_export_and_reports_it_as_json(toy_tasks_file, tmp_path):
    result = cli("export", "verl", str(toy_tasks_file), "--out", str(tmp_path), "--mode", "agent", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report == {
        "parquet": str(tmp_path / "tasks.parquet"),
        "rows": 1,
        "mode": "agent",
        "tool_config": str(tmp_path / "tool_config.yaml"),
        "agent_loop_config": str(tmp_path / "agent_loop.yaml"),
    }
    assert pyarrow.parquet.read_table(tmp_path / "tasks.parquet").num_rows == 1


def test_tasks_that_cannot_be_graded_are_refused(toy_task, tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    save_tasks([toy_task, toy_task.replace(instance_id="toy__untested-2", FAIL_TO_PASS=[])], tasks)
    result = cli("export", "verl", str(tasks), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2 and "toy__untested-2" in result.output and "FAIL_TO_PASS" in result.output
    assert not (tmp_path / "out").exists()


def test_the_export_never_overwrites_its_own_task_file(toy_task, tmp_path):
    tasks = tmp_path / "tasks.parquet"
    save_tasks([toy_task], tasks)
    before = tasks.read_bytes()
    result = cli("export", "verl", str(tasks), "--out", str(tmp_path))
    assert result.exit_code == 2 and "overwrite" in result.output and tasks.read_bytes() == before


def test_the_example_configs_are_what_the_export_writes(agent_export, examples_dir):
    for written in (agent_export.tool_config, agent_export.agent_loop_config):
        example = examples_dir / "verl" / written.name
        assert yaml.safe_load(example.read_text()) == yaml.safe_load(written.read_text()), example
