"""The issue's done-when on the sample suite: every planted fix, mined from history, passes check_env.

The sample repositories (`repogym.samples.generate_suite`, its defaults: 3 libraries x 3 planted
fixes) are mined with `repogym.mining.mine`; each planted fix's mined task takes its test lists
from the samples' answer key (the manifest), standing in for validation. Each repository's
tasks run in their own thread (the work is sandbox processes), sharing one prepared runtime per
task state.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

import repogym.env
from repogym.env.checker import check_env
from repogym.env.replay import tool_call
from repogym.mining.mine import mine
from repogym.patches import changed_paths
from repogym.samples import SampleRepo, generate_suite
from repogym.search_replace import answer_from_patch
from repogym.task import Task

pytestmark = pytest.mark.slow


def mined_tasks(sample: SampleRepo) -> list[Task]:
    by_commit = {
        task.metadata["mining"]["commit"]: task for task in mine(sample.path, prs=sample.prs_path).tasks
    }
    missing = [fix.slug for fix in sample.fixes if fix.fix_commit not in by_commit]
    assert not missing, f"{sample.name}: planted fixes not mined: {missing}"
    return [
        by_commit[fix.fix_commit].replace(
            FAIL_TO_PASS=list(fix.FAIL_TO_PASS), PASS_TO_PASS=list(fix.PASS_TO_PASS)
        )
        for fix in sample.fixes
    ]


@pytest.fixture(scope="module")
def sample_suite(toy_task, tmp_path_factory) -> list[list[Task]]:
    """The mined tasks of each sample repository (toy_task points REPOGYM_CACHE at the run's cache)."""
    samples = generate_suite(tmp_path_factory.mktemp("samples") / "suite")
    return [mined_tasks(sample) for sample in samples]


def _check_repo(tasks: list[Task]) -> list[tuple[str, str]]:
    """check_env on each task; agentless gold and a compile-breaking edit on the repo's first task."""
    problems: list[tuple[str, str]] = []
    for index, task in enumerate(tasks):
        env = repogym.env.make(task.instance_id, tasks)
        try:
            report = check_env(env, raise_on_failure=False)
            problems += [(task.instance_id, f"{c.name}: {c.detail}") for c in report.checks if not c.ok]
            if (report.gold_reward, report.empty_reward) != (1.0, 0.0):
                problems.append(
                    (task.instance_id, f"rewards gold {report.gold_reward}, empty {report.empty_reward}")
                )
            if index == 0:
                problems += _agentless_and_compile(task, env)
        finally:
            env.close()
    return problems


def _agentless_and_compile(task: Task, agent_env) -> list[tuple[str, str]]:
    problems = []
    agentless = repogym.env.make(task.instance_id, task, runtime=agent_env.runtime, mode="agentless")
    agentless.reset()
    _, reward, _, _, info = agentless.step(answer_from_patch(task.patch, agentless.code_context))
    if not (info["similarity"] == 1.0 and info["grade"].resolved and reward == 2.0):
        problems.append(
            (task.instance_id, f"agentless gold: similarity {info['similarity']}, reward {reward}")
        )
    agent_env.reset()
    path = next(p for p in changed_paths(task.patch) if p.endswith(".py"))
    agent_env.step(tool_call("edit_file", "c0", path=path, lines="1:0", text="def broken(:\n"))
    _, reward, _, _, info = agent_env.step(tool_call("submit", "c1"))
    if info["reward"].components["compile_pass"] != -0.5 or reward > -0.5:
        problems.append((task.instance_id, f"compile-breaking edit scored {info['reward']}"))
    return problems


def test_every_sample_task_passes_check_env(sample_suite):
    assert sum(len(tasks) for tasks in sample_suite) == 9
    with ThreadPoolExecutor(max_workers=len(sample_suite)) as pool:
        problems = [problem for found in pool.map(_check_repo, sample_suite) for problem in found]
    assert not problems, "\n".join(f"{instance_id}: {detail}" for instance_id, detail in problems)
