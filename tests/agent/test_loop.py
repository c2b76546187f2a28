"""The agent loop on the real toy env: every bad reply becomes a recorded step, every ending an outcome."""

from __future__ import annotations

import json

from repogym.agent.backends.scripted import GoldPolicy, ScriptPolicy
from repogym.agent.loop import AgentLimits, AgentLoop
from repogym.agent.policies import AssistantTurn, PolicyRequest, PolicyUnavailable, SamplingParams
from repogym.agent.trajectory import AttemptOutcome
from repogym.testing import FIXED_SOURCE

FIX = {"name": "create_file", "arguments": {"path": "src/calc/__init__.py", "text": FIXED_SOURCE}}


def script(tmp_path, actions) -> ScriptPolicy:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(actions))
    return ScriptPolicy(str(path))


def run(policy, env, toy_task, **limits):
    loop = AgentLoop(policy, SamplingParams(max_tokens=64), AgentLimits(**limits))
    return loop.run(env, toy_task, attempt=1)


def test_gold_replay_resolves_and_records_a_chat(make_env, toy_task):
    trajectory = run(GoldPolicy(), make_env(max_steps=10), toy_task, max_steps=10)
    assert trajectory.outcome is AttemptOutcome.SUBMITTED
    assert trajectory.resolved and trajectory.reward == 1.0
    assert trajectory.grade["outcome"] == "RESOLVED"
    assert "return a + b" in trajectory.final_patch
    roles = [m["role"] for m in trajectory.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool"]
    call_ids = [m["tool_calls"][0]["id"] for m in trajectory.messages if m["role"] == "assistant"]
    assert call_ids == [m["tool_call_id"] for m in trajectory.messages if m["role"] == "tool"]
    assert "add(2, 3) returns -1" in trajectory.messages[1]["content"]
    assert [t["function"]["name"] for t in trajectory.tools][-1] == "submit"
    assert trajectory.timings["env_s"] > 0 and trajectory.timings["loop_s"] < trajectory.timings["env_s"]


def test_bad_replies_are_steps_with_named_format_errors_and_the_attempt_goes_on(tmp_path, make_env, toy_task):
    policy = script(
        tmp_path,
        [
            "I think the bug is in add.",  # no tool call at all
            {"content": "", "tool_calls": [{"id": "x", "function": {"name": "bash", "arguments": '{"command": '}}]},
            '<tool_call>{"name": "bash", "arguments": {"command": "ls"</tool_call>',  # broken JSON in text
            {"content": "<tool_call>\n{\"name\": \"view_file\", \"arguments\": {\"path\": \"REA", "finish_reason": "length"},
            f"Now the fix: create_file('src/calc/__init__.py', {FIXED_SOURCE!r})",  # the seed's call syntax
            "```json\n{\"name\": \"submit\", \"arguments\": {}}\n```",
        ],
    )  # fmt: skip
    trajectory = run(policy, make_env(max_steps=10), toy_task, max_steps=10)
    assert trajectory.outcome is AttemptOutcome.SUBMITTED and trajectory.resolved
    kinds = [tuple(e.split(":")[0] for e in step.format_errors) for step in trajectory.steps]
    assert kinds[0] == ("no_tool_call",)
    assert kinds[1][0] == "broken_json" and any(k == "env" for k in kinds[1])  # the env explained it too
    assert kinds[2] == ("broken_json", "unreadable_tool_call")
    assert "reply_truncated" in kinds[3]
    assert kinds[4] == () and trajectory.steps[4].call_source == "call_syntax"
    assert kinds[5] == () and trajectory.steps[5].call_source == "fenced"
    assert trajectory.format_errors == 4
    assert trajectory.reward_breakdown["total"] == trajectory.reward
    # The model was told what was wrong, in words, after the unreadable reply.
    told = [m["content"] for m in trajectory.messages if m["role"] == "user"][1]
    assert "could not run a tool call" in told and "no_tool_call" in told


def test_a_policy_that_never_submits_is_cut_at_max_steps_and_its_diff_graded(tmp_path, make_env, toy_task):
    policy = script(
        tmp_path, [{"name": "bash", "arguments": {"command": "echo hi"}}] * 2 + [FIX] + ["thinking"] * 5
    )
    trajectory = run(policy, make_env(max_steps=4), toy_task, max_steps=4)
    assert trajectory.outcome is AttemptOutcome.MAX_STEPS
    assert len(trajectory.steps) == 4
    assert trajectory.resolved  # the diff it left behind fixes the bug, and truncation grades it
    assert trajectory.detail == "max_steps"


class CountingPolicy:
    """Replies with a harmless call and bills 600 tokens a turn; or fails like an endpoint would."""

    policy_id = "test:counting"

    def __init__(self, fail: str = "") -> None:
        self.fail = fail

    def act(self, request: PolicyRequest) -> AssistantTurn:
        if self.fail and request.turn >= 1:
            raise PolicyUnavailable("HTTP 500: boom (after 2 retries)", kind=self.fail)
        call = {"id": f"c{request.turn}", "function": {"name": "bash", "arguments": '{"command": "true"}'}}
        from repogym.agent.parsing import ToolCall

        return AssistantTurn(
            tool_calls=(ToolCall.from_openai(call),), prompt_tokens=500, completion_tokens=100
        )

    def close(self) -> None:
        pass


def test_the_token_budget_stops_the_attempt_and_grades_what_is_there(make_env, toy_task):
    trajectory = run(CountingPolicy(), make_env(max_steps=20), toy_task, max_steps=20, max_tokens=1000)
    assert trajectory.outcome is AttemptOutcome.MAX_TOKENS
    assert len(trajectory.steps) == 2 and trajectory.prompt_tokens + trajectory.completion_tokens == 1200
    assert trajectory.grade is not None and not trajectory.resolved


def test_an_endpoint_failure_mid_attempt_is_an_outcome_not_an_exception(make_env, toy_task):
    trajectory = run(CountingPolicy(fail="http_error"), make_env(max_steps=20), toy_task, max_steps=20)
    assert trajectory.outcome is AttemptOutcome.POLICY_HTTP_ERROR
    assert "HTTP 500" in trajectory.detail and len(trajectory.steps) == 1
    assert trajectory.grade is None and trajectory.reward == 0.0
