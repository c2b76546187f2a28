"""`hf:PATH`: a local transformers model as a policy, with continuous batching.

Attempts run in threads; each `act()` submits its prompt to one `BatchEngine`
(hf_engine.py), whose decode loop lets requests join and leave the running
batch token by token, each with its own sampling settings, `max_tokens` and
seed. Tools go through the model's own chat template; tool calls come back the
way vLLM's Hermes parser reads them (`<tool_call>{json}</tool_call>` in the
text), plus token ids and log-probabilities of the completion.

`repogym serve` uses `submit()` instead of `act()`: it gets the `Job` back, so
it can cancel it when the client hangs up and bound its time and the queue.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from repogym.agent.backends.hf_engine import BatchEngine, EngineStats, Job
from repogym.agent.backends.tokenizer import load_tokenizer
from repogym.agent.parsing import ParsedReply, parse_tool_calls
from repogym.agent.policies import (
    AssistantTurn,
    PolicyConfig,
    PolicyRequest,
    PolicyUnavailable,
    SamplingParams,
    policy_backends,
)
from repogym.errors import ConfigError


class ContextOverflow(PolicyUnavailable):
    """The prompt plus the reply budget does not fit the model's context window."""

    def __init__(self, message: str) -> None:
        super().__init__(message, kind="context")


class HFPolicy:
    """A transformers causal LM behind the Policy protocol."""

    def __init__(self, model_dir: str, config: PolicyConfig | None = None, max_queue: int = 0) -> None:
        """`max_queue`: most requests waiting for a batch slot (0 = unbounded; the server bounds it)."""
        import torch
        from transformers import AutoModelForCausalLM

        config = config or PolicyConfig(spec=f"hf:{model_dir}")
        folder = Path(model_dir)
        if not (folder / "config.json").is_file():
            raise ConfigError(f"--policy hf:{model_dir}: no model there (expected {folder / 'config.json'})")
        self.policy_id = f"hf:{folder.name}"
        self.device = config.device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.tokenizer = load_tokenizer(folder)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = AutoModelForCausalLM.from_pretrained(folder, dtype="auto").to(self.device).eval()
        self.max_positions = int(getattr(self.model.config, "max_position_embeddings", 0) or 1 << 30)
        self.max_batch = max(1, config.concurrency)
        self._stop_ids = self._stop_token_ids()
        self.engine = BatchEngine(
            self.model,
            self._stop_ids,
            self.tokenizer.pad_token_id,
            max_batch=self.max_batch,
            max_queue=max_queue,
        )

    def _stop_token_ids(self) -> list[int]:
        ids = {self.tokenizer.eos_token_id, *(_as_list(self.model.generation_config.eos_token_id))}
        im_end = self.tokenizer.convert_tokens_to_ids("<|im_end|>")
        if isinstance(im_end, int) and im_end != self.tokenizer.unk_token_id:
            ids.add(im_end)
        return sorted(i for i in ids if isinstance(i, int))

    # -- Policy ------------------------------------------------------------------------------

    def act(self, request: PolicyRequest) -> AssistantTurn:
        job = self.submit(request)
        return self.turn(job, job.future.result())

    def close(self) -> None:
        self.engine.close()

    # -- for the server ----------------------------------------------------------------------

    def submit(self, request: PolicyRequest, timeout_s: float | None = None) -> Job:
        """Queue a request without waiting; raises ContextOverflow, or QueueFull when the queue is at its bound.

        The job's future gets (token ids, log-probabilities); `turn(job, result)` makes the reply.
        """
        ids = self.tokenizer(self.render(request), add_special_tokens=False)["input_ids"]
        if len(ids) + request.sampling.max_tokens > self.max_positions:
            raise ContextOverflow(
                f"prompt of {len(ids)} tokens + max_tokens {request.sampling.max_tokens} exceeds the "
                f"model's {self.max_positions} positions"
            )
        return self.engine.submit(ids, request.sampling, timeout_s)

    def turn(self, job: Job, result: tuple[list[int], list[float]]) -> AssistantTurn:
        completion, logprobs = result
        return self._turn(completion, logprobs, len(job.prompt_ids), job.sampling)

    def stats(self) -> EngineStats:
        return self.engine.stats()

    # -- generation --------------------------------------------------------------------------

    def render(self, request: PolicyRequest) -> str:
        """The prompt text: the chat template applied to the messages and tools."""
        return self.tokenizer.apply_chat_template(
            template_messages(request.messages),
            tools=request.tools or None,
            add_generation_prompt=True,
            tokenize=False,
        )

    def _turn(
        self, completion: list[int], logprobs: list[float], prompt_tokens: int, sampling: SamplingParams
    ) -> AssistantTurn:
        stop_at = next((i for i, token in enumerate(completion) if token in self._stop_ids), None)
        finish_reason = "length" if stop_at is None else "stop"
        kept = completion if stop_at is None else completion[: stop_at + 1]
        text_ids = kept if stop_at is None else kept[:-1]
        text = self.tokenizer.decode(text_ids, skip_special_tokens=False)
        content, parsed = split_tool_calls(text)
        return AssistantTurn(
            text=content,
            tool_calls=parsed.calls,
            finish_reason="tool_calls" if parsed.calls and finish_reason == "stop" else finish_reason,
            prompt_tokens=prompt_tokens,
            completion_tokens=len(kept),
            completion_token_ids=tuple(kept),
            logprobs=tuple(float(x) for x in logprobs[: len(kept)]),
        )


def split_tool_calls(text: str) -> tuple[str, ParsedReply]:
    """Hermes-style calls out of generated text: (content before the first call, the calls).

    When the tags hold no readable call, the text stays whole so the agent loop can report why.

    >>> content, parsed = split_tool_calls('Fixing.<tool_call>\\n{"name": "submit", "arguments": {}}\\n</tool_call>')
    >>> content, parsed.calls[0].name
    ('Fixing.', 'submit')
    """
    if "<tool_call>" not in text:
        return text, ParsedReply()
    parsed = parse_tool_calls(text[text.index("<tool_call>") :], ())
    if not parsed.calls or parsed.source != "tool_call_tag":
        return text, ParsedReply()
    return text[: text.index("<tool_call>")].strip(), parsed


def template_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages as chat templates expect them: tool-call arguments as objects, content never None."""
    rendered = []
    for message in messages:
        message = dict(message)
        message["content"] = message.get("content") or ""
        calls = []
        for call in message.get("tool_calls") or []:
            function = dict(call.get("function", {}))
            if isinstance(function.get("arguments"), str):
                with contextlib.suppress(json.JSONDecodeError):  # a broken call is rendered as written
                    function["arguments"] = json.loads(function["arguments"])
            calls.append({**call, "function": function})
        if calls:
            message["tool_calls"] = calls
        rendered.append(message)
    return rendered


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


@policy_backends.register("hf")
def make_hf_policy(argument: str, config: PolicyConfig) -> HFPolicy:
    if not argument:
        raise ConfigError("--policy hf:PATH: give the model folder, e.g. hf:./checkpoints/tiny")
    return HFPolicy(argument, config)
