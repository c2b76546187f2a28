"""What the report-forgery defences of issue 9 cost per grade, against the same grader without them and a
bare SWE-bench-style harness, all in the same run.

Two tasks, both warm (mirror, checkout and environment built first, as in any long grading or RL run):
the toy task (3 tests, where fixed costs show most) and a task on the generated 1,200-module repository
(one test file of 32 tests). Each round grades the gold patch once per variant, in rotating order:

- ``full``: what `grade` does now (launcher, canary, filter rules, inbox emptied);
- ``no canary``: the same without planting the canary;
- ``no launcher``: the same with pytest started by the task's own command and ``-p repogym_report``;
- ``neither``: without both (the grader before issue 9, host-side filter rules aside);
- ``bare``: a SWE-bench-style harness in a fresh episode: ``git apply`` the patch and the test patch,
  ``python -m pytest -rA`` the test files, statuses read from the printed lines.

Every grade is checked (RESOLVED, and the bare harness sees every test pass), so a fast but wrong variant
cannot post a figure.

    .venv/bin/python bench/bench_grade_defences.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import contextlib
import re
import statistics
import time
from collections.abc import Iterator
from pathlib import Path

from _common import big_task, git, load_average, machine_line, make_big_repo, markdown_table, private_cache

from repogym.grading import grade as grade_module
from repogym.grading.canary import plant_canary
from repogym.grading.grade import grade
from repogym.grading.parsers import pytest as pytest_parser
from repogym.grading.parsers.common import shell_join
from repogym.grading.report import Outcome
from repogym.grading.runner import run_directives, test_directives
from repogym.sandbox.runtime import TaskRuntime
from repogym.task import Task
from repogym.testing import make_toy_task

VARIANTS = ("full", "no canary", "no launcher", "neither", "bare")
_SWEBENCH_LINE = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL) (\S+)", re.M)


def _big_bug_task(root: Path) -> Task:
    """The generated repo at its first commit (a bug in pkg00/m000), with the fix and its test change."""
    repo = make_big_repo(root, fixes=1)
    base, fixed = repo.commits
    patch = git(repo.path, "diff", base, fixed, "--", "biglib")
    test_patch = git(repo.path, "diff", base, fixed, "--", "tests")
    tests = [f"tests/test_pkg00.py::test_value[{i}]" for i in range(30)] + [
        "tests/test_pkg00.py::test_factor_is_shared",
        "tests/test_pkg00.py::test_fix_0",
    ]
    return big_task(repo, base).replace(
        patch=patch, test_patch=test_patch, FAIL_TO_PASS=tests[:1], PASS_TO_PASS=tests[1:]
    )


@contextlib.contextmanager
def _without(canary: bool, launcher: bool) -> Iterator[None]:
    saved = grade_module._plant, pytest_parser.launched
    if not canary:
        grade_module._plant = lambda task, test_paths: None  # type: ignore[assignment]
    if not launcher:
        pytest_parser.launched = lambda test_cmd, launcher_path: test_cmd  # type: ignore[assignment]
    try:
        yield
    finally:
        grade_module._plant, pytest_parser.launched = saved


def _bare(task: Task, runtime: TaskRuntime) -> bool:
    """A SWE-bench-style grade: apply, apply the tests, run pytest, read the printed statuses."""
    with runtime.episode(readonly_git=True) as episode:
        patch = episode.put_file("patch.diff", task.patch)
        tests = episode.put_file("tests.diff", task.test_patch)
        files = shell_join(test_directives([*task.FAIL_TO_PASS, *task.PASS_TO_PASS], task.test_patch))
        result = episode.run(
            f"git apply {patch} && git apply {tests} && python -m pytest -rA -p no:cacheprovider {files}"
        )
    statuses = dict((test, status) for status, test in _SWEBENCH_LINE.findall(result.output))
    return all(statuses.get(t) == "PASSED" for t in [*task.FAIL_TO_PASS, *task.PASS_TO_PASS])


def _one(variant: str, task: Task, runtime: TaskRuntime) -> tuple[float, float]:
    """(seconds for the whole grade, seconds of its test run)."""
    started = time.perf_counter()
    if variant == "bare":
        ok, tests_s = _bare(task, runtime), float("nan")
    else:
        with _without(canary=variant in ("full", "no launcher"), launcher=variant in ("full", "no canary")):
            result = grade(task, task.patch, runtime=runtime)
        ok, tests_s = result.outcome is Outcome.RESOLVED, result.timings["tests_s"]
    elapsed = time.perf_counter() - started
    if not ok:
        raise SystemExit(f"{variant} did not resolve the gold patch of {task.instance_id}")
    return elapsed, tests_s


def measure(tasks: dict[str, Task], rounds: int) -> list[list[object]]:
    rows: list[list[object]] = []
    for label, task in tasks.items():
        runtime = TaskRuntime.create(task, "bwrap").prepare()
        times: dict[str, list[float]] = {v: [] for v in VARIANTS}
        test_runs: dict[str, list[float]] = {v: [] for v in VARIANTS}
        for _ in range(2):  # warm the page cache and the interpreter's own caches
            for variant in VARIANTS:
                _one(variant, task, runtime)
        for round_index in range(rounds):
            order = VARIANTS[round_index % len(VARIANTS) :] + VARIANTS[: round_index % len(VARIANTS)]
            for variant in order:
                total, tests_s = _one(variant, task, runtime)
                times[variant].append(total)
                test_runs[variant].append(tests_s)
        medians = {v: statistics.median(times[v]) for v in VARIANTS}
        for variant in VARIANTS:
            seconds = medians[variant]
            ratios = f"{seconds / medians['neither']:.3f}", f"{seconds / medians['bare']:.3f}"
            tests_ms = statistics.median(test_runs[variant]) * 1000
            rows.append(
                [
                    label,
                    variant,
                    f"{seconds * 1000:.0f}",
                    "" if tests_ms != tests_ms else f"{tests_ms:.0f}",
                    *ratios,
                ]
            )
    return rows


RUN_VARIANTS = ("-p plugin", "launcher", "-p plugin + canary", "launcher + canary")


def measure_test_runs(tasks: dict[str, Task], rounds: int, logs: Path) -> list[list[object]]:
    """The test run alone, repeated in one episode with the gold patch and the test patch applied: the
    plugin loaded with -p (as before) or by the launcher, on the test file with or without the canary."""
    rows: list[list[object]] = []
    for label, task in tasks.items():
        runtime = TaskRuntime.create(task, "bwrap").prepare()
        with runtime.episode(readonly_git=True) as episode:
            patch = episode.put_file("patch.diff", task.patch)
            tests = episode.put_file("tests.diff", task.test_patch)
            path = task.FAIL_TO_PASS[0].split("::")[0]
            plain, marked = path.replace(".py", "_plain.py"), path.replace(".py", "_canary.py")
            canary = plant_canary("pytest", [task.FAIL_TO_PASS[0].replace(path, marked)], [marked])
            assert canary is not None
            code = episode.put_file("canary.py", canary.code)
            setup = episode.run(
                f"git apply {patch} && git apply {tests} && cp {path} {plain} && cp {path} {marked} && "
                f"cat {code} >> {marked}"
            )
            assert setup.ok, setup.output
            times: dict[str, list[float]] = {v: [] for v in RUN_VARIANTS}
            for round_index in range(rounds + 2):  # two warm-up rounds
                shift = round_index % len(RUN_VARIANTS)
                for variant in RUN_VARIANTS[shift:] + RUN_VARIANTS[:shift]:
                    with _without(canary=True, launcher="launcher" in variant):
                        started = time.perf_counter()
                        report = run_directives(task, episode, [marked if "canary" in variant else plain],
                                                logs / "run.log")  # fmt: skip
                        elapsed = time.perf_counter() - started
                    if not report.collected or round_index < 2:
                        assert report.collected, report.note
                        continue
                    times[variant].append(elapsed)
        base = statistics.median(times["-p plugin"])
        for variant in RUN_VARIANTS:
            seconds = statistics.median(times[variant])
            rows.append([label, variant, f"{seconds * 1000:.0f}", f"{seconds / base:.3f}"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    load_before = load_average()
    # One cache for the whole run: some of repogym's paths are remembered per process.
    with private_cache() as scratch:
        tasks = {"toy (3 tests)": make_toy_task(scratch / "toy"), "biglib (32 tests)": _big_bug_task(scratch)}
        rows = measure(tasks, args.rounds)
        runs = measure_test_runs(tasks, args.rounds * 2, scratch / "logs")
    print(machine_line())
    print(f"load average {load_before} before, {load_average()} after; {args.rounds} rounds, medians")
    header = ["task", "variant", "ms per grade", "ms in the test run", "vs neither", "vs bare"]
    print(markdown_table(header, rows))
    print(f"\nThe test run alone, {args.rounds * 2} rounds in one episode, medians")
    print(markdown_table(["task", "variant", "ms per test run", "vs -p plugin"], runs))


if __name__ == "__main__":
    main()
