"""The README's main job: `repogym quickstart` end to end on one sample repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow
def test_quickstart_proves_and_grades_the_sample_tasks(toy_task, tmp_path):
    # toy_task sets REPOGYM_CACHE to the run's shared cache (environments are built once per run).
    out = tmp_path / "qs"
    repogym = Path(sys.executable).with_name("repogym")
    done = subprocess.run(
        [str(repogym), "quickstart", "--out", str(out), "--repos", "1", "-j", "2"],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    manifest = json.loads(next((out / "repos").glob("*.manifest.json")).read_text())
    tasks = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    fixed = {fix["fix_commit"] for fix in manifest["fixes"]}
    mined_from = {task["metadata"]["mining"]["commit"] for task in tasks}
    assert fixed <= mined_from  # every planted fix became a proven task
    gold = json.loads((out / "report.gold.json").read_text())
    empty = json.loads((out / "report.empty.json").read_text())
    assert gold["resolved_instances"] == len(tasks) > 0
    assert empty["resolved_instances"] == 0
    secret = manifest["secret"]["value"]
    for path in out.glob("*.json*"):
        assert secret not in path.read_text(encoding="utf-8"), path.name
    assert f"{len(tasks)}/{len(tasks)} resolved" in done.stdout
