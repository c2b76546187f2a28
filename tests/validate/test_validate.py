"""Validation of candidates of every kind, as a user of `validate_candidates` sees it (real sandbox, real git)."""

from __future__ import annotations

import itertools
import json

from repogym.dataset import load_tasks
from repogym.testing import FAIL_TO_PASS, PASS_TO_PASS
from repogym.validate import Stage, Verdict, partial_path

from ..support.candidates import PLANTED_SECRET


def test_recovers_exactly_the_fail_to_pass_and_pass_to_pass_of_a_known_task(batch):
    outcome = batch.run.outcomes["exact"]
    assert outcome.verdict is Verdict.VALIDATED
    assert list(outcome.fail_to_pass) == FAIL_TO_PASS
    assert list(outcome.pass_to_pass) == PASS_TO_PASS
    assert outcome.flaky == ()


def test_written_task_carries_tests_licence_and_environment_spec(batch):
    written = {task.instance_id: task for task in load_tasks(batch.out)}
    assert sorted(written) == ["licensed-clean"]
    task = written["licensed-clean"]
    assert (task.FAIL_TO_PASS, task.PASS_TO_PASS) == (FAIL_TO_PASS, PASS_TO_PASS)
    assert task.license == "MIT"
    validation = task.metadata["validation"]
    assert validation["runs"] == 2
    assert validation["test_files"] == ["tests/test_calc.py"]
    assert validation["env"]["python"].startswith("3.")
    assert validation["env"]["env_key"]
    assert "pip install" in validation["env"]["install_script"]
    assert validation["timings"]["after_s"] > 0


def test_a_test_patch_that_does_not_apply_is_dropped_at_the_applied_stage(batch):
    outcome = batch.run.outcomes["test-patch-does-not-apply"]
    assert (outcome.verdict, outcome.stage) == (Verdict.TEST_PATCH_FAILED, Stage.APPLIED)
    assert "tests/test_calc.py" in outcome.detail


def test_a_refactor_with_no_failing_test_is_dropped(batch):
    outcome = batch.run.outcomes["refactor"]
    assert (outcome.verdict, outcome.stage) == (Verdict.NO_FAIL_TO_PASS, Stage.HAS_FAIL_TO_PASS)
    assert outcome.fail_to_pass == ()
    assert outcome.detail.startswith("before: 3 pass; after: 3 pass (log ")  # it passed before the change too
    assert outcome.detail.endswith("after-0.log)")


def test_a_flaky_test_is_left_out_and_the_real_fix_kept(batch):
    outcome = batch.run.outcomes["flaky-beside-fix"]
    assert outcome.verdict is Verdict.VALIDATED
    assert list(outcome.fail_to_pass) == FAIL_TO_PASS
    assert list(outcome.pass_to_pass) == PASS_TO_PASS
    assert outcome.flaky == ("tests/test_calc.py::test_flaky",)


def test_a_candidate_whose_only_fixing_test_is_flaky_is_dropped_as_flaky(batch):
    outcome = batch.run.outcomes["only-flaky"]
    assert (outcome.verdict, outcome.stage) == (Verdict.ONLY_FLAKY, Stage.NOT_FLAKY)
    assert outcome.flaky == ("tests/test_calc.py::test_add",)


def test_tests_of_a_module_that_cannot_import_before_the_fix_fail_to_pass(batch):
    # Before the fix pytest stops at the collection error; each file is then run alone, so the other
    # file's passing tests stay PASS_TO_PASS instead of all counting as failing.
    outcome = batch.run.outcomes["new-test-module"]
    assert outcome.verdict is Verdict.VALIDATED
    assert set(outcome.fail_to_pass) == {*FAIL_TO_PASS, "tests/test_sub.py::test_sub"}
    assert list(outcome.pass_to_pass) == PASS_TO_PASS
    assert outcome.validation["test_files"] == ["tests/test_calc.py", "tests/test_sub.py"]


def test_a_missing_python_is_an_env_build_failure_and_the_run_goes_on(batch):
    outcome = batch.run.outcomes["python-3.5"]
    assert (outcome.verdict, outcome.stage) == (Verdict.ENV_BUILD_FAILED, Stage.ENV_BUILT)
    assert "Python 3.5 is not installed" in outcome.detail
    assert batch.run.outcomes["exact"].validated  # the same batch went on validating


def test_a_repository_that_is_gone_is_counted_and_the_run_goes_on(batch):
    outcome = batch.run.outcomes["no-such-repo"]
    assert (outcome.verdict, outcome.stage) == (Verdict.REPO_UNAVAILABLE, Stage.ENV_BUILT)
    assert "moved-away" in outcome.detail


def test_privacy_stage_drops_the_task_with_a_secret_and_unlicensed_ones(batch):
    funnel = batch.run.funnel
    assert funnel.count("secret") == 1
    # the toy repository has no licence: its validated candidates stop at the privacy stage
    assert funnel.count("license_unknown") == 3
    assert batch.run.outcomes["licensed-secret"].validated


def test_the_planted_secret_never_reaches_an_output_file(batch):
    outputs = [batch.out, batch.funnel, partial_path(batch.out)]
    for path in outputs:
        assert path.exists()
        assert PLANTED_SECRET not in path.read_text(encoding="utf-8"), f"secret leaked into {path.name}"


