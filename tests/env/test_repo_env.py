"""RepoEnv's episode semantics on the real toy task: reset, steps, the end, the reward, groups, registration."""

from __future__ import annotations

import gymnasium
import pytest

import repogym
import repogym.env
from repogym.env.base import read_originals
from repogym.env.replay import patch_actions
from repogym.errors import ConfigError, ResetNeeded, UnknownNameError
from repogym.grading.report import Outcome, TestStatus
from repogym.patches import changed_paths

SOURCE = "src/calc/__init__.py"


def gold_actions(env):
    return patch_actions(env.task.patch, read_originals(env.runtime.pristine, changed_paths(env.task.patch)))


def test_reset_shows_the_issue_and_the_repository_and_is_deterministic(make_env, toy_task):
    env = make_env()
    observation, info = env.reset(seed=1)
    assert toy_task.problem_statement in observation
    assert "src/" in observation and "pyproject.toml" in observation and "4 files" in observation
    assert "submit()" in observation
    assert info["instance_id"] == toy_task.instance_id and info["tools"][-1] == "submit"
    assert env.reset(seed=2)[0] == observation == env.reset()[0]
    assert observation in env.observation_space


def test_reset_throws_away_the_previous_episode(env, step_ok):
    step_ok(env, "create_file('scratch.py', 'x = 1\\n')")
    step_ok(env, f"str_replace('{SOURCE}', 'a - b', 'a + b')")
    env.reset()
    assert step_ok(env, "bash('git status --porcelain; cat src/calc/__init__.py')") == (
        "[exit code 0]\ndef add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
    )


def test_the_gold_patch_through_tool_actions_resolves_with_reward_one(env, toy_task):
    actions = gold_actions(env)
    assert [a["function"]["name"] for a in actions] == ["edit_file", "submit"]
    for action in actions[:-1]:
        assert env.step(action)[1:4] == (0.0, False, False)
    observation, reward, terminated, truncated, info = env.step(actions[-1])
    assert (reward, terminated, truncated) == (1.0, True, False)
    grade = info["grade"]
    assert grade.outcome is Outcome.RESOLVED and grade.fail_to_pass == {
        "tests/test_calc.py::test_add": TestStatus.PASSED
    }
    assert info["reward"].components == {"tests_pass": 1.0, "compile_pass": 0.0, "minimal_diff": 0.0}
    assert "+    return a + b" in info["patch"] and info["steps"] == 2 and info["format_errors"] == 0
    assert info["tool_call_id"] == "replay-1" and info["truncated_by"] is None
    assert {"episode_s", "diff_s", "grade_s"} <= set(info["timings"])
    assert "grade RESOLVED" in observation and "reward 1" in observation
    with pytest.raises(ResetNeeded):
        env.step("view_file('README.md')")
    with pytest.raises(gymnasium.error.ResetNeeded):  # what gymnasium users catch
        env.step("submit()")


def test_an_empty_submit_scores_zero_and_does_not_resolve(make_env):
    env = make_env()
    with pytest.raises(ResetNeeded, match="before reset"):
        env.step("submit()")
    env.reset()
    _, reward, terminated, _, info = env.step(
        {"type": "function", "function": {"name": "submit", "arguments": "{}"}}
    )
    assert terminated and reward == 0.0 and info["patch"] == ""
    assert info["grade"].outcome is Outcome.UNRESOLVED
    assert info["reward"].components == {"tests_pass": 0.0, "compile_pass": 0.0, "minimal_diff": 0.0}


def test_a_patch_that_breaks_compilation_gets_the_compile_penalty(env, step_ok):
    step_ok(env, f"edit_file('{SOURCE}', '2:2', '    return a +')")
    _, reward, _, _, info = env.step("submit()")
    assert info["grade"].compile_errors and info["reward"].components["compile_pass"] == -0.5
    assert reward == -0.5


def test_the_agents_own_test_configuration_does_not_grade_itself(env, step_ok):
    # Attack: without fixing add(), make every test in the agent's episode pass, then submit.
    cheat = (
        "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
        "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n"
    )
    step_ok(env, {"name": "create_file", "arguments": {"path": "conftest.py", "text": cheat}})
    step_ok(
        env,
        {
            "name": "create_file",
            "arguments": {"path": "tests/test_calc.py", "text": "def test_add():\n    pass\n"},
        },
    )
    _, reward, _, _, info = env.step("submit()")
    assert info["grade"].outcome is Outcome.UNRESOLVED and reward <= 0.0
    assert info["grade"].fail_to_pass["tests/test_calc.py::test_add"] is TestStatus.FAILED


