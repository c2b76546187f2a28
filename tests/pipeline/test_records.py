"""Resume: each stage's result is recorded in its own folder and read back equal; the Runner runs a stage only
when its folder holds no result, and anything that is not this layout's record is refused by name."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from repogym.agent.policies import PolicyConfig
from repogym.config import validate_config
from repogym.dataset import load_tasks, save_tasks
from repogym.errors import ConfigError
from repogym.evaluate.run import EvalConfig
from repogym.locate import task_locations
from repogym.pipeline.data import DataResult
from repogym.pipeline.demos import DemosResult
from repogym.pipeline.evaluate import EvalInput, EvalResult, RolloutResult, eval_stage
from repogym.pipeline.flywheel import STATE_FILE, run_flywheel
from repogym.pipeline.grpo import GRPOResult
from repogym.pipeline.model import ModelResult
from repogym.pipeline.record import StageResult
from repogym.pipeline.runner import Hooks, Runner
from repogym.pipeline.sft import SFTDataResult, SFTResult
from repogym.pipeline.split import HELD_OUT_SPLITS, SplitInput, SplitResult, split_stage
from repogym.task import Source, Task

#: One result of each stage's type, with the values a small quickstart wrote (tuples, dicts and None too).
RESULTS = [
    DataResult(
        repos=("samples/calcium", "samples/textkit"), planted_fixes=6, commits_scanned=24, candidates=6,
        synth_candidates=12, validated=17, privacy_dropped=1, tasks=16, gold_resolved=16, empty_resolved=0,
        timings={"generate_s": 0.41, "mine_s": 1.7, "synth_s": 38.2, "validate_s": 95.0, "grade_s": 30.5},
    ),
    SplitResult(train=7, heldout_functions=3, heldout_repo=6),
    ModelResult(model_dir="/qs/model/pretrained", cached=True, steps=158, final_loss=2.31, train_s=121.9),
    DemosResult(repo_rows=40, corpus_rows=100, corpus={"cached": False, "rows": 100, "by_method": {"op_swap": 7}},
                repos={"files": 3, "rows": 40, "dropped": {}}),
    SFTDataResult(rows=12, resolved=0, gold=12),
    SFTResult(model_dir="/qs/train/sft", steps=36, final_loss=None, rows=12),
    GRPOResult(model_dir="/qs/train/grpo", steps=2, reward_first=-0.6, reward_last=None),
    RolloutResult(resolve_rate=0.25, attempts=8, resolved=2),
]  # fmt: skip


@pytest.mark.parametrize("result", RESULTS, ids=lambda result: type(result).__name__)
def test_a_stage_result_reads_back_equal_from_its_folder(result, tmp_path):
    kind = type(result)
    assert kind.find(tmp_path) is None  # nothing recorded: the stage has not finished here
    path = result.save(tmp_path)
    assert path.parent == tmp_path and path.name == kind.RECORD
    assert kind.find(tmp_path) == result
    assert json.loads(path.read_text())["result"] == kind.__name__


@dataclass(frozen=True)
class CountInput:
    folder: Path
    number: int


@dataclass(frozen=True)
class CountResult(StageResult):
    doubled: int


CALLS: list[int] = []


def count_stage(given: CountInput, hooks: Hooks) -> CountResult:
    CALLS.append(given.number)
    if given.number < 0:
        raise ValueError("killed midway")
    return CountResult(doubled=2 * given.number)


def test_the_runner_runs_a_stage_once_and_reads_it_back_after(tmp_path):
    CALLS.clear()
    lines: list[str] = []
    done: list[tuple[str, StageResult]] = []
    run = Runner(Hooks(notify=lines.append, finished=lambda label, result: done.append((label, result))))
    with pytest.raises(ValueError):
        run("count", count_stage, CountInput(tmp_path, -1))
    assert CountResult.find(tmp_path) is None, "a stage that raised must not be recorded as finished"
    first = run("count", count_stage, CountInput(tmp_path, 21))
    again = run("count", count_stage, CountInput(tmp_path, 21))
    assert first == again == CountResult(42)
    assert CALLS == [-1, 21], "the finished stage ran again"
    assert lines == ["count: running", "count: running", "count: done earlier, skipped"]
    assert done == [("count", first), ("count", first)]


def test_a_record_of_another_stage_or_an_unreadable_one_is_refused_by_file(tmp_path):
    SplitResult(train=1, heldout_functions=1, heldout_repo=1).save(tmp_path)
    with pytest.raises(ConfigError, match=r"stage\.json: the record of a SplitResult, not of a ModelResult"):
        ModelResult.find(tmp_path)
    (tmp_path / "stage.json").write_text('{"kind": "repogym.stage", "layout": 2, "result": "SplitResult", "fi')
    with pytest.raises(ConfigError, match=r"stage\.json: unreadable .*delete it to run the stage again"):
        SplitResult.find(tmp_path)
    (tmp_path / "stage.json").write_text('{"kind": "repogym.stage", "layout": 1, "result": "SplitResult"}')
    with pytest.raises(ConfigError, match=r"not a 'repogym\.stage' file of layout 2"):
        SplitResult.find(tmp_path)
    (tmp_path / "summary.json").write_text('{"kind": "repogym.rollout", "attempts": 4}')  # not an eval's
    with pytest.raises(ConfigError, match=r"summary\.json: not the summary of a finished `repogym eval`"):
        EvalResult.find(tmp_path)


def synthetic_task(repo: str, number: int, function: str) -> Task:
    """A synthetic single-line bug in `function` of `repo`'s lib.py (as synth records it in metadata)."""
    patch = f"--- a/lib.py\n+++ b/lib.py\n@@ -{number} +{number} @@\n-    return x - {number}\n+    return x + {number}\n"
    return Task(
        instance_id=f"{repo.replace('/', '__')}-{number}", repo=repo, base_commit="0" * 40, patch=patch,
        FAIL_TO_PASS=[f"tests/test_lib.py::test_{function}"], source=Source.SYNTHETIC, license="MIT",
        metadata={"method": "op_change", "file": "lib.py", "function": function},
    )  # fmt: skip


