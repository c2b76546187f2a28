"""One verdict per distinct candidate (grading/verdicts.py): copies of a candidate share one grade whose verdict
is a full grade's, on real sample tasks and the toy task in real bwrap episodes; the GRPO reward's scorer
grades a group once per distinct answer; nothing else is shared."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from repogym.config import validate_config
from repogym.dataset import save_tasks
from repogym.grading.batch import crash_result
from repogym.grading.grade import grade
from repogym.grading.report import Outcome, SkipRule
from repogym.grading.verdicts import VerdictStore, verdict_key, verdicts_for
from repogym.mining.mine import mine
from repogym.samples import generate_repo
from repogym.sandbox.base import Limits
from repogym.sandbox.bwrap import is_root
from repogym.sandbox.runtime import TaskRuntime
from repogym.search_replace import answer_from_patch
from repogym.task import Task
from repogym.testing import BUGGY_SOURCE, toy_patch
from repogym.train.rl_reward import SandboxReward, agentless_scorer
from repogym.train.rl_tasks import TaskEnvs

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not is_root(), reason="real bwrap episodes need root")]


def summary(result) -> tuple:
    """Everything of a verdict a reward or a report reads (not its timings nor its log's path)."""
    return (
        result.outcome, result.status, result.fail_to_pass, result.pass_to_pass, result.ignored_paths,
        result.compile_errors, result.patch_applied_with, result.not_counted, result.detail,
    )  # fmt: skip


@pytest.fixture(scope="module")
def sample_tasks(toy_task, tmp_path_factory) -> list[Task]:
    """A sample library's planted fixes, mined, with the answer key's test lists (toy_task: the shared cache)."""
    sample = generate_repo(tmp_path_factory.mktemp("sample") / "lib", seed=0, n_bug_fixes=2)
    by_commit = {t.metadata["mining"]["commit"]: t for t in mine(sample.path, prs=sample.prs_path).tasks}
    return [
        by_commit[fix.fix_commit].replace(
            FAIL_TO_PASS=list(fix.FAIL_TO_PASS), PASS_TO_PASS=list(fix.PASS_TO_PASS)
        )
        for fix in sample.fixes
    ]


def fresh_runtime(task: Task) -> TaskRuntime:
    """A runtime of its own (its own verdict store), over the shared cache's checkout and environment."""
    return TaskRuntime.create(task, "bwrap").prepare()


def test_copies_of_a_sample_candidate_share_one_grade_with_a_full_grades_verdict(sample_tasks):
    pool = ThreadPoolExecutor(4)
    for task in sample_tasks:
        runtime = fresh_runtime(task)
        candidates = {"gold": task.patch, "empty": ""}
        full = {name: grade(task, patch, runtime=runtime) for name, patch in candidates.items()}
        assert full["gold"].resolved and full["empty"].outcome is Outcome.UNRESOLVED, task.instance_id
        store = verdicts_for(runtime)
        copies = [patch for patch in candidates.values() for _ in range(4)]
        shared = list(
            pool.map(lambda p, t=task, r=runtime: grade(t, p, runtime=r, share_verdicts=True), copies)
        )
        for name, result in zip([n for n in candidates for _ in range(4)], shared, strict=True):
            assert summary(result) == summary(full[name]), (task.instance_id, name)
        # 8 copies of 2 candidates, asked all at once: 2 grades ran, the 6 others waited for them.
        assert (store.graded, store.reused) == (2, 6)
        assert sum("verdict_reused" in r.timings for r in shared) == 6
    pool.shutdown()


def test_a_verdict_is_shared_only_for_the_same_bytes_task_and_settings(toy_task):
    runtime = fresh_runtime(toy_task)
    store = verdicts_for(runtime)
    gold = grade(toy_task, toy_task.patch, runtime=runtime, share_verdicts=True)
    assert gold.resolved and store.graded == 1
    # The same fix, one more blank line at the end: another candidate, graded on its own.
    grade(toy_task, toy_task.patch + "\n", runtime=runtime, share_verdicts=True)
    # Other test limits, another skip rule or task definition under the same id: graded on their own too.
    grade(toy_task, toy_task.patch, runtime=runtime, share_verdicts=True, test_limits=Limits(wall_s=99))
    other_tests = toy_task.replace(PASS_TO_PASS=toy_task.PASS_TO_PASS[:1])
    narrowed = grade(other_tests, toy_task.patch, runtime=runtime, share_verdicts=True)
    assert set(narrowed.pass_to_pass) == set(toy_task.PASS_TO_PASS[:1])
    assert store.graded == 4 and store.reused == 0
    again = grade(toy_task, toy_task.patch, runtime=runtime, share_verdicts=True)
    assert summary(again) == summary(gold) and store.reused == 1


def test_a_grader_failure_is_never_handed_to_a_copy(toy_task):
    runtime = fresh_runtime(toy_task)
    store = verdicts_for(runtime)
    # A grade that failed on the host's side (the disk full), as guarded_grade records it.
    key = verdict_key(toy_task, toy_task.patch, SkipRule.STRICT, None, False)
    failing = crash_result(toy_task, OSError(28, "No space left on device"))
    assert store.verdict(key, lambda: failing).outcome is Outcome.INFRA_ERROR
    # The next copy grades for itself, and so gets the verdict a full grade gives.
    again = store.verdict(key, lambda: grade(toy_task, toy_task.patch, runtime=runtime))
    assert again.resolved and (store.graded, store.reused) == (2, 0)
    assert summary(store.verdict(key, lambda: failing)) == summary(again) and store.reused == 1


def test_a_store_keeps_at_most_its_capacity(toy_task):
    store = VerdictStore(capacity=1)
    runtime = fresh_runtime(toy_task)
    rule = grade(toy_task, "", runtime=runtime).skip_rule
    for patch in ("", toy_task.patch, ""):
        key = verdict_key(toy_task, patch, rule, None, False)
        store.verdict(key, lambda p=patch: grade(toy_task, p, runtime=runtime))
    assert len(store) == 1 and store.graded == 3  # the first empty patch's verdict was dropped for the gold's


def test_the_reward_grades_a_group_once_per_distinct_answer(toy_task, tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    save_tasks([toy_task], tasks)
    config = validate_config({"env": {"task_set": str(tasks), "mode": "agentless"}})
    envs = TaskEnvs.open(config, workers=1)
    try:
        with envs.borrowed(toy_task.instance_id) as env:
            gold = answer_from_patch(toy_task.patch, env.code_context)
            wrong = answer_from_patch(
                toy_patch(toy_task, "src/calc/__init__.py", BUGGY_SOURCE + "\n# still wrong\n"),
                env.code_context,
            )
        texts = [gold] * 3 + [wrong] * 3 + ["no answer here"] * 2
        with ThreadPoolExecutor(2) as pool:
            reward = SandboxReward(envs.reward, agentless_scorer(envs, pool))
            scores = reward.scores([[{"role": "assistant", "content": t}] for t in texts],
                                   {"instance_id": [toy_task.instance_id] * len(texts)})  # fmt: skip
        store = verdicts_for(envs.runtimes[toy_task.instance_id])
    finally:
        envs.close()
    assert [s.resolved for s in scores] == [True] * 3 + [False] * 5
    assert [s.format_error for s in scores] == [False] * 6 + [True] * 2
    assert (
        len({s.breakdown.total for s in scores[:3]}) == 1
        and len({s.breakdown.total for s in scores[3:6]}) == 1
    )
    assert (store.graded, store.reused) == (2, 4)  # format errors never reach the sandbox
