"""GRPO's agentless reward graded through Ray (`grpo.grading_executor: ray`): on the same batch, every term of
every completion is what the local pool gives, through a real local Ray and the real sandbox, never more than
`grpo.ray_max_in_flight` completions in Ray; and the switch's misuses fail before training."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from repogym.config import validate_config
from repogym.errors import ConfigError
from repogym.rollout.ray_grading import RayTasks
from repogym.search_replace import answer_from_patch
from repogym.testing import BUGGY_SOURCE, toy_patch
from repogym.train.rl_checks import check_grading_executor
from repogym.train.rl_ray import ray_agentless_scorer
from repogym.train.rl_reward import SandboxReward, agentless_scorer
from repogym.train.rl_tasks import TaskEnvs, reward_for

pytestmark = pytest.mark.slow


def terms(reward: SandboxReward, completions: list, kwargs: dict) -> list[list[float | None]]:
    """What TRL reads: each reward function's values over the batch."""
    return [fn(prompts=None, completions=completions, **kwargs) for fn in reward.functions()]


def test_ray_grading_scores_a_batch_as_the_local_pool_does(toy_task, toy_tasks_file, monkeypatch):
    pytest.importorskip("ray")
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    config = validate_config({"env": {"task_set": str(toy_tasks_file), "mode": "agentless"}})
    envs = TaskEnvs.open(config, workers=2)
    try:
        with envs.borrowed(toy_task.instance_id) as env:
            gold = answer_from_patch(toy_task.patch, env.code_context)
            wrong_patch = toy_patch(toy_task, "src/calc/__init__.py", BUGGY_SOURCE.replace("a - b", "a * b"))
            wrong = answer_from_patch(wrong_patch, env.code_context)
        answers = [gold, wrong, "<think>no idea</think>", gold, wrong, gold, gold, wrong]
        completions = [[{"role": "assistant", "content": answer}] for answer in answers]
        kwargs = {"instance_id": [toy_task.instance_id] * len(answers)}
        with ThreadPoolExecutor(2) as pool:
            local = terms(SandboxReward(envs.reward, agentless_scorer(envs, pool)), completions, kwargs)
        with RayTasks(max_in_flight=3, local_cpus=2) as ray_tasks:
            reward = SandboxReward(envs.reward, ray_agentless_scorer(envs, ray_tasks))
            on_ray = terms(reward, completions, kwargs)
            scores = reward.scores(completions, kwargs)
    finally:
        envs.close()
    assert on_ray == local
    assert [s.resolved for s in scores] == [a == gold for a in answers]
    assert [s.format_error for s in scores] == [a.startswith("<think>no") for a in answers]
    counts = ray_tasks.counts
    assert counts.submitted == counts.returned == len(answers) and counts.ray_failures == 0
    assert counts.peak_in_flight == 3


@pytest.mark.parametrize(
    ("settings", "needle"),
    [
        (
            {"env": {"mode": "agent"}, "grpo": {"grading_executor": "ray"}},
            "grpo.grading_executor: ray grades agentless",
        ),
        (
            {"env": {"mode": "agentless"}, "grpo": {"ray_address": "10.0.0.1:6379"}},
            "grpo.ray_address: only used",
        ),
    ],
)
def test_the_ray_switch_is_refused_where_it_cannot_apply(settings, needle):
    with pytest.raises(ConfigError, match=needle):
        check_grading_executor(validate_config(settings))


def test_a_worker_that_cannot_set_up_the_task_raises_as_the_local_pool_does(
    toy_task, toy_tasks_file, tmp_path
):
    """An exception of the scoring itself (here: the task's repository is gone on the worker) is not a dead worker
    or node: locally it stops the run, naming the repository. Through Ray it must too, not abstain on every term of
    every completion, which trains on nothing and says so nowhere."""
    pytest.importorskip("ray")
    from repogym.errors import RepoSourceError
    from repogym.train.rl_ray import AgentlessScoring, _abstained, score_on_ray_worker

    config = validate_config({"env": {"task_set": str(toy_tasks_file), "mode": "agentless"}})
    gone = toy_task.replace(instance_id="toy__calc-gone", repo_source=str(tmp_path / "no-such-repo"))
    scoring = AgentlessScoring(reward_for(config), {}, "bwrap")
    ray_tasks = RayTasks(max_in_flight=1, local_cpus=1)
    with ray_tasks, pytest.raises(RepoSourceError, match="no-such-repo"):
        list(ray_tasks.map(score_on_ray_worker, scoring, [(gone, "<solution></solution>")], _abstained))
    assert ray_tasks.counts.ray_failures == 0
