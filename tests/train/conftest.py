"""Fixtures for training tests: the shared tiny model, a small repo whose tasks are one-line fixes, and
(for GRPO) the toy task and validated sample-repository tasks; GRPO helpers live in rl_support.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from repogym.dataset import save_tasks
from repogym.task import Source, Task

sys.path.insert(0, str(Path(__file__).parent))

#: Buggy functions at the base commit; each task fixes one line (bug, fix, issue text).
BUGS = [
    (
        "def add(a, b):\n    return a - b\n",
        "    return a - b",
        "    return a + b",
        "add(2, 3) returns -1 instead of 5.",
    ),
    (
        "def mul(a, b):\n    return a + b\n",
        "    return a + b",
        "    return a * b",
        "mul(2, 4) returns 6 instead of 8.",
    ),
    ("def neg(a):\n    return a\n", "    return a", "    return -a", "neg(3) returns 3 instead of -3."),
    ("def is_pos(a):\n    return a < 0\n", "    return a < 0", "    return a > 0", "is_pos(2) is False."),
    (
        "def half(a):\n    return a * 2\n",
        "    return a * 2",
        "    return a / 2",
        "half(8) returns 16, not 4.",
    ),
]


def _git(repo: Path, *args: str) -> str:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(repo), "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "T",
        "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
    }  # fmt: skip
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout


def make_bug_tasks(root: Path) -> list[Task]:
    """A git repo `ops` with one file of five buggy functions (padding between them) and a task per bug."""
    repo = root / "ops"
    repo.mkdir(parents=True)
    padding = "".join(f"\n\ndef helper_{i}(x):\n    return x + {i}\n" for i in range(4))
    source = "\n\n".join(
        code + padding.replace("helper_", f"helper{n}_") for n, (code, *_) in enumerate(BUGS)
    )
    (repo / "ops.py").write_text(source)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "ops")
    base = _git(repo, "rev-parse", "HEAD").strip()
    tasks = []
    for n, (_, bug, fix, issue) in enumerate(BUGS):
        (repo / "ops.py").write_text(source.replace(bug + "\n", fix + "\n", 1))
        patch = _git(repo, "diff")
        _git(repo, "checkout", "-q", "--", "ops.py")
        tasks.append(
            Task(
                instance_id=f"ops__ops-{n}",
                repo="ops/ops",
                base_commit=base,
                patch=patch,
                test_patch="",
                problem_statement=issue,
                FAIL_TO_PASS=[f"tests/test_ops.py::test_{n}"],
                PASS_TO_PASS=[],
                source=Source.SYNTHETIC,
                repo_source=str(repo),
                license="MIT",
            )
        )
    return tasks


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
