"""Resuming: a re-run validates only what is new or changed, and a finished candidate is on disk at once."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

from repogym.dataset import save_tasks
from repogym.validate import ValidateConfig, Verdict, partial_path, validate_candidates
from repogym.validate.batch import load_done

from ..support.tasks import as_candidate


def test_rerun_validates_only_new_and_changed_candidates(batch, candidates, toy, tmp_path):
    out = tmp_path / "tasks.jsonl"
    shutil.copy(partial_path(batch.out), partial_path(out))
    with partial_path(out).open("a") as handle:
        handle.write('{"instance_id": "exact", "verd')  # a run killed in the middle of a write
    changed = candidates["refactor"].replace(patch=toy.patch, test_patch=toy.test_patch)  # now a real fix
    new = as_candidate(toy, "exact-again")
    todo = [*(c for name, c in candidates.items() if name != "refactor"), changed, new]
    started: list[tuple[int, int]] = []
    finished: list[str] = []

    def on_result(outcome):
        # Reported only once saved: a run killed right after this loses nothing.
        assert f'"instance_id": "{outcome.instance_id}"' in partial_path(out).read_text()
        finished.append(outcome.instance_id)

    run = validate_candidates(
        todo,
        out,
        ValidateConfig(workers=2, scrub=False),
        on_start=lambda todo, done: started.append((todo, done)),
        on_result=on_result,
    )
    assert started == [(2, len(candidates) - 1)]
    assert sorted(finished) == ["exact-again", "refactor"]
    assert run.funnel.resumed == len(candidates) - 1
    assert run.outcomes["refactor"].verdict is Verdict.VALIDATED
    assert run.outcomes["exact"].fail_to_pass == batch.run.outcomes["exact"].fail_to_pass
    assert run.funnel.candidates == len(todo)


def test_changing_the_number_of_runs_validates_again(batch, candidates, tmp_path):
    out = tmp_path / "tasks.jsonl"
    shutil.copy(partial_path(batch.out), partial_path(out))
    finished: list[str] = []
    run = validate_candidates(
        [candidates["test-patch-does-not-apply"]],
        out,
        ValidateConfig(runs=3, scrub=False),
        on_result=lambda outcome: finished.append(outcome.instance_id),
    )
    assert finished == ["test-patch-does-not-apply"]
    assert run.funnel.resumed == 0


def test_a_killed_run_keeps_every_candidate_it_finished(candidates, tmp_path):
    chosen = [candidates[name] for name in ("exact", "flaky-beside-fix", "refactor")]
    candidates_file, out = tmp_path / "candidates.jsonl", tmp_path / "tasks.jsonl"
    save_tasks(chosen, candidates_file)
    command = [sys.executable, "-c", "from repogym.cli import main; main()", "validate", str(candidates_file)]
    process = subprocess.Popen(
        [*command, "--out", str(out), "--no-scrub"],
        env=dict(os.environ),  # REPOGYM_CACHE: the test run's shared cache, environment already built
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    partial = partial_path(out)
    deadline = time.monotonic() + 120
    try:
        while not (partial.exists() and partial.read_text().count("\n") >= 1):
            assert process.poll() is None, "validate ended before the test could kill it"
            assert time.monotonic() < deadline, "no candidate finished in 120 s"
            time.sleep(0.05)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    done = load_done(partial, {task.instance_id: task for task in chosen}, runs=2)
    assert 1 <= len(done) < len(chosen)
    expected = {
        "exact": Verdict.VALIDATED,
        "flaky-beside-fix": Verdict.VALIDATED,
        "refactor": Verdict.NO_FAIL_TO_PASS,
    }
    assert {iid: outcome.verdict for iid, outcome in done.items()} == {iid: expected[iid] for iid in done}
    assert not out.exists()  # the task file is only written, atomically, at the end
