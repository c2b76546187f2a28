"""Fixtures of the bridges' tests: the toy task in a task file, exported for verl and OpenRLHF once per run."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from repogym.dataset import save_tasks
from repogym.env.base import read_originals
from repogym.integrations.openrlhf_export import OpenRLHFExport, export_openrlhf
from repogym.integrations.rows import Mode
from repogym.integrations.verl_export import VerlExport, export_verl
from repogym.patches import changed_paths
from repogym.search_replace import answer_from_patch

from ..support.cli import cli


@pytest.fixture(scope="session")
def toy_tasks_file(toy_task, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("verl-tasks") / "tasks.jsonl"
    save_tasks([toy_task], path)
    return path


@pytest.fixture(scope="session")
def agentless_export(toy_tasks_file: Path, tmp_path_factory: pytest.TempPathFactory) -> VerlExport:
    return export_verl(toy_tasks_file, tmp_path_factory.mktemp("verl-agentless"), Mode.AGENTLESS)


@pytest.fixture(scope="session")
def agent_export(toy_tasks_file: Path, tmp_path_factory: pytest.TempPathFactory) -> VerlExport:
    return export_verl(toy_tasks_file, tmp_path_factory.mktemp("verl-agent"), Mode.AGENT)


@pytest.fixture(scope="session")
def openrlhf_agentless_export(
    toy_tasks_file: Path, tmp_path_factory: pytest.TempPathFactory
) -> OpenRLHFExport:
    return export_openrlhf(toy_tasks_file, tmp_path_factory.mktemp("openrlhf-agentless"), Mode.AGENTLESS)


@pytest.fixture(scope="session")
def openrlhf_agent_export(toy_tasks_file: Path, tmp_path_factory: pytest.TempPathFactory) -> OpenRLHFExport:
    return export_openrlhf(toy_tasks_file, tmp_path_factory.mktemp("openrlhf-agent"), Mode.AGENT)


@pytest.fixture(scope="session")
def gold_answer(toy_task, toy_runtime) -> str:
    """The SWE-RL answer reproducing the toy task's gold patch (whole-file context, as the export shows)."""
    files = read_originals(toy_runtime.pristine, changed_paths(toy_task.patch))
    return answer_from_patch(toy_task.patch, files)


@pytest.fixture
def cli_grade(toy_task, toy_tasks_file: Path) -> Callable[..., dict[str, Any]]:
    """`repogym grade TASKS --instance TOY HOW... --json`: the toy task's grade as a user gets it."""

    def grade(*how: str) -> dict[str, Any]:
        result = cli("grade", str(toy_tasks_file), "--instance", toy_task.instance_id, *how, "--json")
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    return grade
