"""An LLM behind an OpenAI-compatible endpoint writes issue-style problem statements for synthetic tasks.

`openai:MODEL` with `--base-url URL` (vLLM, `repogym serve`, a hosted API): the model sees the failing tests'
names, their source and their output (the default statement), never the patch, and is told not to say how
to fix the bug. Whatever it writes is still checked by `repogym.validate.statement.reveals_fix`; a text that
quotes the fix, or one too short to be a statement, is refused and the default kept.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from repogym import pysyntax
from repogym.hostgit import git
from repogym.task import Task
from repogym.textmodel import TextModel, TextSampling, make_text_model

SYSTEM_PROMPT = (
    "You write GitHub issues for a Python project. From the failing tests and their output, describe what a "
    "user of the code sees go wrong: what was called, what was expected, what happened instead. Do not say "
    "how to fix it, do not guess which line or operator is wrong, and do not write any code of a fix. "
    "Answer with the issue's text only."
)
MAX_TEST_SOURCE_CHARS = 2000


@dataclass(frozen=True)
class SyntheticIssueWriter:
    """A `repogym.validate.statement.StatementWriter` that asks a text model with `SYSTEM_PROMPT`."""

    model: TextModel

    @property
    def name(self) -> str:
        return self.model.name

    def write(self, task: Task, default: str) -> str:
        user = (
            f"Repository: {task.repo}\n\nFailing tests and their output:\n\n{default}\n"
            f"Source of the failing tests:\n\n{failing_test_source(task)}\n\nWrite the issue."
        )
        return self.model.write(SYSTEM_PROMPT, user)


def make_issue_writer(spec: str, base_url: str, max_tokens: int = 400) -> SyntheticIssueWriter:
    """`openai:MODEL` -> a writer; anything else is a ConfigError naming what is supported."""
    sampling = TextSampling(temperature=0.7, max_tokens=max_tokens, seed=0)
    return SyntheticIssueWriter(
        make_text_model(
            spec, base_url, option="--issue-writer", sampling=sampling, max_retries=2, concurrency=2
        )
    )


def failing_test_source(task: Task, limit: int = 2) -> str:
    """The source of the first failing tests, read from the task's repository at its base commit."""
    chunks = []
    if not task.repo_source or not Path(task.repo_source).is_dir():
        return "(not available)"
    for test_id in task.FAIL_TO_PASS[:limit]:
        path, _, rest = test_id.partition("::")
        name = rest.split("::")[-1].split("[")[0]
        try:
            text = git(task.repo_source, "show", f"{task.base_commit}:{path}")
            tree = pysyntax.parse(text)
        except Exception:  # an unreadable test file only costs the model some context
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
                segment = ast.get_source_segment(text, node) or ""
                chunks.append(f"# {path}\n{segment[:MAX_TEST_SOURCE_CHARS]}")
                break
    return "\n\n".join(chunks) or "(not available)"
