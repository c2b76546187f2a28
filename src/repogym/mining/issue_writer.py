"""Problem statements rewritten by a model, told not to reveal the fix, and checked that it did not.

`repogym mine --issue-writer openai:MODEL --base-url URL` sends each
candidate's cleaned message, test patch and gold patch (after secrets and
personal data were redacted) to an OpenAI-compatible endpoint and asks for a
bug report as a user would write it. A rewrite is kept only when it is not
empty and `leaks_fix` finds none of the gold patch's added lines in it; else
the cleaned message stays. Every outcome is counted in the funnel's flags and
recorded in `metadata.mining.statement_writer`: "kept", "rejected: quotes the
fix", "rejected: empty", or "failed: <why>" (the endpoint did not answer; the
run goes on).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from repogym.mining.funnel import MAX_EXAMPLES, FunnelFlag
from repogym.mining.statements import leaks_fix
from repogym.task import Task
from repogym.taskmeta import MiningRecord
from repogym.textmodel import ModelUnavailable, TextModel, TextSampling, make_text_model

SYSTEM_PROMPT = """You write GitHub issues for a bug tracker. Given a commit that fixed a bug (its message, the \
tests it added and the code change), write the issue a user would have filed BEFORE the fix existed: what they \
did, what they expected, what happened instead. Rules: never describe or hint at the fix; never quote, paraphrase \
or name the changed lines of the code change; you may quote the tests' inputs and expected results. Answer with \
the issue text only: a one-line title, a blank line, then the body."""
_MAX_PATCH_CHARS = 6000


@dataclass(frozen=True)
class StatementRequest:
    """What the writer is shown about one candidate."""

    message: str
    """The cleaned commit or PR message (or the linked issue's text)."""
    test_patch: str
    code_patch: str


class IssueWriter(Protocol):
    """Writes a problem statement; raises ModelUnavailable when its model cannot answer."""

    def write(self, request: StatementRequest) -> str: ...


@dataclass(frozen=True)
class PromptedIssueWriter:
    """An `IssueWriter` that asks a text model (`repogym.textmodel`) with `SYSTEM_PROMPT`."""

    model: TextModel

    def write(self, request: StatementRequest) -> str:
        user = (
            f"Commit message:\n{request.message}\n\nTests added with the fix:\n{request.test_patch[:_MAX_PATCH_CHARS]}"
            f"\n\nThe fix (do not reveal it):\n{request.code_patch[:_MAX_PATCH_CHARS]}"
        )
        return self.model.write(SYSTEM_PROMPT, user)


def make_issue_writer(spec: str, base_url: str = "", max_tokens: int = 512) -> IssueWriter:
    """The writer for 'openai:MODEL' (the only backend today)."""
    sampling = TextSampling(temperature=0.2, max_tokens=max_tokens, seed=0)
    return PromptedIssueWriter(
        make_text_model(
            spec, base_url, option="--issue-writer", sampling=sampling, max_retries=2, concurrency=8
        )
    )


def rewrite_statements(
    tasks: Iterable[Task], writer: IssueWriter
) -> tuple[tuple[Task, ...], list[FunnelFlag]]:
    """Each task with its statement rewritten where the rewrite passes the guard; flags count the outcomes."""
    outcomes: dict[str, list[str]] = {"kept": [], "quotes_fix": [], "empty": [], "failed": []}
    rewritten: list[Task] = []
    for task in tasks:
        request = StatementRequest(task.problem_statement, task.test_patch, task.patch)
        try:
            text = writer.write(request).strip()
        except ModelUnavailable as exc:
            text, verdict, outcome = "", f"failed: {exc}", "failed"
        else:
            if not text:
                verdict, outcome = "rejected: empty", "empty"
            elif leaks_fix(text, task.patch):
                verdict, outcome = "rejected: quotes the fix", "quotes_fix"
            else:
                verdict, outcome = "kept", "kept"
        outcomes[outcome].append(task.instance_id)
        mining = dataclasses.replace(MiningRecord.of(task), statement_writer=verdict)
        if outcome == "kept":
            mining = dataclasses.replace(mining, statement_source="writer")
            task = task.replace(problem_statement=text + "\n")
        rewritten.append(task.replace(metadata=mining.to_metadata(task.metadata)))
    descriptions = {
        "kept": "statements rewritten by the issue writer",
        "quotes_fix": "rewrites rejected for quoting the gold patch (the cleaned message kept)",
        "empty": "rewrites rejected for being empty (the cleaned message kept)",
        "failed": "statements the issue writer could not write (endpoint errors; the cleaned message kept)",
    }
    flags = [
        FunnelFlag(f"writer_{name}", descriptions[name], len(ids), tuple(ids[:MAX_EXAMPLES]))
        for name, ids in outcomes.items()
    ]
    return tuple(rewritten), flags
