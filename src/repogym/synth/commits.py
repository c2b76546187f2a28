"""`commit_rows`: CommitPackFT-style SFT rows from a repository's history, through the miner and the privacy stage.

Each surviving commit becomes one row: `messages` = [the commit message as the instruction with the
pre-image of the changed code as context, then the answer: the diff, or the new code]. The commits are the
miner's candidates (`repogym.mining.mine`: bots, reverts, docs-only, lock-only, vendored and too-large
changes dropped, duplicates once, secrets and personal data redacted) without its "changes a test" rule,
then merges are left out and the privacy stage (`repogym.privacy.scrub_tasks`: secrets, personal data, the
licence allowlist) drops what it must. The funnel accounts for every commit scanned.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from repogym.files import write_json, write_jsonl
from repogym.hostgit import git
from repogym.mining.config import MiningConfig
from repogym.mining.funnel import MAX_EXAMPLES, Funnel, FunnelStep
from repogym.mining.mine import mine
from repogym.patches import apply_patch, parse_patch
from repogym.privacy import ScrubConfig, scrub_tasks
from repogym.task import Task
from repogym.taskmeta import MiningRecord

#: Files longer than this show only the hunks' neighbourhoods as context (or as the new code).
WHOLE_FILE_LINES = 200
NEIGHBOURHOOD = 20
MIN_MESSAGE_WORDS = 2

Answer = Literal["diff", "new"]


@dataclass(frozen=True)
class CommitData:
    rows: tuple[dict[str, Any], ...]
    funnel: Funnel


def commit_rows(
    repo: str | os.PathLike[str],
    mining: MiningConfig | None = None,
    scrub: ScrubConfig | None = None,
    answer: Answer = "diff",
) -> CommitData:
    """Rows for every commit that survives mining, the merge rule and the privacy stage."""
    config = mining or MiningConfig()
    config = config.model_copy(update={"skip_filters": sorted({*config.skip_filters, "no_test_change"})})
    mined = mine(repo, config)
    root = Path(repo).resolve()
    merges = [t for t in mined.tasks if MiningRecord.of(t).kind in ("merge", "pr_merge")]
    merge_ids = {t.instance_id for t in merges}
    terse = [
        t
        for t in mined.tasks
        if t.instance_id not in merge_ids and len(t.problem_statement.split()) < MIN_MESSAGE_WORDS
    ]
    dropped_ids = merge_ids | {t.instance_id for t in terse}
    kept = [t for t in mined.tasks if t.instance_id not in dropped_ids]
    scrubbed = scrub_tasks(kept, scrub or ScrubConfig())
    rows = tuple(_row(task, root, answer) for task in scrubbed.tasks)
    steps = [
        _step("merge", "commit data", "a merge (its branch's commits are the change)", merges),
        _step(
            "message_too_short", "commit data", f"a message of fewer than {MIN_MESSAGE_WORDS} words", terse
        ),
    ]
    by_code: dict[str, list[str]] = {}
    for dropped in scrubbed.dropped:
        by_code.setdefault(dropped.reasons[0].code.value, []).append(dropped.instance_id)
    steps += [
        FunnelStep(
            code, "privacy", f"dropped by the privacy stage ({code})", len(ids), tuple(ids[:MAX_EXAMPLES])
        )
        for code, ids in sorted(by_code.items())
    ]
    funnel = mined.funnel.extend(steps, len(rows), (row["instance_id"] for row in rows))
    return CommitData(rows, funnel)


def _step(name: str, stage: str, description: str, tasks: list[Task]) -> FunnelStep:
    return FunnelStep(
        name, stage, description, len(tasks), tuple(t.instance_id for t in tasks[:MAX_EXAMPLES])
    )


def _row(task: Task, root: Path, answer: Answer) -> dict[str, Any]:
    diff = task.patch + task.test_patch
    before = _pre_images(root, task.base_commit, diff)
    context = "\n\n".join(
        f"# {path}\n{_excerpt(text, diff, path, 'source')}" for path, text in before.items()
    )
    instruction = task.problem_statement.strip()
    user = f"{instruction}\n\n{context}" if context else instruction
    if answer == "new":
        after = apply_patch(diff, before, partial=True)
        body = "\n\n".join(
            f"# {path}\n{_excerpt(text or '', diff, path, 'target')}" for path, text in after.items()
        )
    else:
        body = diff
    return {
        "instance_id": task.instance_id,
        "repo": task.repo,
        "commit": MiningRecord.of(task).commit,
        "parent": task.base_commit,
        "license": task.license,
        "created_at": task.created_at,
        "files": sorted(before) or [p.path for p in parse_patch(diff) or []],
        "messages": [{"role": "user", "content": user}, {"role": "assistant", "content": body}],
    }


def _pre_images(root: Path, commit: str, diff: str) -> dict[str, str]:
    texts = {}
    for patched in parse_patch(diff) or []:
        if patched.is_added_file or patched.is_binary_file:
            continue
        source = patched.source_file[2:] if patched.source_file.startswith("a/") else patched.path
        texts[patched.path] = git(root, "show", f"{commit}:{source}")
    return texts


def _excerpt(text: str, diff: str, path: str, side: Literal["source", "target"]) -> str:
    """The whole file when short, else the lines around its hunks (with `...` between)."""
    lines = text.splitlines()
    if len(lines) <= WHOLE_FILE_LINES:
        return text
    keep: set[int] = set()
    for patched in parse_patch(diff) or []:
        if patched.path != path:
            continue
        for hunk in patched:
            start = hunk.source_start if side == "source" else hunk.target_start
            length = hunk.source_length if side == "source" else hunk.target_length
            keep |= set(range(max(start - NEIGHBOURHOOD, 1), start + length + NEIGHBOURHOOD))
    out, previous = [], 0
    for number in sorted(n for n in keep if n <= len(lines)):
        if number != previous + 1:
            out.append("...")
        out.append(lines[number - 1])
        previous = number
    return "\n".join(out)


def write_commit_data(
    data: CommitData, out: str | os.PathLike[str], funnel_path: str | os.PathLike[str] | None = None
) -> int:
    count = write_jsonl(out, list(data.rows))
    if funnel_path is not None:
        write_json(funnel_path, data.funnel.to_dict())
    return count
