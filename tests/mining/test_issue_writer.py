"""--issue-writer: statements rewritten by an OpenAI-compatible endpoint, behind the never-reveal guard."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from repogym.mining import MiningConfig, mine
from repogym.mining.issue_writer import StatementRequest, rewrite_statements
from repogym.mining.statements import leaks_fix

FIX = "return a + b if b >= 0 else a - abs(b)"


def _fix_history(repo) -> str:
    repo.write("pkg/calc.py", f"def add(a, b):\n    {FIX}\n").write(
        "tests/test_calc.py", "def test_add():\n    assert 2\n"
    )
    return repo.commit("Fix add for negative numbers\n\nadd(1, -2) gave 3.")


class QuotingWriter:
    """A writer that gives the fix away, as a careless model would: the patch's added line, verbatim."""

    def write(self, request: StatementRequest) -> str:
        added = [line[1:] for line in request.code_patch.splitlines() if line.startswith("+    ")]
        return f"add() is wrong.\n\nIt should be `{added[0].strip()}`."


def test_a_rewrite_that_quotes_the_fix_is_rejected_for_the_cleaned_message(repo) -> None:
    """Attack: a writer that reveals the fix must not reach the task."""
    _fix_history(repo)
    tasks = mine(repo.path).tasks
    rewritten, flags = rewrite_statements(tasks, QuotingWriter())
    for before, after in zip(tasks, rewritten, strict=True):
        assert after.problem_statement == before.problem_statement
        assert after.metadata["mining"]["statement_writer"] == "rejected: quotes the fix"
        assert not leaks_fix(after.problem_statement, after.patch)
    assert {flag.name: flag.count for flag in flags}["writer_quotes_fix"] == len(tasks) > 0


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_endpoint_that_does_not_answer_leaves_the_cleaned_message(repo) -> None:
    sha = _fix_history(repo)
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    result = mine(
        repo.path, MiningConfig(issue_writer="openai:tiny", issue_writer_base_url=url, max_candidates=1)
    )
    (task,) = result.tasks
    assert task.metadata["mining"]["commit"] == sha
    assert task.problem_statement == "Fix add for negative numbers\n\nadd(1, -2) gave 3.\n"
    assert task.metadata["mining"]["statement_writer"].startswith("failed: cannot reach")
    assert result.funnel.flag_count("writer_failed") == 1


@pytest.fixture(scope="module")
def served_tiny_model(tmp_path_factory: pytest.TempPathFactory):
    """`repogym serve` on a 1.4M-parameter random model, on a free loopback port."""
    pytest.importorskip("transformers", reason="the tiny model needs the 'train' extra")
    from filelock import FileLock

    from repogym.serve.server import make_server, start_in_thread
    from repogym.train.tiny import build_tiny_model

    folder = Path(tmp_path_factory.getbasetemp().parent / "repogym-tiny-model-v1")
    with FileLock(str(folder) + ".lock"):
        if not (folder / "config.json").exists():
            build_tiny_model(folder)
    server = make_server(str(folder), port=0, model_name="tiny")
    start_in_thread(server)
    yield server
    server.shutdown()


@pytest.mark.slow
def test_the_issue_writer_asks_repogym_serve_and_records_every_verdict(repo, served_tiny_model) -> None:
    """A random model writes garbage: this checks the plumbing and that the guard ran on what came back."""
    _fix_history(repo)
    repo.write("tests/test_calc.py", "def test_add():\n    assert 3\n").write(
        "pkg/calc.py", "def add(a, b):\n    return b + a\n"
    )
    repo.commit("Fix add for floats")
    config = MiningConfig(
        issue_writer="openai:tiny",
        issue_writer_base_url=served_tiny_model.base_url,
        issue_writer_max_tokens=24,
    )
    result = mine(repo.path, config)
    verdicts = [t.metadata["mining"]["statement_writer"] for t in result.tasks]
    assert len(verdicts) == 2 and set(verdicts) <= {"kept", "rejected: empty", "rejected: quotes the fix"}
    for task in result.tasks:
        kept = task.metadata["mining"]["statement_writer"] == "kept"
        assert (task.metadata["mining"]["statement_source"] == "writer") is kept
        assert not leaks_fix(task.problem_statement, task.patch)
    counts = {
        name: result.funnel.flag_count(f"writer_{name}") for name in ("kept", "empty", "quotes_fix", "failed")
    }
    assert counts["failed"] == 0 and sum(counts.values()) == 2
