"""What a user sees when a command is given bad input, is interrupted, or produces nothing (issue 9, item 4).

Each test runs the real command (the installed `repogym` script in a subprocess where signals or the
working directory matter) and checks the message and the exit status a script would branch on.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repogym.cli import app
from repogym.dataset import save_tasks

from ..support.git import commit_files, init_repo

RUNNER = CliRunner()
WIDE = {"COLUMNS": "200"}
REPOGYM = Path(sys.executable).with_name("repogym")


def invoke(*args: str):
    return RUNNER.invoke(app, list(args), env=WIDE)


@pytest.fixture
def toy_file(toy_task, tmp_path: Path) -> Path:
    path = tmp_path / "tasks.jsonl"
    save_tasks([toy_task], path)
    return path


def test_grade_patch_of_random_bytes_is_a_clear_error(toy_file, tmp_path):
    patch = tmp_path / "noise.diff"
    patch.write_bytes(bytes(range(128, 256)) * 4)
    result = invoke("grade", str(toy_file), "--instance", "toy__calc-1", "--patch", str(patch))
    assert result.exit_code == 2, result.output
    assert f"--patch {patch}: not UTF-8 text (byte 0 is 0x80)" in result.output
    assert "Traceback" not in result.output


def test_grade_text_that_is_not_a_diff_is_a_clear_error_not_an_empty_patch(toy_file, tmp_path):
    patch = tmp_path / "notes.txt"
    patch.write_text("I fixed add() by changing the minus to a plus.\n")
    result = invoke("grade", str(toy_file), "--instance", "toy__calc-1", "--patch", str(patch))
    assert result.exit_code == 2, result.output
    assert "not a unified diff (it starts 'I fixed add()" in result.output
    assert "UNRESOLVED" not in result.output


def test_grade_unknown_sandbox_is_a_usage_error_listing_the_known_ones(toy_file):
    result = invoke("grade", str(toy_file), "--instance", "toy__calc-1", "--gold", "--sandbox", "bwarp")
    assert result.exit_code == 2, result.output
    assert "unknown sandbox 'bwarp' (did you mean 'bwrap'?)" in result.output
    assert "local" in result.output  # the known backends are listed
    assert "MISSING" not in result.output and "INFRA_ERROR" not in result.output


def test_predictions_that_are_not_diffs_are_graded_as_not_applying(toy_task):
    """In a predictions file a non-diff is data about an attempt: it must not pass for an empty patch."""
    from repogym.grading.grade import grade

    result = grade(toy_task, "I would change the minus to a plus.\n")
    assert result.outcome.value == "PATCH_APPLY_FAILED"
    assert "not a unified diff" in result.detail


def test_mine_with_no_candidates_says_so_writes_nothing_and_exits_1(tmp_path):
    repo = tmp_path / "docs-only"
    init_repo(repo, {"README.md": "# notes\n\nrevision 0\n"}, "Docs: revision 0")
    for number in (1, 2):
        commit_files(repo, {"README.md": f"# notes\n\nrevision {number}\n"}, f"Docs: revision {number}")
    out = tmp_path / "candidates.jsonl"
    result = invoke("mine", str(repo), "--out", str(out))
    assert result.exit_code == 1, result.output
    assert "nothing produced: no commit of 3 became a candidate" in result.output
    assert not out.exists()


def test_validate_with_no_surviving_candidate_says_so_and_exits_1(toy_task, tmp_path):
    broken = toy_task.replace(
        instance_id="broken", patch=toy_task.patch.replace("+    return a + b", "+    return a + c")
    )
    broken = broken.replace(
        test_patch=broken.test_patch.replace("-from calc import mul", "-from calc import x")
    )
    candidates = tmp_path / "candidates.jsonl"
    save_tasks([broken.replace(FAIL_TO_PASS=[], PASS_TO_PASS=[])], candidates)
    out = tmp_path / "tasks.jsonl"
    result = invoke("validate", str(candidates), "--out", str(out), "--no-scrub")
    assert result.exit_code == 1, result.output
    assert "nothing produced: none of 1 candidate(s) became a task" in result.output
    assert "test_patch_failed" in result.output  # the funnel says why
    assert not out.exists()


def default_sigint() -> None:
    """A terminal's Ctrl-C reaches a program whose SIGINT is not ignored; a suite started in the background by a
    non-interactive shell (`cmd &`, nohup) inherits SIGINT ignored, and Python then never raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
def test_ctrl_c_in_validate_says_what_is_saved_and_rerunning_resumes(toy_task, tmp_path):
    candidates = tmp_path / "candidates.jsonl"
    # Enough copies that Ctrl-C lands mid-run: on a quiet machine a toy candidate validates in well under
    # a second, and six were all done before the signal arrived (CI, 2026-12-01).
    total = 40
    copies = [
        toy_task.replace(instance_id=f"copy-{n}", FAIL_TO_PASS=[], PASS_TO_PASS=[]) for n in range(total)
    ]
    save_tasks(copies, candidates)
    out = tmp_path / "tasks.jsonl"
    partial = tmp_path / "tasks.jsonl.partial.jsonl"
    command = [str(REPOGYM), "validate", str(candidates), "--out", str(out), "--no-scrub", "-j", "1"]
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,
        preexec_fn=default_sigint,
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if partial.exists() and partial.read_text().count("\n") >= 1:
            break
        time.sleep(0.1)
    assert proc.poll() is None, proc.communicate()[0]
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole foreground group
    output, _ = proc.communicate(timeout=300)
    assert proc.returncode == 130, output
    saved = partial.read_text().count("\n")
    assert f"interrupted: {saved} candidates validated and saved; rerun the same command to resume" in output
    assert 1 <= saved < total
    again = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"resuming: {saved} candidate(s) already done" in again.stdout + again.stderr
    assert partial.read_text().count("\n") == total  # nothing validated twice


# The README's main command from a fresh clone with the default --out, Ctrl-C and resume: one run of the
# whole loop in tests/pipeline/test_quickstart.py checks it with everything else the loop writes.
