"""Real run folders for eval and report tests, built once per session on the toy task (real sandbox).

- `eval_world`: a task file of two toy tasks (one with synth metadata and a split, one with a
  stated difficulty) and three `repogym eval` folders of n=2 attempts: `baseline` (a script that
  fixes toy__calc-1 only and, on toy__calc-2, writes hostile HTML/JS into its reply, a tool call and
  its diff), `sft` and `sft-again` (scripted:gold, twice: identical runs).
- `report_inputs`: those folders plus a real mining funnel (`repogym mine --funnel` on a generated
  sample library), a real validation funnel (`repogym validate` on the toy tasks), a real synth
  funnel (`repogym synth` on the same library) and metrics.jsonl files in train/metrics.py's row
  format (`step`, `wall_s` plus what the trainer logged; the trainers' own runs are tested in
  tests/train).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from repogym.dataset import save_tasks
from repogym.testing import FIXED_SOURCE

from ..support.cli import cli
from ..support.eval_world import HOSTILE, EvalWorld, write_metrics


@pytest.fixture(scope="session")
def eval_world(tmp_path_factory: pytest.TempPathFactory, toy_task) -> EvalWorld:
    root = tmp_path_factory.mktemp("eval-world")
    first = toy_task.replace(metadata={
        "method": "flip_operator", "file": "src/calc/__init__.py", "function": "add", "split": "heldout-functions",
        "difficulty": {"lines_changed": 2, "fail_to_pass": None},  # repogym synth's record, not a label
    })  # fmt: skip
    second = toy_task.replace(instance_id="toy__calc-2", metadata={"difficulty": "easy"})
    tasks = root / "tasks.jsonl"
    save_tasks([first, second], tasks)
    fix = {"name": "create_file", "arguments": {"path": "src/calc/__init__.py", "text": FIXED_SOURCE}}
    hostile_turn = {
        "content": HOSTILE,
        "tool_calls": [
            {"name": "bash", "arguments": {"command": f"echo {json.dumps(HOSTILE)}"}},
            {"name": "create_file", "arguments": {"path": "NOTES.md", "text": HOSTILE + "\n"}},
        ],
    }
    script = root / "half.jsonl"
    script.write_text(
        json.dumps({"instance_id": "toy__calc-1", "actions": [fix, "submit()"]}) + "\n"
        + json.dumps({"actions": [hostile_turn, "submit()"]}) + "\n"
    )  # fmt: skip
    runs = {
        "baseline": (f"scripted:{script}", "baseline"),
        "sft": ("scripted:gold", "sft"),
        "sft-again": ("scripted:gold", "sft"),
    }
    for name, (policy, stage) in runs.items():
        result = cli("eval", str(tasks), "--policy", policy, "-n", "2", "-j", "2", "--stage", stage,
                     "--split", "toy", "--bootstrap", "200", "--out", str(root / name))  # fmt: skip
        assert result.exit_code == 0, result.output
    return EvalWorld(root, tasks, root / "baseline", root / "sft", root / "sft-again")


@pytest.fixture(scope="session")
def report_inputs(tmp_path_factory: pytest.TempPathFactory, eval_world: EvalWorld) -> list[Path]:
    from repogym.samples import generate_repo

    work = tmp_path_factory.mktemp("report-inputs")
    repo = generate_repo(work / "lib", seed=1, n_bug_fixes=2)
    mine = work / "mine"
    mined = cli(
        "mine",
        str(repo.path),
        "--out",
        str(mine / "candidates.jsonl"),
        "--funnel",
        str(mine / "mine.funnel.json"),
    )
    assert mined.exit_code == 0, mined.output
    validated = work / "validate"
    validated.mkdir()
    result = cli(
        "validate",
        str(eval_world.tasks),
        "--out",
        str(validated / "tasks.jsonl"),
        "--runs",
        "1",
        "--no-scrub",
    )
    assert result.exit_code == 0, result.output
    synth = work / "synth"
    synthed = cli("synth", str(repo.path), "--out", str(synth / "candidates.jsonl"), "--seed", "0",
                  "--methods", "op_change,op_swap,const_off_by_one", "--per-function", "1", "--max", "4")  # fmt: skip
    assert synthed.exit_code == 0, synthed.output
    train = work / "train"
    write_metrics(train / "sft", [
        {"step": s, "wall_s": 0.13 * s, "loss": 2.5 * math.exp(-s / 8) + 0.2, "grad_norm": 1.0 / s,
         "learning_rate": 1e-4 * (1 - s / 21), "epoch": s / 20}
        for s in range(1, 21)
    ])  # fmt: skip
    write_metrics(train / "grpo", [
        {"step": s, "wall_s": 0.7 * s, "reward": -0.5 + s / 10, "reward_std": 0.4, "rewards/tests_pass/mean": s / 10,
         "rewards/compile/mean": -0.1, "resolve_rate": s / 12, "completions/mean_length": 200 - 5 * s, "loss": 0.01}
        for s in range(1, 11)
    ])  # fmt: skip
    return [eval_world.baseline, eval_world.sft, train, mine, validated, synth]
