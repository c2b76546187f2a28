"""SFT data: chat rows (`messages`, `tools`) from rollouts, gold demonstrations and commit data.

`repogym data sft SOURCES... --out sft.jsonl` reads each source by what it is:

- a rollout folder (or one of its `trajectories-*.jsonl` shards): rejection sampling, so only
  resolved attempts are kept, at most `max_per_task` per task;
- a task file (JSONL / JSON / parquet of tasks): gold demonstrations. Agentless (the default):
  the env's own observation (`repogym.env.agentless.build_observation`, so `context`, `window_lines`
  and `localize` give exactly the prompt the env shows) and SWE-RL's `<think>..</think>
  <solution>..</solution>` answer reproducing the gold patch (restricted to the windows in window
  mode). Agent: the scripted gold policy is rolled out in the sandbox (`repogym rollout --policy
  scripted:gold`) into `<out>.gold-agent/` and its resolved tool-call trajectories are used;
- any other JSONL whose rows have `messages` (e.g. `repogym data commits`): passed through.

Across all sources, rows that train the same tokens (same messages and tools) are kept once, and
rows longer than `max_chars` (or `max_tokens` with a tokenizer) are dropped. With `held_out` task
files, a row whose answer writes one of their fixed lines or fixed function bodies is dropped too
(`repogym.train.leakage`, one reason per guard). Every source's rows in, rows kept and rows dropped
per reason are recorded (`<out>.summary.json`).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from repogym.agent.backends.tokenizer import load_tokenizer
from repogym.agent.policies import PolicyConfig
from repogym.dataset import load_tasks
from repogym.errors import ConfigError, DatasetError
from repogym.files import read_jsonl_records, write_json, write_jsonl
from repogym.rollout.run import RolloutConfig, run_rollout
from repogym.train.chat_rows import make_row, row_digest, unusable_reason
from repogym.train.gold import agentless_gold_rows
from repogym.train.leakage import Guard, LeakageGuard

SourceKind = Literal["rollout", "tasks", "chat"]


@dataclass(frozen=True)
class SFTDataOptions:
    """How sources become rows (the CLI's options)."""

    gold: Literal["agentless", "agent"] = "agentless"
    """What a task file gives: SWE-RL answers (agentless) or scripted-gold tool-call trajectories (agent)."""
    context: Literal["files", "window"] = "files"
    """Agentless demonstrations: the env's context option (whole files, or windows)."""
    window_lines: int = 3
    localize: str = "oracle"
    answer_format: Literal["search_replace", "lines"] = "search_replace"
    """Agentless window demonstrations: SWE-RL's blocks, or the suspicious lines rewritten (the env's option)."""
    prompt_style: Literal["full", "compact"] = "full"
    """Agentless window demonstrations: the env's `prompt_style` (the issue shown, or left out)."""
    max_chars: int = 32_000
    """Longest row (characters of all message texts and tool arguments)."""
    max_tokens: int | None = None
    """Longest row in tokens of `tokenizer`'s chat template (None: only max_chars applies)."""
    tokenizer: str | None = None
    """A model folder whose tokenizer counts tokens for max_tokens."""
    max_per_task: int | None = None
    """Rollouts: at most this many resolved attempts per task (None: all)."""
    repos_dir: str | None = None
    sandbox: str = "bwrap"
    jobs: int = 1
    """Agent-mode gold rollouts (and env-built prompts) at once."""
    held_out: tuple[str, ...] = ()
    """Task files never to train on: a row whose answer writes what one of their fixes writes is dropped."""


@dataclass
class SourceReport:
    source: str
    kind: SourceKind
    rows_in: int = 0
    kept: int = 0
    dropped: Counter[str] = field(default_factory=Counter)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["dropped"] = dict(self.dropped)
        return data


@dataclass
class SFTData:
    rows: list[dict[str, Any]] = field(default_factory=list)
    reports: list[SourceReport] = field(default_factory=list)
    guarded: dict[str, int] | None = None
    """What the leakage guard held (`LeakageGuard.describe`); None without `held_out` task files."""

    def summary(self) -> dict[str, Any]:
        summary: dict[str, Any] = {"rows": len(self.rows), "sources": [r.to_dict() for r in self.reports]}
        if self.guarded is not None:
            summary["guarded"] = self.guarded
        return summary


def detect_kind(path: Path) -> SourceKind:
    """What a source is: a rollout folder or shard, a task file, or chat rows."""
    if path.is_dir():
        if not any(path.glob("trajectories-*.jsonl")):
            raise ConfigError(f"{path}: a folder, but not a rollout folder (no trajectories-*.jsonl in it)")
        return "rollout"
    if not path.is_file():
        raise ConfigError(f"{path}: no such file or folder")
    if path.suffix in (".json", ".parquet"):
        return "tasks"
    first = next(read_jsonl_records(path), None)
    if first is None:
        raise ConfigError(f"{path}: empty, or not JSONL")
    if "messages" in first:
        return "rollout" if {"outcome", "attempt", "policy_id"} <= set(first) else "chat"
    if {"instance_id", "patch"} <= set(first):
        return "tasks"
    raise ConfigError(
        f"{path}: rows are neither trajectories, chat rows (`messages`) nor tasks (`instance_id`, `patch`)"
    )


def build_sft_data(
    sources: list[str | os.PathLike[str]],
    options: SFTDataOptions,
    out: str | os.PathLike[str],
    on_row: Callable[[str], None] | None = None,
) -> SFTData:
    """Rows from every source, deduplicated and capped, with a report per source."""
    if not sources:
        raise ConfigError("SOURCES: give at least one rollout folder, task file or chat-row JSONL")
    counter = _length_counter(options)
    guard = _leakage_guard(options)
    data, seen = SFTData(guarded=guard.describe() if guard else None), set()
    for source in sources:
        path = Path(source)
        kind = detect_kind(path)
        report = SourceReport(str(path), kind)
        if guard is not None:
            report.dropped.update(dict.fromkeys(Guard, 0))  # each guard named, so a summary shows it ran
        for row, reason in _source_rows(path, kind, options, Path(out)):
            report.rows_in += 1
            if on_row is not None:
                on_row(str(path))
            if reason is None:
                reason = unusable_reason(row["messages"]) or counter(row)
            if reason is None and guard is not None:
                reason = guard.check_row(row)
            if reason is None:
                digest = row_digest(row)
                reason = "duplicate" if digest in seen else None
                seen.add(digest)
            if reason is not None:
                report.dropped[reason] += 1
                continue
            report.kept += 1
            data.rows.append(row)
        data.reports.append(report)
    return data


def write_sft_data(data: SFTData, out: str | os.PathLike[str]) -> Path:
    """The rows as JSONL and the per-source report as `<out>.summary.json` beside it."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(out, data.rows)
    summary = out.with_name(out.name + ".summary.json")
    write_json(summary, data.summary())
    return summary


# -- sources --------------------------------------------------------------------------------------

Yielded = Iterator[tuple[dict[str, Any], str | None]]


def _source_rows(path: Path, kind: SourceKind, options: SFTDataOptions, out: Path) -> Yielded:
    if kind == "rollout":
        yield from rollout_rows(path, options.max_per_task)
    elif kind == "chat":
        yield from chat_rows(path)
    elif options.gold == "agent":
        yield from rollout_rows(gold_agent_rollout(path, options, out), options.max_per_task, "gold-agent")
    else:
        yield from agentless_gold_rows(path, options)


def rollout_rows(path: Path, max_per_task: int | None = None, label: str = "rollout") -> Yielded:
    """Resolved trajectories as rows (rejection sampling); everything else is dropped with its reason."""
    shards = sorted(path.glob("trajectories-*.jsonl")) if path.is_dir() else [path]
    per_task: Counter[str] = Counter()
    for shard in shards:
        for number, record in enumerate(read_jsonl_records(shard), start=1):
            messages, instance_id = record.get("messages"), str(record.get("instance_id", ""))
            if not isinstance(messages, list):
                raise DatasetError(f"{shard}:{number}: a trajectory row without a `messages` list")
            row = make_row(
                [m for m in messages if isinstance(m, dict)], record.get("tools") or [],
                source=label, instance_id=instance_id, policy_id=record.get("policy_id", ""),
            )  # fmt: skip
            if not record.get("resolved"):
                yield row, "not resolved"
            elif max_per_task is not None and per_task[instance_id] >= max_per_task:
                yield row, f"over max_per_task ({max_per_task})"
            else:
                per_task[instance_id] += 1
                yield row, None


def chat_rows(path: Path) -> Yielded:
    """Rows that already are chat rows (commit data, hand-written demonstrations)."""
    for record in read_jsonl_records(path):
        messages = record.get("messages")
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            yield {"messages": []}, "no messages"
            continue
        extra = {k: v for k, v in record.items() if k not in ("messages", "tools")}
        extra.setdefault("source", "chat")
        yield make_row(messages, record.get("tools") or [], **extra), None


def gold_agent_rollout(tasks: Path, options: SFTDataOptions, out: Path) -> Path:
    """Roll the scripted gold policy out on `tasks` (agent mode, in the sandbox) into `<out>.gold-agent/`."""

    folder = out.with_name(out.name + ".gold-agent")
    config = RolloutConfig(
        tasks=str(tasks), policy=PolicyConfig(spec="scripted:gold"), out=str(folder), n=1,
        jobs=options.jobs, sandbox=options.sandbox, repos_dir=options.repos_dir,
    )  # fmt: skip
    run_rollout(config)
    return folder


def _leakage_guard(options: SFTDataOptions) -> LeakageGuard | None:
    """The guard of the `held_out` task files' fixes (None when there are none)."""
    if not options.held_out:
        return None
    tasks = (task for path in options.held_out for task in load_tasks(path))
    return LeakageGuard.from_tasks(tasks, options.repos_dir)


def _length_counter(options: SFTDataOptions) -> Callable[[dict[str, Any]], str | None]:
    """A check returning why a row is too long (None when it fits)."""
    tokenizer = None
    if options.max_tokens is not None:
        if options.tokenizer is None:
            raise ConfigError(
                "--max-tokens needs --tokenizer MODEL_DIR (whose chat template counts the tokens)"
            )

        tokenizer = load_tokenizer(options.tokenizer)

    def too_long(row: dict[str, Any]) -> str | None:
        chars = sum(
            len(m["content"]) + sum(len(c["function"]["arguments"]) for c in m["tool_calls"] or [])
            for m in row["messages"]
        )
        if chars > options.max_chars:
            return f"longer than max_chars ({options.max_chars})"
        if tokenizer is not None and options.max_tokens is not None:
            ids = tokenizer.apply_chat_template(row["messages"], tools=row["tools"] or None, tokenize=True)
            ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
            if len(ids) > options.max_tokens:
                return f"longer than max_tokens ({options.max_tokens})"
        return None

    return too_long


def read_summary(out: str | os.PathLike[str]) -> dict[str, Any]:
    return json.loads(Path(str(out) + ".summary.json").read_text())
