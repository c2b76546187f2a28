"""Running a task's tests in an episode: the parser's command for some tests, and its log and structured report
read back into a TestReport.

Split in two (`test_command`, then `read_test_run` over the command's result) because a grade may run the
command inside a larger jailed command of its own (grading/onepass.py); `run_directives` does both.

Guarantees:
- The saved log is the run's whole output (up to the sandbox's output kill limit): the test command runs
  with `Limits.keep_whole_output`, and its parser reads the whole of it too (sympy's and django's verdicts
  come from printed lines). Where a caller's result was cut anyway, the log says so on a line of its own.
- A test run reaches the network only when its `TestCommand` says so (`network`, the grader's opt-in);
  every other command of an episode, and every test run by default, has its network namespace closed.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from repogym.grading.parsers import TestRun, get_parser
from repogym.grading.parsers.swebench_ids import id_file
from repogym.grading.report import TestReport
from repogym.patches import parse_patch
from repogym.sandbox.base import OUT_DIR, Bind, ExecResult, Limits, plugin_binds, read_jail_file
from repogym.sandbox.cache import cache_dir
from repogym.sandbox.runtime import Episode
from repogym.task import Task


@dataclass(frozen=True)
class TestCommand:
    """The parser's shell command for some tests, with what it needs mounted and where it writes its report."""

    __test__ = False  # not a pytest test class

    command: str
    report_name: str
    """The structured report's file name in the episode's out folder (new per command)."""
    binds: tuple[Bind, ...]
    """The test runner's plugin folder, read-only."""
    limits: Limits
    """The test run's limits (with `keep_whole_output`: the saved log is whole)."""
    network: bool = False
    """Let the test run reach the network (`grade(allow_network=True)`); never for anything else."""


def test_command(task: Task, directives: list[str], limits: Limits, network: bool = False) -> TestCommand:
    """The task's parser's command for `directives` (test files or ids), with a fresh report name; `limits`:
    the run's (the runtime's, or a grade's own: `repogym.grading.timelimit`), its whole output kept for the
    log; `network`: the grader's opt-in to let it reach the network."""
    parser = get_parser(task.env.log_parser)
    report_name = f"report-{time.monotonic_ns()}.jsonl"
    command = parser.command(task.env.test_cmd, directives, f"{OUT_DIR}/{report_name}")
    whole = limits.model_copy(update={"keep_whole_output": True})
    return TestCommand(command, report_name, plugin_binds(parser.plugin_dir), whole, network)


def run_test_command(episode: Episode, test: TestCommand) -> ExecResult:
    """Run `test` in the episode as a command of its own; with the network open when `test.network` is set
    (the grader's opt-in: the episode's mounts, network added, nothing else changed)."""
    if not test.network:
        return episode.run(test.command, limits=test.limits, binds=test.binds)
    mounts = dataclasses.replace(episode.mounts(*test.binds), network=True)
    variables = dict(episode.runtime.task.env.test_env)  # as Episode.run gives every command
    return episode.runtime.sandbox.run(test.command, mounts, test.limits, env=variables)


test_command.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


def read_test_run(
    task: Task,
    episode: Episode,
    test: TestCommand,
    result: ExecResult,
    log_path: Path,
    duration_s: float | None = None,
) -> TestReport:
    """Keep the run's log at `log_path` and parse it with its report; `duration_s`: the test run's own time
    when `result` is that of a larger command (its default: the result's)."""
    report_text = read_jail_file(episode.layer.out / test.report_name)
    log = save_log(log_path, test.command, result)
    run = TestRun(
        log=log,
        report_text=report_text,
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        log_path=str(log_path),
        duration_s=result.duration_s if duration_s is None else duration_s,
    )
    return get_parser(task.env.log_parser).parse(run)


def save_log(log_path: Path, command: str, result: ExecResult) -> str:
    """Write the run's log at `log_path`: the command, its output, how it ended; returns the output as saved
    (whole where the result kept all of it; else the result's, its cut said on a line of its own)."""
    output = result.output
    if result.whole_output is not None:
        output = result.whole_output.read_bytes().decode("utf-8", errors="replace")
    elif result.output_truncated:
        output += (
            f"\n[repogym: this log is cut: {result.output_total_bytes} bytes of output, only the first and last "
            "parts kept; tests the cut middle printed are not in it]"
        )
    ending = "; ".join([f"exit {result.exit_code}", result.reason.value, *result.notes])
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_text(f"$ {command}\n{output}\n[{ending}]\n", encoding="utf-8")
    return output


def run_tests(
    task: Task, episode: Episode, test_ids: list[str], log_dir: str | Path | None = None
) -> TestReport:
    """Run tests in the episode with the task's parser and read the structured report."""
    return run_directives(task, episode, test_directives(test_ids, task.test_patch), log_path(task, log_dir))


def run_directives(task: Task, episode: Episode, directives: list[str], log_path: Path) -> TestReport:
    """Run the parser's command for `directives` (test files or ids), keep the log at `log_path`, parse."""
    test = test_command(task, directives, episode.runtime.limits)
    return read_test_run(task, episode, test, run_test_command(episode, test), log_path)


def test_directives(test_ids: list[str], test_patch: str, pristine: Path | None = None) -> list[str]:
    """What to pass the runner: the files of pytest node ids (or ids that are files), else the test
    patch's test modules that exist after it (as SWE-bench does).

    With `pristine` (the base commit's tree), a file of an id that is neither in it nor written by the test
    patch is left out: no run has it, and naming it fails the whole run (pytest exits 4 on a missing path).
    SWE-bench's harness runs the test patch's files, and its parser also reads ids from the output of tests
    that run pytest inside themselves (pytest-7521's PASS_TO_PASS holds ``test_capsysbinary.py::test_hello``);
    such an id is still judged, as a test the run did or did not report.

    >>> test_directives(["tests/test_a.py::test_x", "tests/test_b.py", "tests/test_a.py::test_y"], "")
    ['tests/test_a.py', 'tests/test_b.py']
    """
    files: list[str] = []
    for test_id in test_ids:
        path = id_file(test_id)
        if not path or path in files:
            continue
        inside = not PurePosixPath(path).is_absolute() and ".." not in PurePosixPath(path).parts
        if pristine is None or (inside and (pristine / path).is_file()) or path in _written(test_patch):
            files.append(path)
    if files:
        return files
    return [p for p in _written(test_patch) if p.endswith(".py") and PurePosixPath(p).name != "conftest.py"]


@functools.lru_cache(maxsize=64)
def _written(test_patch: str) -> tuple[str, ...]:
    """The paths a test patch leaves in the tree (added or changed files), parsed once per patch text: only
    ids whose file the base tree lacks, or tasks without file ids, need them."""
    parsed = parse_patch(test_patch)
    return tuple(p.path for p in parsed or [] if not p.is_removed_file)


test_directives.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


def log_path(task: Task, log_dir: str | Path | None) -> Path:
    """A new log file for one test run of `task`: under `log_dir`, else the cache's logs folder."""
    folder = Path(log_dir) if log_dir else cache_dir("logs", task.instance_id.replace("/", "__"))
    return folder / f"test-{time.strftime('%Y%m%dT%H%M%S')}-{time.monotonic_ns() % 10**6}.log"
