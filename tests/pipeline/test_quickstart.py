"""The README's main job: `repogym quickstart --fast` end to end from a fresh clone, every stage for real (CI form)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from repogym.dataset import load_tasks
from repogym.locate import task_locations

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def test_quickstart_fast_from_a_fresh_clone_interrupted_then_resumed_runs_the_whole_loop(toy_task, tmp_path):
    """The README's main command as a new user runs it: a fresh clone, the default --out (relative), one
    Ctrl-C after the data stages, the same command again; then every stage's output. One run of the loop
    serves both checks (each costs minutes on 2 cores)."""
    # toy_task sets REPOGYM_CACHE to the run's shared cache (environments are built once per run); one torch
    # thread, as the suite's other trainers (two spinning OpenMP threads on 2 shared cores cost several times).
    source = Path(__file__).resolve().parents[2]
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(source), str(clone)], check=True)
    env = {**os.environ, "PYTHONPATH": str(clone / "src"), "COLUMNS": "200", "OMP_NUM_THREADS": "1"}
    command = [str(Path(sys.executable).with_name("repogym")), "quickstart", "--fast"]
    out = clone / "repogym-quickstart"
    proc = subprocess.Popen(
        command, cwd=clone, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        start_new_session=True,
        # SIGINT as a terminal leaves it: a suite started in the background (`cmd &`, nohup) inherits it ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    split_record = out / "split" / "stage.json"
    deadline = time.monotonic() + 1200
    while time.monotonic() < deadline and proc.poll() is None:
        if split_record.exists():  # the data stages and the split are done and recorded
            break
        time.sleep(0.2)
    assert proc.poll() is None, proc.communicate()[0]
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    output, _ = proc.communicate(timeout=300)
    assert proc.returncode == 130, output
    assert "quickstart stages done and saved; rerun the same command to resume" in output
    assert not (out / "report.html").exists()

    done = subprocess.run(command, cwd=clone, capture_output=True, text=True, env=env, timeout=1500)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "data: done earlier, skipped" in done.stderr and "split: done earlier, skipped" in done.stderr
    assert not list(out.glob("repos/*/repogym-quickstart"))  # nothing nested under a repository (issue 9)
    tasks = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    manifests = [json.loads(path.read_text()) for path in (out / "repos").glob("*.manifest.json")]
    assert len(manifests) == 2
    fixed = {fix["fix_commit"] for manifest in manifests for fix in manifest["fixes"]}
    mined_from = {task["metadata"]["mining"]["commit"] for task in tasks if task["source"] == "mined"}
    assert fixed <= mined_from  # every planted fix became a proven task
    assert any(task["source"] == "synthetic" for task in tasks)
    gold = json.loads((out / "report.gold.json").read_text())
    empty = json.loads((out / "report.empty.json").read_text())
    assert gold["resolved_instances"] == len(tasks) > 0
    assert empty["resolved_instances"] == 0
    for manifest in manifests:
        for path in out.glob("*.json*"):
            assert manifest["secret"]["value"] not in path.read_text(encoding="utf-8"), path.name

    # The two held-out splits share nothing with train: no function (as the split names functions: file and
    # qualified name in a repository), and no task of the held-out repo.
    split = {name: list(load_tasks(out / "split" / f"{name}.jsonl"))
             for name in ("train", "heldout-functions", "heldout-repo")}  # fmt: skip
    assert all(split.values())
    functions = {name: {(t.repo, *loc) for t in side for loc in task_locations(t)} for name, side in split.items()}
    assert not functions["train"] & functions["heldout-functions"]
    held_repo = {task.repo for task in split["heldout-repo"]}
    assert len(held_repo) == 1 and not held_repo & {task.repo for task in split["train"]}
    # Every stage ran: training curves and the twelve evaluations are on disk.
    for run in ("pretrain", "sft", "grpo"):
        folder = out / "train" / run if run != "pretrain" else out / "model" / "pretrained"
        assert folder.is_dir(), folder
    for stage in ("swap", "baseline", "sft", "grpo", "sft-sampled", "grpo-sampled"):
        for name in ("heldout-functions", "heldout-repo"):
            summary = json.loads((out / "eval" / f"{stage}-{name}" / "summary.json").read_text())
            assert summary["tasks"] == len(split[name]) and "pass@1" in summary["intervals"]
            if stage.endswith("-sampled"):  # before and after GRPO as GRPO samples: every pass@k
                assert summary["n"] == 2 and "pass@2" in summary["intervals"], summary
                assert summary["sampling"]["temperature"] > 0, summary["sampling"]

    # What a user sees: the closing table on stdout, and the same before/after in report.html.
    assert "before / after" in done.stdout
    assert re.search(r"heldout-functions \(\d+ tasks\)", done.stdout)
    assert re.search(r"heldout-repo \(\d+ tasks\)", done.stdout)
    assert "one operator swap" in done.stdout  # the non-learned baseline's column
    page = (out / "report.html").read_text(encoding="utf-8")
    table = page[page.index('<table class="before-after">'):]
    table = table[: table.index("</table>")]
    for word in ("heldout-functions", "heldout-repo", "swap", "baseline", "sft", "grpo", "grpo-sampled", "pass@2"):
        assert word in table, word
    assert "heuristic:swap, one operator swapped" in page  # what the swap column is
    # Each GRPO checkpoint evaluated greedy on both splits: the held-out curve over RL steps, drawn in the report.
    steps = sorted(path.name for path in (out / "eval").glob("grpo-step-*-heldout-functions"))
    assert steps and (out / "eval" / steps[-1].replace("functions", "repo") / "summary.json").is_file(), steps
    assert 'alt="grpo: held-out pass@1 at each checkpoint"' in page
