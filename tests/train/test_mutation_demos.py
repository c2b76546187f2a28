"""Cheap demonstrations: synth's methods in local source, in the window format, never from held-out code."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from repogym.env.context import make_windows, window_prompt
from repogym.search_replace import apply_answer
from repogym.task import Task
from repogym.train.leakage import Guard, LeakageGuard
from repogym.train.mutation_demos import (
    DemoOptions,
    DemoReport,
    build_demos,
    drop_held_out,
    file_mutations,
    repo_demos,
    shorten_statements,
)

SOURCE = '''\
def clamp(value, low, high):
    """Keep value inside [low, high]."""
    if value < low:
        return low
    if value > high and high is not None:
        return high
    return value - 0


def span(start, end):
    return end - start
'''


def test_each_demo_repairs_its_own_bug_in_the_env_window_format():
    report = DemoReport()
    found = list(file_mutations("pkg/mod.py", SOURCE, DemoOptions(per_function=10), report))
    assert {row["metadata"]["method"] for row, _ in found} >= {"op_flip_comparison", "op_change", "op_swap"}
    for row, buggy in found:
        prompt, answer = (m["content"] for m in row["messages"])
        assert buggy != SOURCE
        # The answer, applied SWE-RL's way to the buggy file, gives back the original.
        assert apply_answer(answer, {"pkg/mod.py": buggy}).new_contents["pkg/mod.py"] == SOURCE
        # The prompt is the env's own window observation, one line either side of the bug.
        line = (
            next(
                i
                for i, (a, b) in enumerate(zip(buggy.splitlines(), SOURCE.splitlines(), strict=True))
                if a != b
            )
            + 1
        )
        spots = {"pkg/mod.py": (line,)}
        windows = make_windows(spots, {"pkg/mod.py": buggy}, 1)
        issue = prompt.split("\n\n", 1)[0].removeprefix("Issue:\n")
        assert prompt == window_prompt(issue, windows, spots, {"pkg/mod.py": buggy})
        assert issue.startswith("1 test(s) fail:\n- tests/test_mod.py::test_")


def test_methods_limit_what_is_injected():
    options = DemoOptions(methods=("op_flip_comparison",), per_function=10)
    found = list(file_mutations("mod.py", SOURCE, options, DemoReport()))
    assert found and {row["metadata"]["method"] for row, _ in found} == {"op_flip_comparison"}


def test_repo_demos_leave_out_held_out_functions_and_tests(tmp_path: Path):
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "mod.py").write_text(SOURCE)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_mod.py").write_text("def test_it():\n    assert 1 < 2\n")
    report = DemoReport()
    rows = repo_demos([tmp_path], DemoOptions(per_function=10), {("src/pkg/mod.py", "clamp")}, report)
    assert rows and {row["metadata"]["function"] for row in rows} == {"span"}
    assert report.dropped["in a held-out function"] > 0


def test_hostile_corpus_copy_of_a_held_out_function_is_dropped(tmp_path: Path):
    """A held-out function that also lives in the corpus (a vendored copy): no demo may write its fixed line."""
    rows = [
        row
        for row, _ in file_mutations("vendored/mod.py", SOURCE, DemoOptions(per_function=10), DemoReport())
    ]
    fixed = "+    if value > high and high is not None:"
    gold = next(
        r["metadata"]["gold_patch"] for r in rows if fixed in r["metadata"]["gold_patch"].splitlines()
    )
    held_out = Task(instance_id="x__y-1", repo="x/y", base_commit="0" * 40, patch=gold, test_patch="",
                    problem_statement="")  # fmt: skip
    report = DemoReport()
    kept = drop_held_out(rows, LeakageGuard.from_tasks([held_out]), report)
    assert report.dropped[Guard.LINE] >= 1 and len(kept) == len(rows) - report.dropped[Guard.LINE]
    assert not any("value > high and high is not None" in r["messages"][1]["content"].split("=======")[1]
                   for r in kept)  # fmt: skip


def test_hostile_corpus_copy_reformatted_is_dropped_by_the_line_guard_and_counted():
    """The vendored copy reformatted (no spaces around `>`, doubled spaces, a trailing comment): an exact
    match of the held-out fix line misses it; the normalised line guard drops every demo writing it, keeps
    the unrelated function's demos, and the report counts the drops under the line guard's reason."""
    reformatted = SOURCE.replace(
        "    if value > high and high is not None:",
        "    if value>high  and  high is not None:  # upper bound",
    )
    found = file_mutations("vendored/mod.py", reformatted, DemoOptions(per_function=10), DemoReport())
    rows = [row for row, _ in found]
    fix = (
        "--- a/mod.py\n+++ b/mod.py\n@@ -5 +5 @@\n"
        "-    if value > high or high is not None:\n+    if value > high and high is not None:\n"
    )
    held_out = Task(instance_id="x__y-1", repo="x/y", base_commit="0" * 40, patch=fix, test_patch="",
                    problem_statement="")  # fmt: skip
    writes_it = [r for r in rows if "value>high  and  high is not None" in r["messages"][1]["content"]]
    report = DemoReport()
    kept = drop_held_out(rows, LeakageGuard.from_tasks([held_out]), report)
    assert writes_it and not any(row in kept for row in writes_it)
    assert {r["metadata"]["function"] for r in kept} >= {"span"}  # the unrelated function stays
    assert len(kept) == len(rows) - len(writes_it)
    assert report.to_dict()["dropped"] == {
        "writes a held-out task's fixed line": len(writes_it),
        "writes a held-out function's body": 0,
    }
    # No repository to read the function from: the report says the body guard could not see this task.
    guarded = {"held_out_tasks": 1, "lines": 1, "bodies": 0, "tasks_without_body": 1}
    assert report.to_dict()["guarded"] == guarded


@pytest.mark.slow  # about 15 s: load_corpus hashes every candidate file before it draws
def test_build_demos_reads_the_corpus_without_repogym(tmp_path: Path):
    out = tmp_path / "demos.jsonl"
    report = build_demos(out, DemoOptions(max_rows=60, max_chars=200_000))
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == report.rows == 60
    assert not any("repogym" in row["metadata"]["file"].split("/") for row in rows)
    assert all(row["messages"][1]["content"].startswith("<think>") for row in rows)


def test_shorten_statements_keeps_the_test_names_and_the_full_text_in_metadata():
    long = "2 test(s) fail:\n- t.py::a\n- t.py::b\n\nOutput of t.py::a:\n" + "E  assert 1 == 2\n" * 50
    task = Task(instance_id="x__y-1", repo="x/y", base_commit="0" * 40, patch="", test_patch="",
                problem_statement=long)  # fmt: skip
    (short,) = shorten_statements([task])
    assert short.problem_statement == "2 test(s) fail:\n- t.py::a\n- t.py::b"
    assert short.metadata["full_problem_statement"] == long
    assert dataclasses.replace(short, problem_statement=long, metadata=task.metadata) == task
