"""`hf:PATH`: a local transformers model as a policy, with batched generation.

Attempts run in threads; each `act()` queues its request and one generation
thread gathers what is waiting (up to `PolicyConfig.concurrency` requests with
equal sampling settings) into one left-padded `generate()` call. Tools go
through the model's own chat template; tool calls come back the way vLLM's
Hermes parser reads them (`<tool_call>{json}</tool_call>` in the text), plus
token ids and log-probabilities of the completion.

Not guaranteed: a per-request seed inside a batch (the seed of the batch's
first request seeds the whole batch).
"""

from __future__ import annotations

import contextlib
import json
import queue
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

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

#: How long the generation thread waits for more requests to join a batch.
BATCH_WINDOW_S = 0.01


class ContextOverflow(PolicyUnavailable):
    """The prompt plus the reply budget does not fit the model's context window."""

    def __init__(self, message: str) -> None:
        super().__init__(message, kind="context")


class HFPolicy:
    """A transformers causal LM behind the Policy protocol."""

    def __init__(self, model_dir: str, config: PolicyConfig | None = None) -> None:
        import torch
        from transformers import AutoModelForCausalLM

        from repogym.train.tiny import load_tokenizer

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
        self._queue: queue.Queue[tuple[PolicyRequest, Future[AssistantTurn]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._serve_batches, name="hf-generate", daemon=True)
        self._thread.start()

    def _stop_token_ids(self) -> list[int]:
        ids = {self.tokenizer.eos_token_id, *(_as_list(self.model.generation_config.eos_token_id))}
        im_end = self.tokenizer.convert_tokens_to_ids("<|im_end|>")
        if isinstance(im_end, int) and im_end != self.tokenizer.unk_token_id:
            ids.add(im_end)
        return sorted(i for i in ids if isinstance(i, int))

    # -- Policy ------------------------------------------------------------------------------

    def act(self, request: PolicyRequest) -> AssistantTurn:
        future: Future[AssistantTurn] = Future()
        self._queue.put((request, future))
        return future.result()

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=10)

    # -- batching ----------------------------------------------------------------------------

    def _serve_batches(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < self.max_batch:
                try:
                    item = self._queue.get(timeout=BATCH_WINDOW_S)
                except queue.Empty:
                    break
                if item is None:
                    self._queue.put(None)  # finish this batch, then stop
                    break
                batch.append(item)
            for group in _by_sampling(batch):
                self._run_group(group)

    def _run_group(self, group: list[tuple[PolicyRequest, Future[AssistantTurn]]]) -> None:
        try:
            turns = self.generate([request for request, _ in group])
        except Exception as exc:  # one bad batch must not kill the thread every attempt waits on
            for _, future in group:
                future.set_exception(exc)
            return
        for (_, future), turn in zip(group, turns, strict=True):
            if isinstance(turn, Exception):
                future.set_exception(turn)
            else:
                future.set_result(turn)

    # -- generation --------------------------------------------------------------------------

    def render(self, request: PolicyRequest) -> str:
        """The prompt text: the chat template applied to the messages and tools."""
        return self.tokenizer.apply_chat_template(
            template_messages(request.messages),
            tools=request.tools or None,
            add_generation_prompt=True,
            tokenize=False,
        )

    def generate(self, requests: list[PolicyRequest]) -> list[AssistantTurn | Exception]:
        """One batched generate() for requests that share sampling settings."""
        import torch

        sampling = requests[0].sampling
        prompts = [self.render(request) for request in requests]
        encoded = [self.tokenizer(text, add_special_tokens=False)["input_ids"] for text in prompts]
        results: list[AssistantTurn | Exception] = []
        fits = []
        for ids in encoded:
            if len(ids) + sampling.max_tokens > self.max_positions:
                results.append(
                    ContextOverflow(
                        f"prompt of {len(ids)} tokens + max_tokens {sampling.max_tokens} exceeds the "
                        f"model's {self.max_positions} positions"
                    )
                )
            else:
                results.append(AssistantTurn())  # placeholder, filled below
                fits.append(len(results) - 1)
        if not fits:
            return results
        batch = self.tokenizer.pad({"input_ids": [encoded[i] for i in fits]}, return_tensors="pt").to(
            self.device
        )
        if sampling.seed is not None:
            torch.manual_seed(sampling.seed)
        with torch.inference_mode():
            output = self.model.generate(
                **batch, **_generate_kwargs(sampling), pad_token_id=self.tokenizer.pad_token_id,
                eos_token_id=self._stop_ids, output_scores=True, return_dict_in_generate=True,
            )  # fmt: skip
            scores = self.model.compute_transition_scores(
                output.sequences, output.scores, normalize_logits=True
            )
        prompt_len = batch["input_ids"].shape[1]
        for row, index in enumerate(fits):
            completion = output.sequences[row, prompt_len:].tolist()
            logprobs = scores[row].tolist()
            results[index] = self._turn(completion, logprobs, len(encoded[index]), sampling)
        return results

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


def _generate_kwargs(sampling: SamplingParams) -> dict[str, Any]:
    if sampling.temperature <= 0:
        return {"max_new_tokens": sampling.max_tokens, "do_sample": False}
    return {
        "max_new_tokens": sampling.max_tokens,
        "do_sample": True,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "top_k": 0,
    }


def _by_sampling(batch: list[tuple[PolicyRequest, Any]]) -> list[list[tuple[PolicyRequest, Any]]]:
    groups: dict[SamplingParams, list[tuple[PolicyRequest, Any]]] = {}
    for item in batch:
        groups.setdefault(item[0].sampling, []).append(item)
    return list(groups.values())


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


@policy_backends.register("hf")
def make_hf_policy(argument: str, config: PolicyConfig) -> HFPolicy:
    if not argument:
        raise ConfigError("--policy hf:PATH: give the model folder, e.g. hf:./checkpoints/tiny")
    return HFPolicy(argument, config)
