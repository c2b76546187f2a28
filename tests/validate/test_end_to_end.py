"""Sample repository -> `repogym mine` -> `repogym validate` -> `repogym grade`, checked against the manifest."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from repogym.cli import app
from repogym.dataset import load_tasks
from repogym.files import read_jsonl_records
from repogym.samples.generate import generate_repo
from repogym.validate import partial_path

RUNNER = CliRunner()
WIDE = {"COLUMNS": "200"}


def invoke(*args: str):
    result = RUNNER.invoke(app, list(args), env=WIDE)
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def pipeline(toy_task, tmp_path_factory):
    """One sample library (seed 4: its candidates share one environment) mined and validated by the CLI."""
    root = tmp_path_factory.mktemp("e2e")
    sample = generate_repo(root / "lib", seed=4)
    candidates, out, funnel = root / "candidates.jsonl", root / "tasks.jsonl", root / "funnel.json"
    invoke("mine", str(sample.path), "--out", str(candidates), "--prs", str(sample.prs_path))
    invoke("validate", str(candidates), "--out", str(out), "-j", "2", "--funnel", str(funnel))
    return sample, candidates, out, funnel


def test_every_planted_fix_is_validated_with_the_manifests_tests(pipeline):
    sample, candidates, out, funnel = pipeline
    by_commit = {task.metadata["mining"]["commit"]: task for task in load_tasks(candidates)}
    outcomes = {record["instance_id"]: record for record in read_jsonl_records(partial_path(out))}
    written = {task.instance_id: task for task in load_tasks(out)}
    assert json.loads(funnel.read_text())["stages"][-1]["dropped"] == []  # nothing left for validate to drop
    assert len(sample.fixes) == 3
    for fix in sample.fixes:
        candidate = by_commit[fix.fix_commit]
        assert candidate.base_commit == fix.base_commit
        outcome = outcomes[candidate.instance_id]
        assert outcome["verdict"] == "validated", (fix.slug, outcome["detail"])
        assert outcome["FAIL_TO_PASS"] == list(fix.FAIL_TO_PASS), fix.slug
        assert sorted(outcome["PASS_TO_PASS"]) == sorted(fix.PASS_TO_PASS), fix.slug
        task = written[candidate.instance_id]
        assert (task.fail_to_pass, task.license) == (list(fix.FAIL_TO_PASS), sample.license)
        if fix.contains_secret:
            # `repogym mine` redacted it before anything was written; the fix was still proven by its tests.
            assert "<REDACTED" in candidate.patch and sample.secret.value not in candidate.patch


def test_the_planted_secret_is_in_no_output_file(pipeline):
    sample, candidates, out, funnel = pipeline
    outputs = [candidates, out, funnel, partial_path(out), out.with_name(out.name + ".funnel.json")]
    for path in outputs:
        if path.exists():
            assert sample.secret.value not in path.read_text(encoding="utf-8"), path.name
    assert out.exists() and funnel.exists() and partial_path(out).exists()


def test_validated_tasks_resolve_with_gold_and_not_with_empty(pipeline):
    _sample, _candidates, out, _funnel = pipeline
    tasks = list(load_tasks(out))
    assert tasks
    for task in tasks:
        gold = json.loads(
            invoke("grade", str(out), "--instance", task.instance_id, "--gold", "--json").stdout
        )
        empty = json.loads(
            invoke("grade", str(out), "--instance", task.instance_id, "--empty", "--json").stdout
        )
        assert (gold["outcome"], empty["resolved"]) == ("RESOLVED", False), task.instance_id
