"""What a verifier learns from: graded attempts read from rollout folders, the prompt that shows one, the
balance between resolved and unresolved rows, and the split by task.

An attempt is one stored trajectory whose patch was graded (an attempt that never reached grading, such as an
endpoint that was down, says nothing about its diff and is counted, not used). Its label is the grade's
`resolved`. The task's problem statement comes from the task file the rollout recorded in its `run.json`.

Guarantees: the same folders, seed and share give the same split and the same balanced rows; no task is on
both sides of a split; the prompt fits the length it is given (the longest section is cut first, marked).
Not guaranteed: that a drawn split holds both labels on the held-out side (few tasks may not allow it).
"""

from __future__ import annotations

import json
import math
import os
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repogym.agent.trajectory import GRADED_OUTCOMES, Trajectory
from repogym.dataset import load_tasks
from repogym.errors import ConfigError, DatasetError
from repogym.rollout.store import LEDGER, load_trajectories

YES, NO = "YES", "NO"
SYSTEM_PROMPT = (
    "You review attempts at fixing an issue in a repository. Read the issue and the attempt's final diff, then "
    f"answer {YES} if the attempt resolves the issue (the repository's tests for it pass) or {NO} if it does not."
)
QUESTION = f"Does this attempt resolve the issue? Answer {YES} or {NO}."
CUT_MARK = "\n[... cut to fit the verifier's context ...]\n"
#: Tokens kept free after the prompt: the answer and its end-of-turn token.
ANSWER_ROOM = 8


@dataclass(frozen=True)
class Attempt:
    """One graded attempt as the verifier sees it."""

    instance_id: str
    attempt: int
    folder: str
    """The rollout folder it was read from (two folders may hold the same task and attempt number)."""
    problem_statement: str
    diff: str
    """The attempt's final patch ('' when it changed nothing)."""
    resolved: bool
    trajectory: str = ""
    """The attempt's turns as text, when the verifier reads them (off by default)."""


@dataclass(frozen=True)
class TaskSplit:
    """Task ids on each side: the verifier trains on `train` and is measured on `heldout`."""

    train: tuple[str, ...]
    heldout: tuple[str, ...]

    def to_dict(self) -> dict[str, list[str]]:
        return {"train": list(self.train), "heldout": list(self.heldout)}


def store_folder(path: str | os.PathLike[str]) -> Path:
    """The trajectory store of a rollout folder, or of an eval folder (its `rollout/`)."""
    folder = Path(path)
    for candidate in (folder, folder / "rollout"):
        if any(candidate.glob("trajectories-*.jsonl")) or (candidate / LEDGER).is_file():
            return candidate
    raise ConfigError(
        f"{folder}: not a rollout folder (no trajectories-*.jsonl, here or in rollout/); give the --out folder of "
        "`repogym rollout` or `repogym eval`"
    )


def read_attempts(
    folders: Iterable[str | os.PathLike[str]], include_trajectory: bool = False
) -> list[Attempt]:
    """Every graded attempt stored in `folders`, in folder then store order."""
    attempts: list[Attempt] = []
    for given in folders:
        store = store_folder(given)
        statements = _problem_statements(store)
        for trajectory in load_trajectories(store):
            if trajectory.outcome not in GRADED_OUTCOMES:
                continue
            if trajectory.instance_id not in statements:
                raise DatasetError(
                    f"{store}: attempt {trajectory.attempt} of {trajectory.instance_id!r} is on a task that the "
                    f"rollout's task file ({_tasks_file(store)}) does not hold"
                )
            attempts.append(Attempt(
                instance_id=trajectory.instance_id, attempt=trajectory.attempt, folder=os.fspath(given),
                problem_statement=statements[trajectory.instance_id], diff=trajectory.final_patch,
                resolved=trajectory.resolved, trajectory=trajectory_text(trajectory) if include_trajectory else "",
            ))  # fmt: skip
    return attempts