def test_partial_file_holds_outcomes_not_patches(batch, candidates):
    records = [json.loads(line) for line in partial_path(batch.out).read_text().splitlines()]
    assert sorted(r["instance_id"] for r in records) == sorted(candidates)
    assert not any("patch" in key for record in records for key in record)


def test_funnel_accounts_for_every_candidate_exactly_once(batch, candidates):
    report = json.loads(batch.funnel.read_text())
    assert report["candidates"] == len(candidates) == 10
    stages = report["stages"]
    assert [s["stage"] for s in stages] == [s.value for s in Stage]
    assert stages[0]["in"] == 10
    for before, after in itertools.pairwise(stages):
        assert after["in"] == before["out"]
    for stage in stages:
        assert stage["in"] - stage["out"] == sum(d["count"] for d in stage["dropped"])
    assert stages[-1]["out"] == report["written"] == 1
    placed = [iid for s in stages for d in s["dropped"] for iid in d["examples"]] + report["written_examples"]
    # each candidate is in exactly one place (every reason here has few enough to list them all)
    assert sorted(placed) == sorted(candidates)
    by_reason = {d["reason"]: d["count"] for s in stages for d in s["dropped"]}
    assert by_reason == {
        "repo_unavailable": 1,
        "env_build_failed": 1,
        "test_patch_failed": 1,
        "no_fail_to_pass": 1,
        "only_flaky_fail_to_pass": 1,
        "secret": 1,
        "license_unknown": 3,
    }
    assert report["flaky_tests_dropped"] == 2


def test_a_validated_task_grades_answers_within_ten_times_its_test_time(batch):
    """The gym's grade of an answer stops the tests at ten times the slowest validated run plus 20 s, at least
    a minute (repogym.grading.timelimit), so a looping answer costs a minute in a GRPO step or an eval; a task
    never validated keeps the sandbox's limit, and an explicit grade_timeout_s wins over both."""
    import repogym.env
    from repogym.grading.timelimit import validated_run_s
    from repogym.sandbox.base import Limits

    task = next(iter(load_tasks(batch.out)))
    run_s = validated_run_s(task)
    validation = task.metadata["validation"]
    assert run_s == max(validation["timings"]["before_s"], validation["timings"]["after_s"]) / 2
    assert 0 < run_s < 4  # the toy tests: the floor decides
    env = repogym.env.make(task.instance_id, task, mode="agentless")
    try:
        assert env.grade_limits.wall_s == 60.0
        assert env.runtime.limits.wall_s == Limits().wall_s == 600.0  # the agent's tools keep theirs
        slow = task.replace(
            metadata={**task.metadata, "validation": {**validation, "runs": 1, "timings": {"after_s": 50.0}}}
        )
        assert repogym.env.make(slow.instance_id, slow, runtime=env.runtime).grade_limits.wall_s == 520.0
        unvalidated = task.replace(metadata={})
        assert (
            repogym.env.make(task.instance_id, unvalidated, runtime=env.runtime).grade_limits.wall_s == 600.0
        )
        chosen = repogym.env.make(task.instance_id, task, runtime=env.runtime, grade_timeout_s=5)
        assert chosen.grade_limits.wall_s == 5.0
        longer = repogym.env.make(task.instance_id, task, runtime=env.runtime, grade_timeout_s=1200)
        assert (longer.grade_limits.wall_s, longer.grade_limits.cpu_s) == (1200.0, 1200)  # CPU no tighter
    finally:
        env.close()


#: A test of `add` that never ends while `add` is wrong (the shape of click's pager test before its fix).
HANGING_ADD_TEST = """from calc import add, mul


def test_mul():
    assert mul(2, 3) == 6


def test_add_ends():
    while add(2, 3) != 5:
        pass
"""
INDEPENDENT_TEST_MODULE = """diff --git a/tests/test_other.py b/tests/test_other.py
new file mode 100644
--- /dev/null
+++ b/tests/test_other.py
@@ -0,0 +1,2 @@
+def test_independent():
+    assert 2 * 2 == 4
"""


def test_a_file_that_hangs_before_the_fix_leaves_the_other_files_tests_out_of_fail_to_pass(toy, tmp_path):
    """Before the fix one test file hangs until the time limit; a test of another file that passes all along
    is PASS_TO_PASS, not FAIL_TO_PASS (before, the cut run left every test unreported)."""
    from repogym.sandbox.base import Limits
    from repogym.testing import toy_patch
    from repogym.validate import ValidateConfig, validate_candidates

    from ..support.tasks import as_candidate

    test_patch = toy_patch(toy, "tests/test_calc.py", HANGING_ADD_TEST) + INDEPENDENT_TEST_MODULE
    candidate = as_candidate(toy, "hangs-before-fix", test_patch=test_patch)
    out = tmp_path / "tasks.jsonl"
    validate_candidates(
        [candidate], out, ValidateConfig(workers=1, limits=Limits.for_timeout(20), scrub=False)
    )
    (task,) = load_tasks(out)
    assert (
        "tests/test_calc.py::test_add_ends" in task.FAIL_TO_PASS
    )  # the hanging file's tests stay unknown before
    assert "tests/test_other.py::test_independent" not in task.FAIL_TO_PASS
    assert "tests/test_other.py::test_independent" in task.PASS_TO_PASS
