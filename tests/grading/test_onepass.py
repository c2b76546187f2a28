"""The one-jailed-command way of applying a grade's patches (grading/onepass.py) against the old way: the same
verdicts on the same patches, and a fall back to the old way whenever a test patch file is not exactly what
the test patch makes of it (real bwrap episodes of the toy task)."""

from __future__ import annotations

import pytest

from repogym.grading import onepass
from repogym.grading.grade import grade
from repogym.patches import parse_patch
from repogym.sandbox.bwrap import is_root
from repogym.testing import BUGGY_SOURCE, FIXED_SOURCE, toy_patch

pytestmark = pytest.mark.skipif(not is_root(), reason="the one-pass way needs overlayfs episodes (root)")


def _patches(task) -> dict[str, str]:
    conftest = "diff --git a/conftest.py b/conftest.py\nnew file mode 100644\n--- /dev/null\n+++ b/conftest.py\n@@ -0,0 +1 @@\n+import os\n"
    return {
        "gold": task.patch,
        "empty": "",
        "buggy": toy_patch(task, "src/calc/__init__.py", BUGGY_SOURCE + "\n# still wrong\n"),
        "gold and a conftest": task.patch + conftest,
        "does not compile": toy_patch(task, "src/calc/__init__.py", FIXED_SOURCE + "\ndef broken(:\n"),
        "does not apply": task.patch.replace("@@ -", "@@ -9"),
    }


def _summary(result) -> tuple:
    return (result.outcome, result.status, result.fail_to_pass, result.pass_to_pass, result.ignored_paths,
            result.compile_errors, result.patch_applied_with)  # fmt: skip


@pytest.mark.slow
def test_one_pass_and_the_old_way_give_the_same_verdicts(toy_task, toy_runtime, monkeypatch):
    calls: list[str] = []
    run = toy_runtime.sandbox.run
    monkeypatch.setattr(
        toy_runtime.sandbox, "run", lambda command, *a, **k: calls.append(command) or run(command, *a, **k)
    )
    fast = {name: grade(toy_task, patch, runtime=toy_runtime) for name, patch in _patches(toy_task).items()}
    calls.clear()
    grade(toy_task, toy_task.patch, runtime=toy_runtime)
    gold_commands = len(calls)
    calls.clear()
    grade(toy_task, "", runtime=toy_runtime)
    empty_commands = len(calls)
    monkeypatch.setattr(onepass, "usable", lambda *args: None)
    slow = {name: grade(toy_task, patch, runtime=toy_runtime) for name, patch in _patches(toy_task).items()}
    for name in fast:
        assert _summary(fast[name]) == _summary(slow[name]), name
    assert fast["gold"].resolved and not fast["buggy"].resolved
    # One sandbox start each: patches, the check (at the command's checkpoint), tests.
    assert gold_commands == empty_commands == 1


def test_grading_candidate_edit_to_a_test_patch_file_outside_its_hunks_goes_the_old_way(
    toy_task, toy_runtime
):
    """A change to a test patch file that the test patch does not overwrite (a fooled header could make one)
    is seen after the one command, and the old way, whose checks name it, decides."""
    sections = list(parse_patch(toy_task.test_patch))
    with toy_runtime.episode(readonly_git=True) as episode:
        patch = episode.put_file("t.patch", toy_task.test_patch)
        assert episode.run(
            f"git apply {patch} && printf '\\ndef test_add():\\n    pass\\n' >> tests/test_calc.py"
        ).ok
        landed, fallback = onepass.check(
            episode, sections, None, False, ["tests/test_calc.py"], lambda p: "", []
        )
    assert fallback == "tests/test_calc.py is not what the test patch makes of it" and landed == ""


def test_one_pass_check_passes_the_test_patch_alone(toy_task, toy_runtime):
    sections = list(parse_patch(toy_task.test_patch))
    with toy_runtime.episode(readonly_git=True) as episode:
        patch = episode.put_file("t.patch", toy_task.test_patch)
        assert episode.run(f"git apply {patch} && printf 'x = 1\\n' >> src/calc/__init__.py").ok
        assert onepass.check(episode, sections, None, False, ["tests/test_calc.py"], lambda p: "", []) == (
            "",
            "",
        )
