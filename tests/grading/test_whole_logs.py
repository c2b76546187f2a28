"""Saved test logs are whole: a run that prints more than the result keeps is streamed to its log, so a parser
that re-reads the log (SWE-bench's) finds every PASSED line (issue 28: xarray-4493's cut log hid 82 of them)."""

from __future__ import annotations

import dataclasses
import gc
import os
from pathlib import Path

import pytest

from repogym.grading.grade import grade
from repogym.grading.report import Outcome
from repogym.grading.runner import save_log
from repogym.hostgit import git
from repogym.sandbox.base import Limits
from repogym.sandbox.process import run_process
from repogym.testing import make_toy_task

_GIT = {"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "T",
        "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_GLOBAL": os.devnull}  # fmt: skip
LINES = 20_000
PRINT = f"i=0; while [ $i -lt {LINES} ]; do echo line-$i; i=$((i+1)); done"
EXPECTED = "".join(f"line-{i}\n" for i in range(LINES)).encode()


def test_whole_output_streamed_to_a_file_when_the_result_is_cut():
    result = run_process(["/bin/sh", "-c", PRINT], Limits(output_bytes=4096, keep_whole_output=True))
    assert result.output_truncated and "bytes of output omitted" in result.output
    assert result.whole_output is not None
    assert result.whole_output.read_bytes() == EXPECTED
    path = result.whole_output.path
    del result
    gc.collect()
    assert not path.exists()  # the file lives as long as the result holding it


def test_no_file_without_the_option_or_when_nothing_was_cut():
    cut = run_process(["/bin/sh", "-c", PRINT], Limits(output_bytes=4096))
    assert cut.output_truncated and cut.whole_output is None
    short = run_process(["/bin/sh", "-c", "echo hi"], Limits(output_bytes=4096, keep_whole_output=True))
    assert short.output == "hi\n" and short.whole_output is None


def test_whole_output_stops_at_the_kill_limit():
    limits = Limits(output_bytes=4096, output_kill_bytes=64 * 1024, keep_whole_output=True)
    result = run_process(["/bin/sh", "-c", "yes line-of-output"], limits)
    assert result.exit_code is None and result.reason.value == "output_limit"
    assert result.whole_output is not None
    assert 64 * 1024 < len(result.whole_output.read_bytes()) <= 64 * 1024 + 65536


MANY = 400
MANY_TESTS = (
    "import pytest\n\n\n"
    f"@pytest.mark.parametrize('case', range({MANY}))\n"
    "def test_case_with_a_long_name_so_the_summary_is_long(case):\n"
    "    assert case >= 0\n"
)


@pytest.fixture(scope="module")
def chatty_task(toy_task, tmp_path_factory):
    """The toy task with a file of 400 passing tests, one of them required: pytest's -rA summary alone is
    longer than the 4 KiB the grade below keeps."""
    task = make_toy_task(tmp_path_factory.mktemp("chatty"), instance_id="toy__calc-chatty")
    repo = Path(task.repo_source)
    (repo / "tests" / "test_many.py").write_text(MANY_TESTS)
    git(repo, "add", "tests/test_many.py", env=_GIT)
    git(repo, "commit", "-q", "-m", "many tests", env=_GIT)
    required = "tests/test_many.py::test_case_with_a_long_name_so_the_summary_is_long[7]"
    return dataclasses.replace(
        task,
        base_commit=git(repo, "rev-parse", "HEAD", env=_GIT).strip(),
        PASS_TO_PASS=[*task.PASS_TO_PASS, required],
    )


def test_saved_log_of_a_grade_holds_every_passed_line(chatty_task, tmp_path):
    result = grade(chatty_task, chatty_task.patch, log_dir=tmp_path, test_limits=Limits(output_bytes=4096))
    assert result.outcome is Outcome.RESOLVED, result.detail
    log = Path(result.report.log_path).read_text()
    passed = {line for line in log.splitlines() if line.startswith("PASSED tests/test_many.py::")}
    assert len(passed) == MANY
    assert "bytes of output omitted" not in log and "this log is cut" not in log
    assert len(log.encode()) > 4 * 4096


def test_a_log_saved_from_a_cut_result_says_it_is_cut(tmp_path):
    """A caller whose result was cut anyway (no whole output kept) leaves a log that tells a re-reader so."""
    result = run_process(["/bin/sh", "-c", PRINT], Limits(output_bytes=4096))
    text = save_log(tmp_path / "run.log", "run", result)
    saved = (tmp_path / "run.log").read_text()
    assert text in saved and "this log is cut" in saved and f"{len(EXPECTED)} bytes of output" in saved