def _tasks_file(store: Path) -> str:
    path = store / "run.json"
    try:
        tasks = json.loads(path.read_text(encoding="utf-8"))["tasks"]
    except (OSError, ValueError, KeyError, TypeError):
        raise ConfigError(f"{path}: missing or unreadable, so the rollout's task file is unknown") from None
    return str(tasks)


def _problem_statements(store: Path) -> dict[str, str]:
    tasks_file = _tasks_file(store)
    if not Path(tasks_file).is_file():
        raise ConfigError(
            f"{store / 'run.json'}: its task file {tasks_file} does not exist (a relative path is read from the "
            "current folder: run from where the rollout ran)"
        )
    return {task.instance_id: task.problem_statement for task in load_tasks(tasks_file)}


def trajectory_text(trajectory: Trajectory) -> str:
    """The attempt's turns after the task prompt, one block per message (tool calls as name(arguments))."""
    blocks = []
    for message in trajectory.messages:
        role = message.get("role")
        if role in ("system", "user") and not blocks:
            continue  # the task prompt: the issue is shown on its own
        text = str(message.get("content") or "")
        for call in message.get("tool_calls") or []:
            function = call.get("function") or call
            text += f"\n{function.get('name')}({function.get('arguments')})"
        blocks.append(f"[{role}]\n{text.strip()}")
    return "\n\n".join(blocks)


def check_both_labels(attempts: Sequence[Attempt], where: str) -> None:
    """A verifier learns from both kinds of attempt: a ConfigError naming what is missing and where."""
    resolved = sum(attempt.resolved for attempt in attempts)
    if resolved == 0 or resolved == len(attempts):
        missing = "resolved" if resolved == 0 else "unresolved"
        raise ConfigError(
            f"{where}: no {missing} attempt among {len(attempts)} graded one(s); a verifier needs both (add a "
            f"rollout with {missing} attempts, e.g. `--policy scripted:gold` for resolved ones)"
        )


# -- the split --------------------------------------------------------------------------------------------------


def draw_split(task_ids: Iterable[str], heldout_share: float, seed: int) -> TaskSplit:
    """Tasks shuffled with `seed`; the first `heldout_share` of them (at least one when the share is above 0)
    held out.

    >>> draw_split(["a", "b", "c", "d"], 0.5, seed=0)
    TaskSplit(train=('b', 'd'), heldout=('a', 'c'))
    """
    if not 0.0 <= heldout_share < 1.0:
        raise ConfigError(f"--heldout-share {heldout_share}: must be at least 0 and below 1")
    ids = sorted(set(task_ids))
    random.Random(seed).shuffle(ids)
    count = min(len(ids) - 1, max(1, round(heldout_share * len(ids)))) if heldout_share > 0 else 0
    return TaskSplit(train=tuple(sorted(ids[count:])), heldout=tuple(sorted(ids[:count])))


def read_split(path: str | os.PathLike[str]) -> TaskSplit:
    """A split given by the user: a JSON object with `train` and `heldout` lists of instance ids (a verifier's
    manifest, whose `split` holds one, works too); a task on both sides is an error."""
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"--split {file}: no such file") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--split {file}: not a JSON file: {exc}") from None
    if isinstance(data, Mapping) and isinstance(data.get("split"), Mapping):
        data = data["split"]
    sides = {}
    for side in ("train", "heldout"):
        ids = data.get(side) if isinstance(data, Mapping) else None
        if not isinstance(ids, list) or not all(isinstance(item, str) for item in ids):
            raise ConfigError(f"--split {file}: `{side}` must be a list of instance ids")
        sides[side] = ids
    both = sorted(set(sides["train"]) & set(sides["heldout"]))
    if both:
        shown = ", ".join(both[:5]) + (f" and {len(both) - 5} more" if len(both) > 5 else "")
        raise ConfigError(
            f"--split {file}: {len(both)} task(s) on both sides ({shown}); a task is either trained on or held out"
        )
    return TaskSplit(train=tuple(sides["train"]), heldout=tuple(sides["heldout"]))


