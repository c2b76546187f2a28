"""The quickstart's plan: what it records must be what it compares against on a resume."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from repogym.errors import ConfigError
from repogym.pipeline.model import ModelResult, model_stage
from repogym.pipeline.plan import make_plan
from repogym.pipeline.quickstart import STATE_FILE, record_plan
from repogym.pipeline.quickstart_inputs import model_input
from repogym.pipeline.runner import SILENT, Hooks, Runner
from repogym.train.mutation_demos import LEARNABLE_METHODS


def test_a_plan_with_tuple_fields_resumes_its_own_folder(tmp_path):
    plan = dataclasses.replace(make_plan(fast=True), eval_methods=LEARNABLE_METHODS, demo_rows=100)
    record_plan(tmp_path, plan)
    record_plan(tmp_path, plan)  # recorded as JSON (lists); the same plan must still match
    with pytest.raises(ConfigError, match="eval_methods"):
        record_plan(tmp_path, dataclasses.replace(plan, eval_methods=("op_swap",)))


def test_seeds_sharing_a_pretrain_seed_share_one_cached_pretraining(tmp_path, monkeypatch):
    """The learning benchmark's three seeds can share one long pretraining: only SFT, GRPO and sampling
    then differ between them (`--pretrain-seed`). The model stage's result reads back from its folder."""
    import repogym.pipeline.model
    import repogym.train.corpus
    import repogym.train.pretrain

    monkeypatch.setenv("REPOGYM_CACHE", str(tmp_path / "cache"))
    # repogym's own train package, not the whole standard library: seconds, not a minute.
    small = Path(repogym.train.corpus.__file__).parent
    for module in (repogym.pipeline.model, repogym.train.pretrain):
        real = module.load_corpus
        monkeypatch.setattr(
            module, "load_corpus", lambda roots, chars, seed, real=real: real([str(small)], chars, seed)
        )
    base = dataclasses.replace(make_plan(fast=True), pretrain_minutes=0.02, pretrain_seed=0)
    first = model_stage(model_input(tmp_path / "seed-0", dataclasses.replace(base, seed=0)), SILENT)
    lines: list[str] = []
    run = Runner(Hooks(notify=lines.append))
    given = model_input(tmp_path / "seed-1", dataclasses.replace(base, seed=1))
    second = run("model", model_stage, given)
    assert not first.cached and second.cached and second.steps == first.steps > 0
    weights = [
        (tmp_path / s / "model" / "pretrained" / "model.safetensors").read_bytes()
        for s in ("seed-0", "seed-1")
    ]
    assert weights[0] == weights[1]
    assert dataclasses.replace(base, seed=1, pretrain_seed=None).model_seed == 1  # unshared: each its own

    assert ModelResult.find(tmp_path / "seed-1" / "model") == second
    assert run("model", model_stage, given) == second  # resumed: read back, not pretrained again
    assert lines == ["model: running", "model: done earlier, skipped"]


def test_a_folder_recorded_before_a_plan_field_was_added_still_resumes(tmp_path):
    """A field added with a default (here grpo_temperature, pretrain_seed) must not turn every earlier
    quickstart folder into "made with other settings"."""
    plan = make_plan(fast=True)
    record_plan(tmp_path, plan)
    state_file = tmp_path / STATE_FILE
    record = json.loads(state_file.read_text())
    for name in ("grpo_temperature", "pretrain_seed"):
        del record["plan"][name]
    state_file.write_text(json.dumps(record))
    record_plan(tmp_path, plan)
    with pytest.raises(ConfigError, match="grpo_temperature"):
        record_plan(tmp_path, dataclasses.replace(plan, grpo_temperature=0.6))


def test_a_folder_of_the_older_single_ledger_layout_is_refused_by_name(tmp_path):
    """An interrupted run of an older repogym kept every stage in quickstart.json's "stages": this one cannot
    resume it, and says so (not "other settings", not a silent restart over its files)."""
    plan = make_plan(fast=True)
    (tmp_path / STATE_FILE).write_text(json.dumps({"stages": {"plan": plan.to_dict(), "data": {"tasks": 3}}}))
    with pytest.raises(ConfigError, match=r"quickstart\.json: written by an older repogym.*new --out"):
        record_plan(tmp_path, plan)
