"""`repogym eval` and `repogym eval compare` on real rollouts of the toy task (real sandbox)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from repogym.agent.policies import PolicyConfig
from repogym.errors import ConfigError
from repogym.evaluate.run import EvalConfig, rollout_config
from repogym.grading.batch import BatchReport

from ..support.cli import cli

# Real sandboxed rollouts (session fixtures shared by both modules): one xdist worker builds them once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("evaluate-run-folders")]


def summary(folder):
    return json.loads((folder / "summary.json").read_text())


def test_summary_has_pass_at_1_and_pass_at_n_with_intervals(eval_world):
    baseline, sft = summary(eval_world.baseline), summary(eval_world.sft)
    assert baseline["kind"] == "repogym.eval" and baseline["n"] == 2 and baseline["ks"] == [1, 2]
    assert (baseline["pass@1"], baseline["pass@2"]) == (0.5, 0.5)  # calc-1 fixed twice, calc-2 never
    assert (sft["pass@1"], sft["pass@2"]) == (1.0, 1.0)
    assert sft["intervals"]["pass@1"] == [1.0, 1.0]
    low, high = baseline["intervals"]["pass@1"]
    assert low == 0.0 and high == 1.0  # two tasks, one solved: a resample can draw either twice
    assert (
        baseline["bootstrap"]["resamples"] == 200
        and baseline["stage"] == "baseline"
        and baseline["split"] == "toy"
    )
    assert baseline["per_task"]["toy__calc-2"]["outcomes"] == ["UNRESOLVED", "UNRESOLVED"]


def test_breakdowns_per_method_difficulty_and_split(eval_world):
    breakdown = summary(eval_world.baseline)["breakdown"]
    assert breakdown["method"]["flip_operator"]["pass@1"] == 1.0  # metadata["method"] of the synth task
    assert breakdown["method"]["synthetic"]["pass@1"] == 0.0  # no method: grouped by source
    assert set(breakdown["difficulty"]) == {"easy", "patch 1-2 lines"}  # stated, else the gold patch's size (synth's record is no label)
    assert breakdown["split"] == {"heldout-functions": breakdown["method"]["flip_operator"]}
    assert breakdown["repo"]["toy/calc"]["tasks"] == 2


def test_predictions_are_first_attempts_and_grade_the_same_with_repogym_grade(eval_world, tmp_path):
    rows = [json.loads(line) for line in (eval_world.baseline / "predictions.jsonl").read_text().splitlines()]
    assert [r["instance_id"] for r in rows] == ["toy__calc-1", "toy__calc-2"]
    assert {r["model_name_or_path"] for r in rows} == {f"scripted:{eval_world.root / 'half.jsonl'}"}
    assert "NOTES.md" in rows[1]["model_patch"] and "a + b" in rows[0]["model_patch"]
    report = json.loads((eval_world.baseline / "swebench_report.json").read_text())
    assert set(report) == set(BatchReport().to_dict())  # the shape `repogym grade --predictions` writes
    assert report["resolved_ids"] == ["toy__calc-1"] and report["unresolved_ids"] == ["toy__calc-2"]
    regraded = cli("grade", str(eval_world.tasks), "--predictions", str(eval_world.baseline / "predictions.jsonl"),
                   "--out", str(tmp_path / "regraded.json"))  # fmt: skip
    assert regraded.exit_code == 0, regraded.output
    again = json.loads((tmp_path / "regraded.json").read_text())
    for key in ("resolved_ids", "unresolved_ids", "submitted_ids", "error_ids", "empty_patch_ids"):
        assert again[key] == report[key], key


def test_rerunning_the_same_eval_resumes_and_rewrites_the_same_scores(eval_world):
    before = summary(eval_world.sft)
    result = cli("eval", str(eval_world.tasks), "--policy", "scripted:gold", "-n", "2", "--stage", "sft",
                 "--split", "toy", "--bootstrap", "200", "--out", str(eval_world.sft))  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "resuming: 4 attempt(s) already" in result.output
    assert summary(eval_world.sft) == before


def test_compare_identical_runs_gives_zero_deltas(eval_world, tmp_path):
    out = tmp_path / "cmp.json"
    result = cli("eval", "compare", str(eval_world.sft), str(eval_world.sft_again), "--out", str(out))
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["tasks"] == 2 and data["delta"] == 0.0 and data["interval"] == [0.0, 0.0]
    assert all(row["delta"] == 0.0 for row in data["per_task"].values()) and data["changed"] == []


def test_compare_reports_paired_deltas_and_the_tasks_that_changed(eval_world):
    result = cli("eval", "compare", str(eval_world.baseline), str(eval_world.sft), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["delta"] == 0.5 and data["resolve_rate_a"] == 0.5 and data["resolve_rate_b"] == 1.0
    assert data["changed"] == [{"instance_id": "toy__calc-2", "a": 0.0, "b": 1.0, "delta": 1.0}]
    assert data["interval"] == [0.0, 1.0] and data["bootstrap"]["paired"] is True
    table = cli("eval", "compare", str(eval_world.baseline), str(eval_world.sft))
    assert "B - A = +50.0%" in table.output and "toy__calc-2" in table.output


def test_compare_names_a_folder_that_is_not_an_eval(eval_world, tmp_path):
    result = cli("eval", "compare", str(tmp_path), str(eval_world.sft))
    assert result.exit_code == 2 and str(tmp_path) in result.output and "summary.json" in result.output


def test_bad_arguments_exit_2_before_any_attempt(eval_world, tmp_path):
    out = tmp_path / "never"
    bad_k = cli(
        "eval", str(eval_world.tasks), "--policy", "scripted:gold", "-n", "2", "--k", "3", "--out", str(out)
    )
    assert bad_k.exit_code == 2 and "--k 3" in bad_k.output
    bad_option = cli("eval", str(eval_world.tasks), "--policy", "scripted:gold", "--env-option", "observaton_chars=10",
                     "--out", str(out))  # fmt: skip
    assert (
        bad_option.exit_code == 2 and "observation_chars" in bad_option.output
    )  # the close match is suggested
    assert not (out / "rollout").exists()


def test_mode_and_context_reach_the_rollout_or_are_refused_by_name(eval_world, tmp_path):
    """--mode and --context reach the rollout the eval runs (its mode, its env options); a value the env does
    not know is refused before any attempt, with an error naming the option and the value."""
    config = EvalConfig(tasks=str(eval_world.tasks), policy=PolicyConfig("scripted:gold"), out=str(tmp_path / "e"),
                        mode="agentless")  # fmt: skip
    assert rollout_config(config).mode == "agentless"
    windowed = dataclasses.replace(config, mode="agent", context="window")
    assert rollout_config(windowed).mode == "agent"
    assert rollout_config(windowed).env_options["context"] == "window"
    assert "context" not in rollout_config(dataclasses.replace(config, mode="agent")).env_options  # the default
    with pytest.raises(ConfigError, match="--mode 'agentles'"):
        rollout_config(dataclasses.replace(config, mode="agentles"))
    with pytest.raises(ConfigError, match=r"context: .*'windw'"):
        rollout_config(dataclasses.replace(windowed, context="windw"))
    assert rollout_config(dataclasses.replace(config, mode="agent")).out == str(tmp_path / "e" / "rollout")