def balance(attempts: Sequence[Attempt], seed: int) -> list[Attempt]:
    """As many unresolved as resolved attempts: the larger side downsampled with `seed`, order kept.

    More negatives than positives made SWE-Gym's verifier too conservative (it learnt to say NO).
    """
    resolved = [index for index, attempt in enumerate(attempts) if attempt.resolved]
    unresolved = [index for index, attempt in enumerate(attempts) if not attempt.resolved]
    smaller, larger = sorted((resolved, unresolved), key=len)
    kept = set(smaller) | set(random.Random(seed).sample(larger, len(smaller)))
    return [attempt for index, attempt in enumerate(attempts) if index in kept]


def label_counts(attempts: Sequence[Attempt]) -> dict[str, int]:
    resolved = sum(attempt.resolved for attempt in attempts)
    return {"resolved": resolved, "unresolved": len(attempts) - resolved}


# -- the prompt -------------------------------------------------------------------------------------------------


def _user_text(sections: Mapping[str, str]) -> str:
    parts = [f"## Issue\n{sections['issue']}"]
    if sections.get("trajectory"):
        parts.append(f"## The attempt's turns\n{sections['trajectory']}")
    parts.append(f"## The attempt's final diff\n```diff\n{sections['diff'] or '(no change)'}\n```")
    parts.append(QUESTION)
    return "\n\n".join(parts)


def prompt_messages(attempt: Attempt, tokenizer: Any, max_tokens: int) -> list[dict[str, str]]:
    """The chat prompt for `attempt`, cut to leave room for the answer within `max_tokens`: the longest of
    issue, turns and diff loses its tail first, until the rendered prompt fits."""
    sections = {"issue": attempt.problem_statement, "trajectory": attempt.trajectory, "diff": attempt.diff}
    budget = max_tokens - ANSWER_ROOM
    while True:
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": _user_text(sections)},
        ]
        length = len(_ids(tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)))
        longest = max(sections, key=lambda name: len(sections[name]))
        if length <= budget or len(sections[longest]) <= len(CUT_MARK):
            if length > budget:
                raise ConfigError(
                    f"--max-length {max_tokens}: too short for the prompt's fixed text ({length} tokens); raise it"
                )
            return messages
        keep = max(0, math.floor(len(sections[longest]) * min(0.9, budget / length)) - len(CUT_MARK))
        sections[longest] = sections[longest][:keep] + CUT_MARK


def answer_messages(attempt: Attempt) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": YES if attempt.resolved else NO}]


def answer_token_ids(tokenizer: Any) -> tuple[int, int]:
    """The first token of YES and of NO as the chat template renders them after a prompt (what the trainer
    learns at the answer position); the two must differ, or no score can tell them apart."""
    prompt = [{"role": "user", "content": QUESTION}]
    start = _ids(tokenizer.apply_chat_template(prompt, tokenize=True, add_generation_prompt=True))
    found = []
    for answer in (YES, NO):
        full = _ids(
            tokenizer.apply_chat_template([*prompt, {"role": "assistant", "content": answer}], tokenize=True)
        )
        shared = next((i for i, (a, b) in enumerate(zip(start, full, strict=False)) if a != b), len(start))
        if shared >= len(full):
            raise ConfigError(f"the chat template renders no token for the answer {answer!r}")
        found.append(int(full[shared]))
    if found[0] == found[1]:
        raise ConfigError(
            f"the tokenizer starts {YES!r} and {NO!r} with the same token; they cannot be scored apart"
        )
    return found[0], found[1]


def _ids(encoded: Any) -> list[int]:
    """Token ids from apply_chat_template (a BatchEncoding in transformers 5, a list before)."""
    return list(encoded["input_ids"] if hasattr(encoded, "keys") else encoded)
