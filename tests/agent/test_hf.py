"""The hf backend on a tiny local model: chat template with tools, continuous batching, token facts."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import pytest

from repogym.agent.backends.hf import ContextOverflow, HFPolicy, split_tool_calls
from repogym.agent.backends.hf_engine import JobCancelled
from repogym.agent.policies import PolicyConfig, PolicyRequest, SamplingParams, make_policy
from repogym.errors import ConfigError

TOOLS = [{"type": "function", "function": {"name": "submit", "description": "Finish.",
                                           "parameters": {"type": "object", "properties": {}}}}]  # fmt: skip
MESSAGES = [{"role": "system", "content": "You fix bugs."}, {"role": "user", "content": "add() is wrong"}]


@pytest.fixture(scope="module")
def policy(tiny_model):
    policy = make_policy(PolicyConfig(spec=f"hf:{tiny_model}", device="cpu", concurrency=4))
    yield policy
    policy.close()


def test_the_prompt_renders_tools_and_earlier_tool_calls(policy):
    history = [*MESSAGES, {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c0", "type": "function", "function": {"name": "submit", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c0", "content": "Submitted."}]  # fmt: skip
    prompt = policy.render(PolicyRequest(history, TOOLS))
    assert '"name": "submit"' in prompt and "<tools>" in prompt
    assert '<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>' in prompt
    assert prompt.endswith("<|im_start|>assistant\n")


def test_a_turn_has_token_ids_logprobs_and_usage(policy):
    turn = policy.act(PolicyRequest(MESSAGES, TOOLS, SamplingParams(max_tokens=12)))
    assert 1 <= turn.completion_tokens <= 12
    assert len(turn.completion_token_ids) == len(turn.logprobs) == turn.completion_tokens
    assert all(lp <= 0 and math.isfinite(lp) for lp in turn.logprobs)
    assert turn.prompt_tokens > 50
    assert turn.finish_reason in ("length", "stop", "tool_calls")


def test_concurrent_requests_are_batched_and_match_single_greedy_runs(policy):
    requests = [
        PolicyRequest([*MESSAGES[:1], {"role": "user", "content": f"bug number {i} " * (i + 1)}], TOOLS,
                      SamplingParams(max_tokens=6))
        for i in range(3)
    ]  # fmt: skip
    alone = [policy.act(request) for request in requests]
    with ThreadPoolExecutor(3) as pool:
        together = list(pool.map(policy.act, requests))
    # Left padding must not change greedy output: each reply equals its unbatched self.
    assert [t.completion_token_ids for t in together] == [t.completion_token_ids for t in alone]


def test_seeded_sampling_gives_the_same_tokens_alone_and_in_a_batch_with_other_settings(policy):
    settings = [
        SamplingParams(temperature=1.0, max_tokens=9, seed=1),
        SamplingParams(temperature=0.8, top_p=0.5, max_tokens=5, seed=2),
        SamplingParams(max_tokens=7),  # greedy
        SamplingParams(temperature=1.0, max_tokens=9, seed=3),
    ]
    requests = [PolicyRequest(MESSAGES, TOOLS, sampling) for sampling in settings]
    alone = [policy.act(request) for request in requests]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(policy.act, requests))
    assert [t.completion_token_ids for t in together] == [t.completion_token_ids for t in alone]
    for batched, single in zip(together, alone, strict=True):
        assert batched.logprobs == pytest.approx(single.logprobs, abs=1e-4)
    # Each row keeps its own budget; seeds 1 and 3 differ although the settings are otherwise equal.
    assert all(t.completion_tokens <= s.max_tokens for t, s in zip(together, settings, strict=True))
    assert together[0].completion_token_ids != together[3].completion_token_ids


def test_a_long_request_blocks_no_other_and_stops_when_cancelled(policy):
    long_job = policy.submit(PolicyRequest(MESSAGES, [], SamplingParams(max_tokens=6000)))
    before = policy.stats()
    short = policy.act(PolicyRequest(MESSAGES, [], SamplingParams(max_tokens=3)))
    assert 1 <= short.completion_tokens <= 3
    assert not long_job.future.done()  # the short one joined the running batch and left it first
    long_job.cancel("test")
    with pytest.raises(JobCancelled, match="cancelled: test"):
        long_job.future.result(timeout=120)
    after = policy.stats()
    assert after.cancelled == before.cancelled + 1 and after.in_flight == 0 and after.queue_depth == 0
    assert len(long_job.tokens) < 6000


def test_a_prompt_longer_than_the_context_is_refused_with_a_reason(policy):
    huge = [{"role": "user", "content": "word " * 20000}]
    with pytest.raises(ContextOverflow, match="exceeds the model's 8192 positions"):
        policy.act(PolicyRequest(huge, [], SamplingParams(max_tokens=8)))


def test_hermes_calls_in_generated_text_become_native_calls():
    content, parsed = split_tool_calls('Done.<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>')
    assert content == "Done." and parsed.calls[0].name == "submit"
    text, unread = split_tool_calls('<tool_call>{"name": "submit", "argu')
    assert text.startswith("<tool_call>") and unread.calls == ()


def test_a_folder_without_a_model_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="no model there"):
        HFPolicy(str(tmp_path))
