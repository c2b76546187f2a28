"""The one-jailed-command way of applying a grade's patches (grading/onepass.py) against the old way: the same
verdicts on the same patches, and a fall back to the old way whenever a test patch file is not exactly what
the test patch makes of it (real bwrap episodes of the toy task)."""

from __future__ import annotations

import pytest

from repogym.grading import onepass
from repogym.grading.canary import plant_canary
from repogym.grading.grade import grade
from repogym.patches import parse_patch
from repogym.sandbox.bwrap import is_root
from repogym.testing import BUGGY_SOURCE, FIXED_SOURCE, toy_patch

from ..support.forgers import FORGERS, forged_patch

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


@pytest.mark.slow
def test_a_synthetic_task_is_graded_in_one_pass_with_its_canary(
    synthetic_task, synthetic_runtime, monkeypatch
):
    """A synthetic task has no test patch: the one command applies the candidate and appends the canary to
    the FAIL_TO_PASS test's own file, one sandbox start, with the same verdicts as the old way."""
    calls: list[str] = []
    run = synthetic_runtime.sandbox.run
    monkeypatch.setattr(
        synthetic_runtime.sandbox,
        "run",
        lambda command, *a, **k: calls.append(command) or run(command, *a, **k),
    )
    forger = FORGERS["testreport_patched_at_import"]
    patches = {**_patches(synthetic_task), "forged": forged_patch(synthetic_task, forger)}
    fast = {}
    for name, patch in patches.items():
        calls.clear()
        fast[name] = grade(synthetic_task, patch, runtime=synthetic_runtime)
        if name in ("gold", "empty", "buggy", "forged"):
            assert len(calls) == 1, (name, calls)
    monkeypatch.setattr(onepass, "usable", lambda *args: None)
    slow = {name: grade(synthetic_task, patch, runtime=synthetic_runtime) for name, patch in patches.items()}
    for name in fast:
        assert _summary(fast[name]) == _summary(slow[name]), name
    assert fast["gold"].resolved and fast["forged"].outcome.value == "REPORT_FORGED"


def test_one_pass_check_holds_a_synthetic_tasks_canary_file_to_the_base_commit_and_the_canary(
    synthetic_task, synthetic_runtime
):
    """With no test patch, the canary's file must be exactly the base commit's with the canary appended:
    one line more (a candidate's, landed through a fooled header) sends the grade the old way."""
    canary = plant_canary("pytest", synthetic_task.FAIL_TO_PASS, ["tests/test_calc.py"])
    assert canary is not None
    paths = ["tests/test_calc.py"]
    with synthetic_runtime.episode(readonly_git=True) as episode:
        code = episode.put_file("c.py", canary.code)
        assert episode.run(f"cat {code} >> tests/test_calc.py").ok
        assert onepass.check(episode, [], canary, True, paths, lambda p: "", []) == ("", "")
        assert episode.run("printf 'x = 1\\n' >> tests/test_calc.py").ok
        landed, fallback = onepass.check(episode, [], canary, True, paths, lambda p: "", [])
    assert fallback == "tests/test_calc.py is not what the test patch makes of it" and landed == ""