def test_max_steps_truncates_and_grades_the_current_diff_with_format_errors_counted(make_env, step_ok):
    reward = {
        "components": [
            {"name": "tests", "fn": "tests_pass"},
            {"name": "format", "weight": 0.25, "fn": "format"},
        ]
    }
    env = make_env(max_steps=3, reward=reward)
    env.reset()
    step_ok(env, f"str_replace('{SOURCE}', 'a - b', 'a + b')")
    observation, _, _, _, info = env.step("str_replace(SOURCE, 'a', 'b')")
    assert observation.startswith("Format error:") and info["format_errors"] == 1 and info["tool"] is None
    observation, reward, terminated, truncated, info = env.step("view_file('README.md')")
    assert (terminated, truncated, info["truncated_by"]) == (False, True, "max_steps")
    assert info["grade"].resolved and reward == pytest.approx(0.75)
    assert info["reward"].raw == {"tests": 1.0, "format": -1.0}
    assert "truncated (max_steps)" in observation and "# calc" in observation


def test_time_budget_truncates_and_can_skip_grading(make_env):
    env = make_env(time_budget_s=0.5, grade_on_truncation=False)
    env.reset()
    observation, reward, terminated, truncated, info = env.step("bash('sleep 1; echo done')")
    assert (reward, terminated, truncated, info["truncated_by"]) == (0.0, False, True, "time_budget")
    assert info["grade"] is None and info["reward"] is None and "not graded" in observation


def test_a_group_shares_one_runtime_and_keeps_episodes_apart(toy_task, toy_runtime, step_ok):
    group = repogym.env.make_group(toy_task.instance_id, 3, [toy_task], runtime=toy_runtime)
    try:
        assert len({id(env) for env in group}) == 3 and all(env.runtime is toy_runtime for env in group)
        for env in group:
            env.reset()
        step_ok(group[0], f"str_replace('{SOURCE}', 'a - b', 'a + b')")
        assert "a + b" in step_ok(group[0], f"bash('cat {SOURCE}')")
        assert "a - b" in step_ok(group[1], f"bash('cat {SOURCE}')")
        assert len({env.episode.layer.root for env in group}) == 3
    finally:
        for env in group:
            env.close()


def test_unknown_instance_ids_and_bad_options_are_errors_that_say_why(toy_task, toy_runtime):
    with pytest.raises(UnknownNameError, match="closest: toy__calc-1"):
        repogym.make("toy__calc-2", tasks=[toy_task], runtime=toy_runtime)
    with pytest.raises(ConfigError, match="max_steps"):
        repogym.env.make(toy_task.instance_id, toy_task, runtime=toy_runtime, max_steps=0)
    with pytest.raises(ConfigError, match="observation_chrs: unknown key; did you mean 'observation_chars'"):
        repogym.env.make(toy_task.instance_id, toy_task, runtime=toy_runtime, observation_chrs=100)
    with pytest.raises(ConfigError, match=r"reward\.components\.0\.fn"):
        repogym.env.make(
            toy_task.instance_id,
            toy_task,
            runtime=toy_runtime,
            reward={"components": [{"name": "x", "fn": "nope"}]},
        )
    with pytest.raises(ConfigError, match="tasks"):
        repogym.env.make(toy_task.instance_id)


def test_registered_with_gymnasium(toy_task, toy_runtime):
    assert repogym.env.ENV_ID in gymnasium.registry
    env = gymnasium.make(
        "repogym.env:repogym/RepoFix-v0", instance_id=toy_task.instance_id, tasks=[toy_task], runtime=toy_runtime,
        render_mode="ansi",
    )  # fmt: skip
    try:
        with pytest.raises(gymnasium.error.ResetNeeded):
            env.step("bash('ls')")
        env.reset()
        observation, *_ = env.step("bash('echo hello')")
        assert observation == "[exit code 0]\nhello\n" == env.render()
        assert isinstance(env.unwrapped, repogym.env.repo_env.RepoEnv)
        assert [s["function"]["name"] for s in env.unwrapped.tool_schemas()][:2] == ["bash", "view_file"]
    finally:
        env.close()


def test_a_tool_subset_limits_what_the_agent_can_call(make_env):
    env = make_env(tools=["view_file"])
    env.reset()
    assert [s["function"]["name"] for s in env.tool_schemas()] == ["view_file", "submit"]
    observation, _, _, _, info = env.step("bash('ls')")
    assert "unknown tool 'bash'" in observation and info["format_errors"] == 1


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ('{"name": "view_file", "arguments": {"path": "README.md"', "the action is not valid JSON"),
        (
            {"type": "function", "function": {"name": "bash", "arguments": "{'command': 'ls'}"}},
            "not valid JSON",
        ),
        ("view_file()", "missing required argument(s) path"),
        ("view_file('README.md', '1:2', 'extra')", "takes 2 argument(s), got 3"),
        ({"name": "bash", "arguments": {"command": "ls", "timeout": 5}}, "bash has no argument 'timeout'"),
        ("veiw_file('README.md')", "unknown tool 'veiw_file' (did you mean 'view_file'?)"),
        (None, "got NoneType"),
    ],
)
def test_malformed_actions_are_observations_counted_as_format_errors(env, action, message):
    observation, reward, terminated, truncated, info = env.step(action)
    assert observation.startswith("Format error: ") and message in observation
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["format_errors"] == 1 and info["format_error"] and info["tool"] is None
    assert env.step("view_file('README.md')")[4]["format_errors"] == 1  # the count carries on
