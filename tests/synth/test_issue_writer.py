"""Issue-style statements from an LLM endpoint (`repogym serve` on the tiny model), and the guard that keeps
the fix out of them."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from repogym.cli import app
from repogym.dataset import load_tasks, save_tasks
from repogym.synth.issues import make_issue_writer
from repogym.task import Source, Task
from repogym.validate.statement import rewrite_statements

GOLD = (
    "diff --git a/src/calc.py b/src/calc.py\n--- a/src/calc.py\n+++ b/src/calc.py\n"
    "@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
)
DEFAULT = "1 test(s) fail:\n- tests/test_calc.py::test_add\n\n    E       assert -1 == 5\n"


def synthetic_task(instance_id: str = "o__calc-synth-op_change-1") -> Task:
    return Task(
        instance_id,
        "o/calc",
        "0" * 40,
        GOLD,
        problem_statement=DEFAULT,
        FAIL_TO_PASS=["tests/test_calc.py::test_add"],
        PASS_TO_PASS=["tests/test_calc.py::test_mul"],
        source=Source.SYNTHETIC,
        metadata={
            "method": "op_change",
            "file": "src/calc.py",
            "function": "add",
            "statement": {"writer": "tests"},
        },
    )


class QuotingWriter:
    """Writes what a careless model would: the fix itself."""

    name = "quoting"

    def write(self, task: Task, default: str) -> str:
        return "add() subtracts. It should say `return a + b` instead, then test_add passes."


class BrokenWriter:
    name = "broken"

    def write(self, task: Task, default: str) -> str:
        raise ConnectionError("endpoint down")


@pytest.fixture(scope="module")
def server(tiny_model):
    from repogym.serve.server import make_server, start_in_thread

    served = make_server(str(tiny_model), port=0, model_name="tiny")
    start_in_thread(served)
    yield served
    served.stop()


def test_a_served_model_is_asked_and_its_answer_checked(server):
    writer = make_issue_writer("openai:tiny", server.base_url, max_tokens=32)
    [task] = rewrite_statements([synthetic_task()], writer)
    assert writer.model.usage["requests"] == 1  # the request went over HTTP to the server
    record = task.metadata["statement"]
    if record["writer"] == "openai:tiny":
        assert task.problem_statement.strip() and task.problem_statement != DEFAULT
    else:  # a random model may write too little: refused for that, never for a failed request
        assert record["refused"].startswith("openai:tiny returned") and task.problem_statement == DEFAULT
    assert "return a + b" not in task.problem_statement


def test_a_statement_that_quotes_the_fix_is_refused_and_the_default_kept():
    [task] = rewrite_statements([synthetic_task()], QuotingWriter())
    assert task.problem_statement == DEFAULT
    assert task.metadata["statement"] == {"writer": "tests", "refused": "quoting quoted the fix"}


def test_a_failing_writer_keeps_the_default():
    [task] = rewrite_statements([synthetic_task()], BrokenWriter())
    assert task.problem_statement == DEFAULT and "endpoint down" in task.metadata["statement"]["refused"]


def test_mined_tasks_and_rewritten_ones_are_left_alone():
    mined = synthetic_task("mined").replace(source=Source.MINED)
    done = synthetic_task("done").replace(metadata={"statement": {"writer": "openai:x"}})
    assert rewrite_statements([mined, done], QuotingWriter()) == [mined, done]


def test_the_cli_rewrites_statements_through_the_server(server, tmp_path):
    tasks, out = tmp_path / "tasks.jsonl", tmp_path / "issues.jsonl"
    save_tasks([synthetic_task()], tasks)
    args = [
        "synth",
        "statements",
        str(tasks),
        "--out",
        str(out),
        "--issue-writer",
        "openai:tiny",
        "--base-url",
        server.base_url,
        "--max-tokens",
        "32",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    [task] = load_tasks(out)
    assert (
        task.metadata["statement"]["writer"] == "openai:tiny"
        or "returned" in task.metadata["statement"]["refused"]
    )


def test_an_unknown_issue_writer_is_a_user_error(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    save_tasks([synthetic_task()], tasks)
    result = CliRunner().invoke(
        app,
        ["synth", "statements", str(tasks), "--out", str(tmp_path / "o.jsonl"), "--issue-writer", "claude:x"],
    )
    assert result.exit_code == 2 and "only 'openai:MODEL'" in result.output