def test_the_split_stage_shares_no_function_and_reads_back_its_counts(tmp_path):
    """Eight functions with one or two bugs each in one repository, and a held-out repository."""
    tasks = [synthetic_task("o/lib", n, f"f{n % 8}") for n in range(12)]
    tasks += [synthetic_task("o/held", n, "g") for n in range(3)]
    save_tasks(tasks, tmp_path / "tasks.jsonl")
    given = SplitInput(tmp_path / "tasks.jsonl", tmp_path / "split", "o/held", ratio=0.6, seed=0)
    result = Runner(Hooks())("split", split_stage, given)
    sides = {name: list(load_tasks(tmp_path / "split" / f"{name}.jsonl")) for name in ("train", *HELD_OUT_SPLITS)}
    assert result == SplitResult(*(len(sides[name]) for name in ("train", *HELD_OUT_SPLITS)))
    assert result.train and result.heldout_functions and result.heldout_repo == 3
    functions = {name: {(t.repo, *loc) for t in side for loc in task_locations(t)} for name, side in sides.items()}
    assert not functions["train"] & functions["heldout-functions"]
    assert {t.repo for t in sides["heldout-repo"]} == {"o/held"}
    assert SplitResult.find(tmp_path / "split") == result


@pytest.mark.slow
def test_the_data_stage_reads_back_what_it_recorded(sample_data):
    assert DataResult.find(sample_data.out) == sample_data.result
    assert sample_data.result.behaved and len(sample_data.result.repos) == 1
    assert len(list(load_tasks(sample_data.tasks_file))) == sample_data.result.tasks


@pytest.mark.slow
def test_an_eval_is_read_back_from_its_own_summary_and_counts_its_attempts(toy_task, tmp_path):
    """The gold policy on the toy task (real sandbox): the eval folder's summary.json is the stage's record."""
    tasks = tmp_path / "tasks.jsonl"
    save_tasks([toy_task], tasks)
    config = EvalConfig(tasks=str(tasks), policy=PolicyConfig(spec="scripted:gold"), out=str(tmp_path / "e"),
                        stage="baseline", split="toy")  # fmt: skip
    counts: list[tuple[str, int, int]] = []
    run = Runner(Hooks(progress=lambda what, done, total: counts.append((what, done, total))))
    result = run("eval", eval_stage, EvalInput(config))
    assert result == EvalResult(pass_at_1=1.0, low=1.0, high=1.0, tasks=1, resolve_rate=1.0)
    assert counts[-1] == ("eval baseline-toy: 1/1 resolved", 1, 1)
    assert EvalResult.find(tmp_path / "e") == result
    assert run("eval", eval_stage, EvalInput(config)) == result and len(counts) == 3  # read back: no attempt


def test_a_flywheel_folder_of_the_older_single_ledger_layout_is_refused_before_any_stage(tiny_model, tmp_path):
    train, held_out = tmp_path / "train.jsonl", tmp_path / "held_out.jsonl"
    save_tasks([synthetic_task("o/lib", n, f"f{n}") for n in range(2)], train)
    save_tasks([synthetic_task("o/lib", 9, "f9")], held_out)
    config = validate_config({
        "base_model": str(tiny_model), "env": {"task_set": str(train), "mode": "agentless"},
        "output_dir": str(tmp_path / "fw"), "flywheel": {"eval_task_set": str(held_out)},
    })  # fmt: skip
    (tmp_path / "fw").mkdir()
    (tmp_path / "fw" / STATE_FILE).write_text(json.dumps({"stages": {"baseline": 0.0}}))
    lines: list[str] = []
    with pytest.raises(ConfigError, match=r"flywheel\.json: written by an older repogym.*new output_dir"):
        run_flywheel(config, 1, Hooks(notify=lines.append))
    assert not lines and sorted(p.name for p in (tmp_path / "fw").iterdir()) == [STATE_FILE]
