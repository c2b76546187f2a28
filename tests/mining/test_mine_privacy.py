"""`repogym mine` writes no secret: the sample repo's planted secret is redacted before anything is written."""

from __future__ import annotations

import json

from repogym.mining.config import MiningConfig
from repogym.mining.mine import mine
from repogym.samples import generate_repo


def test_mined_candidates_carry_no_secret_and_the_funnel_adds_up(tmp_path):
    sample = generate_repo(tmp_path / "lib", seed=2)
    result = mine(sample.path, prs=sample.prs_path)
    rows = json.dumps([task.to_dict() for task in result.tasks])
    assert sample.secret.value not in rows
    secret_fix = next(fix for fix in sample.fixes if fix.contains_secret)
    redacted = next(t for t in result.tasks if t.metadata["mining"]["commit"] == secret_fix.fix_commit)
    assert "<REDACTED" in redacted.patch
    assert result.funnel.count("secret_unredactable") == 0
    assert result.funnel.written == len(result.tasks)

    # The same history mined without the privacy step does carry it: the check above can fail.
    raw = mine(sample.path, MiningConfig(redact_secrets=False), prs=sample.prs_path)
    assert sample.secret.value in json.dumps([task.to_dict() for task in raw.tasks])
