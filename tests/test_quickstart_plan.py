"""The quickstart's plan: what it records must be what it compares against on a resume."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from repogym.errors import ConfigError
from repogym.quickstart_loop import open_state
from repogym.quickstart_plan import make_plan
from repogym.train.mutation_demos import LEARNABLE_METHODS


def test_a_plan_with_tuple_fields_resumes_its_own_folder(tmp_path):
    plan = dataclasses.replace(make_plan(fast=True), eval_methods=LEARNABLE_METHODS, demo_rows=100)
    open_state(tmp_path, plan)
    open_state(tmp_path, plan)  # recorded as JSON (lists); the same plan must still match
    with pytest.raises(ConfigError, match="eval_methods"):
        open_state(tmp_path, dataclasses.replace(plan, eval_methods=("op_swap",)))


def test_seeds_sharing_a_pretrain_seed_share_one_cached_pretraining(tmp_path, monkeypatch):
    """The learning benchmark's three seeds can share one long pretraining: only SFT, GRPO and sampling
    then differ between them (`--pretrain-seed`)."""
    import repogym.train.corpus
    import repogym.train.pretrain
    from repogym.quickstart_loop import model_stage

    monkeypatch.setenv("REPOGYM_CACHE", str(tmp_path / "cache"))
    # repogym's own train package, not the whole standard library: seconds, not a minute.
    small = Path(repogym.train.corpus.__file__).parent
    for module in (repogym.train.corpus, repogym.train.pretrain):
        real = module.load_corpus
        monkeypatch.setattr(
            module, "load_corpus", lambda roots, chars, seed, real=real: real([str(small)], chars, seed)
        )
    base = dataclasses.replace(make_plan(fast=True), pretrain_minutes=0.02, pretrain_seed=0)
    first = model_stage(tmp_path / "seed-0", dataclasses.replace(base, seed=0), bars=False)
    second = model_stage(tmp_path / "seed-1", dataclasses.replace(base, seed=1), bars=False)
    assert not first["cached"] and second["cached"] and second["steps"] == first["steps"] > 0
    weights = [
        (tmp_path / s / "model" / "pretrained" / "model.safetensors").read_bytes()
        for s in ("seed-0", "seed-1")
    ]
    assert weights[0] == weights[1]
    assert dataclasses.replace(base, seed=1, pretrain_seed=None).model_seed == 1  # unshared: each its own


def test_a_folder_recorded_before_a_plan_field_was_added_still_resumes(tmp_path):
    """A field added with a default (here grpo_temperature, pretrain_seed) must not turn every earlier
    quickstart folder into "made with other settings"."""
    import json

    plan = make_plan(fast=True)
    open_state(tmp_path, plan)
    state_file = next(tmp_path.glob("*.json"))
    record = json.loads(state_file.read_text())
    for name in ("grpo_temperature", "pretrain_seed"):
        del record["stages"]["plan"][name]
    state_file.write_text(json.dumps(record))
    open_state(tmp_path, plan)
    with pytest.raises(ConfigError, match="grpo_temperature"):
        open_state(tmp_path, dataclasses.replace(plan, grpo_temperature=0.6))
