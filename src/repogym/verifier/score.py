"""Scoring attempts with a verifier: p(YES) = the softmax over the YES and NO answer tokens' logits at the
answer position (right after the prompt, where training put the answer).

`score_attempts(verifier, [(task, diff), ...])` is the call a best-of-n selection makes (one score per pair, in
order); `repogym verify` scores stored attempts through `score_prompts`. A verifier is any causal-LM folder
with a tokenizer and a chat template; `repogym train verifier`'s folders also carry a manifest, whose prompt
settings (trajectory shown or not, length) scoring follows so that it sees what training saw.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repogym.errors import ConfigError
from repogym.task import Task
from repogym.train.sft import chat_model
from repogym.verifier.data import Attempt, answer_token_ids, prompt_messages
from repogym.verifier.train import MANIFEST_FILE

DEFAULT_MAX_LENGTH = 2048


@dataclass(frozen=True)
class Verifier:
    """A loaded verifier: the model in eval mode, its tokenizer, the two answer tokens, its manifest."""

    folder: Path
    model: Any
    """The causal LM in eval mode (None from `check_verifier_folder`, which loads no weights)."""
    tokenizer: Any
    yes_id: int
    no_id: int
    manifest: dict[str, Any] = field(default_factory=dict)
    """repogym_verifier.json ({} for a folder trained elsewhere)."""

    @property
    def include_trajectory(self) -> bool:
        return bool(self.manifest.get("prompt", {}).get("include_trajectory", False))

    @property
    def max_length(self) -> int:
        return int(self.manifest.get("prompt", {}).get("max_length", DEFAULT_MAX_LENGTH))

    @property
    def training_tasks(self) -> frozenset[str]:
        return frozenset(self.manifest.get("split", {}).get("train", []))


def load_verifier(path: str | os.PathLike[str], key: str = "--verifier") -> Verifier:
    """The verifier in `path`, checked (`check_verifier_folder`) before loading the weights."""
    import torch
    from transformers import AutoModelForCausalLM

    checked = check_verifier_folder(path, key)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = AutoModelForCausalLM.from_pretrained(checked.folder).to(device).eval()
    return dataclasses.replace(checked, model=model)


def check_verifier_folder(path: str | os.PathLike[str], key: str = "--verifier") -> Verifier:
    """The verifier in `path` without its weights (model None): a causal-LM folder with its tokenizer, a chat
    template and distinct answer tokens, or a ConfigError naming `key` and what is missing. What
    `repogym config check` runs on `reward.verifier.path`, so a bad folder fails before any training starts."""
    folder, tokenizer = chat_model(
        os.fspath(path), key=key,
        fix="train it with `repogym train verifier` (which saves the template), or add the chat template of its "
        "base model to its tokenizer_config.json",
    )  # fmt: skip
    try:
        yes_id, no_id = answer_token_ids(tokenizer)
    except ConfigError as exc:
        raise ConfigError(f"{key}: {folder}: {exc}") from None
    return Verifier(folder, None, tokenizer, yes_id, no_id, _manifest(folder))


def check_diff_verifier(verifier: Verifier, key: str) -> Verifier:
    """`verifier`, or a ConfigError naming `key` when it was trained on attempts' turns as well as their diffs:
    a candidate diff alone (best-of-n, a training reward) is not what it learnt to read."""
    if verifier.include_trajectory:
        raise ConfigError(
            f"{key}: {verifier.folder} was trained on attempts' turns as well as their diffs (--include-trajectory), "
            "so it cannot score a diff alone; train one without --include-trajectory"
        )
    return verifier


def diff_scorer(
    path: str | os.PathLike[str], key: str, batch_size: int | None = None
) -> Callable[[Sequence[tuple[Task, str]]], list[float]]:
    """The verifier in `path`, loaded once, as the function that scores (task, final diff) pairs: what GRPO's
    `reward.verifier` term calls with a batch's test-free completions. `batch_size` None scores each call's pairs
    in one forward pass.

    A diff the verifier's prompt cannot hold whole (it keeps the head and cuts the tail) scores 0.0 unasked: as a
    reward, approval is earned only for a diff the verifier read to its end; otherwise a policy could put past the
    cut whatever it likes."""
    verifier = check_diff_verifier(load_verifier(path, key), key)

    def score(pairs: Sequence[tuple[Task, str]]) -> list[float]:
        whole = [reads_whole(verifier, task, diff) for task, diff in pairs]
        read = [pair for pair, fits in zip(pairs, whole, strict=True) if fits]
        scores = iter(score_attempts(verifier, read, batch_size or max(1, len(read))) if read else [])
        return [next(scores) if fits else 0.0 for fits in whole]

    return score


def reads_whole(verifier: Verifier, task: Task, diff: str) -> bool:
    """Whether the verifier's prompt for (task, diff) holds the whole diff (`prompt_messages` cuts the longest
    section's tail to fit the verifier's max_length; a long issue is cut first, and does not count here)."""
    attempt = Attempt(instance_id=task.instance_id, attempt=0, folder="", problem_statement=task.problem_statement,
                      diff=diff, resolved=False)  # fmt: skip
    user = prompt_messages(attempt, verifier.tokenizer, verifier.max_length)[-1]["content"]
    return f"```diff\n{diff}\n```" in user


def _manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST_FILE
    if not path.exists():
        return {}
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: not readable JSON: {exc}") from None
    if not isinstance(manifest, dict):
        raise ConfigError(f"{path}: must hold a JSON object")
    return manifest


def score_attempts(verifier: Verifier, pairs: Sequence[tuple[Task, str]], batch_size: int = 8) -> list[float]:
    """p(YES) for each (task, final diff) pair, in order: what a best-of-n selection ranks a task's attempts by."""
    if verifier.include_trajectory:
        raise ConfigError(
            f"{verifier.folder}: this verifier was trained on attempts' turns as well as their diffs; score "
            "stored attempts (repogym verify), which carry their turns"
        )
    attempts = [
        Attempt(instance_id=task.instance_id, attempt=index, folder="", problem_statement=task.problem_statement,
                diff=diff, resolved=False)
        for index, (task, diff) in enumerate(pairs)
    ]  # fmt: skip
    return score_prompts(verifier, attempts, batch_size)


def score_prompts(
    verifier: Verifier, attempts: Sequence[Attempt], batch_size: int = 8,
    progress: Callable[[int, int], None] | None = None,
) -> list[float]:  # fmt: skip
    """p(YES) for each attempt, shown as training showed attempts (their labels are not read); `progress`
    hears (scored, total) after each batch."""
    import torch

    tokenizer = verifier.tokenizer
    tokenizer.padding_side = "left"  # the answer position is then the last column of every row
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    scores: list[float] = []
    for start in range(0, len(attempts), batch_size):
        texts = [
            tokenizer.apply_chat_template(
                prompt_messages(attempt, tokenizer, verifier.max_length),
                tokenize=False,
                add_generation_prompt=True,
            )
            for attempt in attempts[start : start + batch_size]
        ]
        batch = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        mask = batch["attention_mask"].to(verifier.model.device)
        positions = (mask.cumsum(dim=1) - 1).clamp(min=0)  # as generate() numbers left-padded rows
        with torch.no_grad():
            output = verifier.model(
                input_ids=batch["input_ids"].to(mask.device), attention_mask=mask, position_ids=positions
            )
        logits = output.logits[:, -1, :]
        pair = torch.stack([logits[:, verifier.yes_id], logits[:, verifier.no_id]], dim=1).float()
        scores.extend(torch.softmax(pair, dim=1)[:, 0].tolist())
        if progress is not None:
            progress(len(scores), len(attempts))
    return scores
