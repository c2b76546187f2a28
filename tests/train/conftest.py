"""Fixtures for training tests: the shared tiny model, a small repo whose tasks are one-line fixes, and
(for GRPO) the toy task and validated sample-repository tasks; GRPO helpers live in tests/support/rl.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repogym.dataset import save_tasks

from ..support.tasks import make_bug_tasks


@pytest.fixture(scope="session")
def bug_tasks_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bugs")
    tasks = make_bug_tasks(root)
    path = root / "tasks.jsonl"
    path.write_text("".join(json.dumps(task.to_dict()) + "\n" for task in tasks))
    return path


@pytest.fixture(scope="session")
def window_rows(tmp_path_factory: pytest.TempPathFactory, bug_tasks_file: Path) -> Path:
    """Agentless gold rows (1-line windows, oracle localization) for the five one-line bugs."""
    from repogym.train.sft_data import SFTDataOptions, build_sft_data, write_sft_data

    out = tmp_path_factory.mktemp("rows") / "sft.jsonl"
    write_sft_data(
        build_sft_data([bug_tasks_file], SFTDataOptions(context="window", window_lines=1), out), out
    )
    return out


@pytest.fixture(scope="session", autouse=True)
def one_torch_thread() -> None:
    """One intra-op thread per test process: on 2 shared cores, torch's OpenMP threads spinning against
    other processes made a tiny-model step 8x slower than with one thread."""
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tiny_model(tiny_model: Path) -> Path:
    """tests/conftest.py's tiny model; training tests skip without TRL rather than fail on importing it."""
    pytest.importorskip("trl", reason="training needs the 'train' extra")
    return tiny_model


@pytest.fixture(scope="session")
def toy_tasks_file(toy_task, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The toy task (one bug in calc.add) as a task file."""
    path = tmp_path_factory.mktemp("toy-tasks") / "tasks.jsonl"
    save_tasks([toy_task], path)
    return path


@pytest.fixture(scope="session")
def sample_tasks_file(toy_task, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Validated tasks of one generated sample repository: what `repogym quickstart --repos 1` writes."""
    from repogym.pipeline.data import DataInput, data_stage
    from repogym.pipeline.runner import SILENT

    out = tmp_path_factory.mktemp("quickstart") / "qs"
    result = data_stage(DataInput(out, repos=1, workers=2), SILENT)
    assert result.tasks, "the sample repository yielded no validated task"
    return out / "tasks.jsonl"
