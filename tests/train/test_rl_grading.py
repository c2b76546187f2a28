"""Grading inside GRPO: a batch's completions are graded at once on the pool, and agent-mode tools act
in the sandbox and end with submit() (real toy repo, real bwrap sandbox, no model needed)."""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor

import pytest
from transformers.utils import get_json_schema

from repogym.config import validate_config
from repogym.env.tools import tool_names
from repogym.train.rl_reward import SandboxReward, agent_scorer, agentless_scorer
from repogym.train.rl_tasks import TaskEnvs
from repogym.train.rl_tools import ENDED, tool_env_class

pytestmark = pytest.mark.slow


def open_envs(toy_tasks_file, mode: str) -> TaskEnvs:
    config = validate_config({"env": {"task_set": str(toy_tasks_file), "mode": mode}})
    return TaskEnvs.open(config, workers=2)


def test_a_group_is_graded_in_parallel_not_one_after_another(toy_task, toy_tasks_file):
    from repogym.search_replace import answer_from_patch

    envs = open_envs(toy_tasks_file, "agentless")
    try:
        with envs.borrowed(toy_task.instance_id) as env:
            gold = answer_from_patch(toy_task.patch, env.code_context)
        with ThreadPoolExecutor(2) as pool:
            reward = SandboxReward(envs.reward, agentless_scorer(envs, pool))
            completions = [[{"role": "assistant", "content": gold}] for _ in range(4)]
            logged: dict[str, float] = {}
            kwargs = {"instance_id": [toy_task.instance_id] * 4, "log_metric": logged.__setitem__}
            values = [fn(prompts=None, completions=completions, **kwargs) for fn in reward.functions()]
            scores = reward.scores(completions, kwargs)
    finally:
        envs.close()
    assert values[0] == [1.0] * 4, "tests_pass: every gold answer resolves"
    assert logged["resolve_rate"] == 1.0 and logged["format_error_rate"] == 0.0
    spans = sorted((s.started, s.finished) for s in scores)
    assert any(later[0] < earlier[1] for earlier, later in itertools.pairwise(spans)), (
        f"no two gradings overlapped: {spans}"
    )


def test_agent_tools_edit_in_the_sandbox_and_submit_is_graded(toy_task, toy_tasks_file):
    envs = open_envs(toy_tasks_file, "agent")
    pool = ThreadPoolExecutor(2)
    try:
        env_class = tool_env_class(envs, pool, grade_on_submit=True)
        fixer, idler = env_class(), env_class()
        for env in (fixer, idler):
            env.reset(prompt=[], instance_id=toy_task.instance_id)
        assert "return a - b" in fixer.view_file(path="src/calc/__init__.py")
        assert "Error" not in fixer.str_replace(path="src/calc/__init__.py", old="a - b", new="a + b")
        assert fixer.submit().startswith("Submitted")
        assert fixer._grading is not None, "rollout.async: grading starts at submit, while others generate"
        assert fixer.bash(command="echo too late") == ENDED, "nothing runs after submit"
        assert "Error" in idler.view_file(path="no/such/file.py")
        assert idler._grading is None
        scores = agent_scorer()([None, None], {"environments": [fixer, idler]})
    finally:
        pool.shutdown()
        envs.close()
    assert (scores[0].resolved, scores[0].submitted, scores[0].breakdown.total) == (True, True, 1.0)
    assert (scores[1].resolved, scores[1].submitted) == (False, False), "graded when its budget ran out"


def test_agent_tools_are_the_env_tools_with_their_schemas(toy_tasks_file):
    env_class = tool_env_class(None, None, grade_on_submit=False)  # type: ignore[arg-type]
    env = env_class()
    public = sorted(n for n in dir(env_class) if not n.startswith("_") and callable(getattr(env_class, n)))
    assert public == sorted([*tool_names(), "reset"])
    schema = get_json_schema(env.view_file)["function"]
    assert schema["parameters"]["required"] == ["path"]
    assert set(schema["parameters"]["properties"]) == {"path", "lines"}
    assert get_json_schema(env.run_tests)["function"]["parameters"]["properties"]["tests"]["type"] == "array"
