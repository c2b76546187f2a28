"""The run_tests tool: tests run in the agent's own episode, without the task's hidden test patch.

What it runs (documented in the tool's description and `repogym.env.tools`):

- `run_tests()`: the test files of the task's FAIL_TO_PASS and PASS_TO_PASS tests (as
  `repogym.grading.grade.test_directives` picks them) that exist at the base commit, in their
  current state in the episode. The test patch is never applied, so the grader's new tests are
  absent, and the observation lists only what the run reported: hidden test names are not shown.
- `run_tests(tests=[...])`: the given test ids or files, passed to the task's runner.

The run uses the task's own log parser, so the statuses are the grader's; the agent controls this
episode, so none of it is trusted for grading (grading happens in a fresh episode).
"""

from __future__ import annotations

from collections import Counter

from repogym.env.toolcontext import ToolContext, ToolOutput, failure
from repogym.grading.parsers import TestRun, get_parser
from repogym.grading.report import TestReport
from repogym.grading.runner import test_directives
from repogym.sandbox.base import OUT_DIR, plugin_binds, read_jail_file


def run_visible_tests(context: ToolContext, tests: list[str] | None) -> ToolOutput:
    task = context.task
    if tests is None:
        directives = _default_directives(context)
        if not directives:
            return failure(
                "none of this task's test files exist before the fix; write a test and run it with "
                "run_tests(['path/to/test_file.py']) or bash"
            )
    else:
        bad = [test for test in tests if not test.strip() or test.lstrip().startswith("-")]
        if not tests or bad:
            return failure(f"give test ids or files (not options or empty strings); got {tests!r}")
        directives = list(tests)
    parser = get_parser(task.env.log_parser)
    report_name = f"tests-{next(context.calls)}.jsonl"
    report_file = context.episode.layer.out / report_name
    command = parser.command(task.env.test_cmd, directives, f"{OUT_DIR}/{report_name}")
    try:
        result = context.run(command, context.options.test_timeout_s, binds=plugin_binds(parser.plugin_dir))
        report_text = read_jail_file(report_file)
    finally:
        report_file.unlink(missing_ok=True)
    run = TestRun(
        log=result.output,
        report_text=report_text,
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        duration_s=result.duration_s,
    )
    report = parser.parse(run)
    return ToolOutput(describe(report, directives, result.output), error=not _all_ok(report))


def _default_directives(context: ToolContext) -> list[str]:
    task = context.task
    pristine = context.episode.runtime.pristine
    directives = test_directives([*task.FAIL_TO_PASS, *task.PASS_TO_PASS], task.test_patch)
    # Files the test patch creates do not exist before grading: naming them would fail the whole run.
    return [path for path in directives if pristine is None or (pristine / path).exists()]


def _all_ok(report: TestReport) -> bool:
    return report.collected and bool(report.results) and all(r.status.ok for r in report.results.values())


def describe(report: TestReport, directives: list[str], log: str, tail_lines: int = 30) -> str:
    """The observation of a test run: a summary line, each test's status, and the log tail when it went wrong."""
    counts = Counter(result.status.value.lower() for result in report.results.values())
    summary = ", ".join(f"{count} {status}" for status, count in sorted(counts.items())) or "no results"
    lines = [f"ran {' '.join(directives)}: {summary} (exit code {report.exit_code})"]
    if report.timed_out:
        lines.append("the run timed out (process tree killed)")
    if report.note:
        lines.append(f"note: {report.note}")
    lines += [f"{result.status.value:8} {test_id}" for test_id, result in sorted(report.results.items())]
    if not _all_ok(report):
        tail = log.strip().splitlines()[-tail_lines:]
        lines += ["", f"last {len(tail)} lines of output:", *tail]
    return "\n".join(lines) + "\n"
