"""The quickstart's plan: what it records must be what it compares against on a resume."""

from __future__ import annotations

import dataclasses

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
