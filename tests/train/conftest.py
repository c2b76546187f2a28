"""Fixtures for the training tests: a tiny random-weight model and task files (helpers: rl_support.py).

Everything is real: the tiny model is a transformers folder built by repogym.train.tiny, the
tasks are git repositories graded in the bwrap sandbox, and runs use TRL's GRPOTrainer on CPU.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from repogym.dataset import save_tasks

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 1-5M parameter Llama with repogym's tokenizer and chat template (random weights)."""
    from repogym.train.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="session")
def toy_tasks_file(toy_task, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The toy task (one bug in calc.add) as a task file."""
    path = tmp_path_factory.mktemp("toy-tasks") / "tasks.jsonl"
    save_tasks([toy_task], path)
    return path


@pytest.fixture(scope="session")
def sample_tasks_file(toy_task, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Validated tasks of one generated sample repository: what `repogym quickstart --repos 1` writes."""
    from repogym.quickstart import run_quickstart

    result = run_quickstart(tmp_path_factory.mktemp("quickstart") / "qs", n_repos=1, workers=2)
    assert result.tasks, "the sample repository yielded no validated task"
    return result.out_dir / "tasks.jsonl"
