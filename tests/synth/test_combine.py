"""`combine`: validated bugs of one file merged into harder candidates, validated again."""

from __future__ import annotations

import pytest

from repogym.dataset import load_tasks
from repogym.errors import ConfigError
from repogym.patches import apply_patch
from repogym.synth.combine import combine
from repogym.validate import validate_candidates

from .test_synth_validate import git

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("synth-shapes")]


@pytest.fixture(scope="module")
def combined(shapes_validated):
    return combine(list(load_tasks(shapes_validated.out)), same="file", max_parts=3, seed=0)


def test_combined_candidates_hold_two_or_three_bugs_of_one_file(combined, shapes_validated):
    assert combined
    for task in combined:
        meta = task.metadata
        assert meta["method"] == "combine" and 2 <= len(meta["parts"]) <= 3
        assert meta["file"] == "src/shapes/geometry.py" and meta["files"] == [meta["file"]]
        assert task.FAIL_TO_PASS == [] and task.problem_statement == ""
    used = [p["instance_id"] for t in combined for p in t.metadata["parts"]]
    assert len(used) == len(set(used))  # each bug at most once


def test_the_gold_patch_restores_rev_and_undoes_every_part(combined):
    task = combined[0]
    store, file = task.repo_source, task.metadata["file"]
    buggy = git(store, "show", f"{task.base_commit}:{file}")
    clean = git(store, "show", f"{task.metadata['synth']['clean_commit']}:{file}")
    assert apply_patch(task.patch, {file: buggy}) == {file: clean}
    assert git(store, "rev-list", "--count", task.base_commit).strip() == "1"


def test_combined_candidates_validate_again(combined, tmp_path):
    run = validate_candidates(combined[:2], tmp_path / "hard.jsonl")
    assert run.tasks, {o.instance_id: (o.verdict.value, o.detail) for o in run.outcomes.values()}
    hard = run.tasks[0]
    assert hard.FAIL_TO_PASS and hard.PASS_TO_PASS
    assert hard.metadata["difficulty"]["fail_to_pass"] == len(hard.FAIL_TO_PASS)


def test_combining_needs_validated_synthetic_tasks(shapes_synth):
    with pytest.raises(ConfigError, match="no validated synthetic task"):
        combine(list(shapes_synth.tasks))  # candidates, not validated
    with pytest.raises(ConfigError, match="at least 2"):
        combine(list(shapes_synth.tasks), max_parts=1)
