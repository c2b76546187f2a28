"""`repogym data sft`: gold demonstrations (the env's own prompts), rejection-sampled rollouts, chat rows, drops."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import repogym.env
from repogym.cli import app
from repogym.dataset import save_tasks
from repogym.search_replace import apply_answer
from repogym.task import Source, Task
from repogym.train.sft_data import SFTDataOptions, build_sft_data, read_summary, write_sft_data

from ..support.git import commit_files, init_repo, staged_diff

WINDOW = SFTDataOptions(context="window", window_lines=1)


@pytest.mark.parametrize(
    ("answer_format", "prompt_style"), [("search_replace", "full"), ("lines", "full"), ("lines", "compact")]
)
def test_agentless_gold_rows_are_the_envs_prompt_and_gold_answer(
    tmp_path, toy_task, toy_runtime, answer_format, prompt_style
):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(toy_task.to_dict()) + "\n")
    options = dataclasses.replace(WINDOW, answer_format=answer_format, prompt_style=prompt_style)
    data = build_sft_data([tasks], options, tmp_path / "sft.jsonl")
    (row,) = data.rows
    env = repogym.env.make(toy_task.instance_id, toy_task, runtime=toy_runtime, mode="agentless",
                           context="window", window_lines=1, answer_format=answer_format,
                           prompt_style=prompt_style)  # fmt: skip
    observation, _ = env.reset()
    user, assistant = row["messages"]
    assert (user["role"], user["content"]) == ("user", observation)
    assert assistant == {"role": "assistant", "content": env.gold_answer(), "tool_calls": None,
                         "tool_call_id": None, "name": None}  # fmt: skip
    _, reward, _, _, info = env.step(assistant["content"])
    assert info["grade"].resolved and reward == 2.0
    assert row["metadata"] == {"context": "window", "localize": "oracle", "answer_format": answer_format,
                               "prompt_style": prompt_style, "uses_gold_localization": True}  # fmt: skip


def test_window_gold_answers_apply_to_the_real_file_and_are_short(tmp_path, bug_tasks_file):
    data = build_sft_data([bug_tasks_file], WINDOW, tmp_path / "sft.jsonl")
    assert [r["instance_id"] for r in data.rows] == [f"ops__ops-{n}" for n in range(5)]
    source = Path(json.loads(bug_tasks_file.read_text().splitlines()[0])["repo_source"], "ops.py").read_text()
    for row in data.rows:
        prompt, answer = row["messages"][0]["content"], row["messages"][1]["content"]
        assert "helper3_2" not in prompt and len(prompt.splitlines()) < 25  # a window, not the file
        edit = apply_answer(answer, {"ops.py": source})
        (block,) = edit.answer.edits
        assert block.search in prompt and block.search in source and len(block.search.splitlines()) <= 2


def test_rollouts_keep_only_resolved_attempts_once_each(tmp_path, toy_task):
    from repogym.agent.policies import PolicyConfig
    from repogym.rollout.run import RolloutConfig, run_rollout

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(toy_task.to_dict()) + "\n")
    script = tmp_path / "give-up.json"
    script.write_text(json.dumps([{"name": "submit", "arguments": {}}]))
    for name, spec in (("gold", "scripted:gold"), ("empty", f"scripted:{script}")):
        run_rollout(RolloutConfig(tasks=str(tasks), policy=PolicyConfig(spec=spec), out=str(tmp_path / name)))
    data = build_sft_data(
        [tmp_path / "gold", tmp_path / "empty", tmp_path / "gold"], SFTDataOptions(), tmp_path / "o"
    )
    gold, empty, again = data.reports
    assert (gold.kind, gold.rows_in, gold.kept) == ("rollout", 1, 1)
    assert (empty.kept, dict(empty.dropped)) == (0, {"not resolved": 1})
    assert (again.kept, dict(again.dropped)) == (0, {"duplicate": 1})
    (row,) = data.rows
    roles = [m["role"] for m in row["messages"]]
    assert roles[0] == "system" and "tool" in roles and roles[-1] == "assistant"
    assert {t["function"]["name"] for t in row["tools"]} >= {"edit_file", "submit"}


def test_chat_rows_pass_through_and_bad_or_long_rows_are_counted(tmp_path):
    rows = tmp_path / "commits.jsonl"
    good = {
        "messages": [{"role": "user", "content": "fix"}, {"role": "assistant", "content": "done"}],
        "repo": "r",
    }
    long = {"messages": [{"role": "user", "content": "x" * 500}, {"role": "assistant", "content": "y"}]}
    rows.write_text("".join(json.dumps(r) + "\n" for r in [good, {"messages": [{"role": "user", "content": "q"}]},
                                                         long, {"messages": "no"}]))  # fmt: skip
    data = build_sft_data([rows], SFTDataOptions(max_chars=100), tmp_path / "sft.jsonl")
    (report,) = data.reports
    assert (report.kind, report.rows_in, report.kept) == ("chat", 4, 1)
    assert dict(report.dropped) == {
        "no assistant turn": 1,
        "longer than max_chars (100)": 1,
        "no messages": 1,
    }
    assert data.rows[0]["repo"] == "r" and data.rows[0]["source"] == "chat"
    write_sft_data(data, tmp_path / "sft.jsonl")
    assert read_summary(tmp_path / "sft.jsonl")["sources"][0]["kept"] == 1


def test_the_cli_writes_rows_and_a_summary_and_fails_on_nothing_kept(tmp_path, bug_tasks_file):
    out = tmp_path / "sft.jsonl"
    result = CliRunner().invoke(
        app, ["data", "sft", str(bug_tasks_file), "--out", str(out), "--context", "window"]
    )
    assert result.exit_code == 0, result.output
    assert len(out.read_text().splitlines()) == 5
    assert read_summary(out)["sources"][0] == {"source": str(bug_tasks_file), "kind": "tasks", "rows_in": 5,
                                               "kept": 5, "dropped": {}}  # fmt: skip
    empty = tmp_path / "empty.jsonl"
    empty.write_text(json.dumps({"messages": [{"role": "user", "content": "q"}]}) + "\n")
    result = CliRunner().invoke(app, ["data", "sft", str(empty), "--out", str(tmp_path / "none.jsonl")])
    assert result.exit_code == 2 and "no rows kept" in result.output


def test_agent_mode_gold_rows_come_from_a_scripted_gold_rollout_in_the_sandbox(tmp_path, toy_task):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(toy_task.to_dict()) + "\n")
    data = build_sft_data([tasks], SFTDataOptions(gold="agent"), tmp_path / "sft.jsonl")
    (row,) = data.rows
    assert row["source"] == "gold-agent" and (tmp_path / "sft.jsonl.gold-agent").is_dir()
    calls = [c["function"]["name"] for m in row["messages"] for c in m["tool_calls"] or []]
    assert calls == ["edit_file", "submit"] and row["messages"][-1]["role"] == "assistant"


STATS = '''"""Stats."""


def total(xs):
    return sum(xs)
'''
MODE = '''

def mode(xs):
    """The most frequent value."""
    counts = {}
    for x in xs:
        counts[x] = counts.get(x, 0) + 1
    return max(counts, key=counts.get)
'''


def test_hostile_train_task_adding_a_held_out_function_is_dropped_by_the_body_guard(tmp_path, monkeypatch):
    """A training commit adds `mode`, whose injected bug is held out: its gold answer holds `mode` whole.
    The held-out fix line (`for x in xs:`) is too short for the line guard; the body guard drops the row,
    the unrelated training task is kept, and the summary and the table count each guard's drops."""
    monkeypatch.setenv("REPOGYM_CACHE", str(tmp_path / "cache"))
    repo = tmp_path / "stats"
    without_mode = init_repo(repo, {"stats.py": STATS})
    adds_mode = staged_diff(repo, {"stats.py": STATS + MODE})
    fixes_total = staged_diff(repo, {"stats.py": STATS.replace("sum(xs)", "sum(xs, start=0)")})
    with_bug = commit_files(repo, {"stats.py": STATS + MODE.replace("in xs:", "in xs[1:]:")}, "inject")
    fixes_mode = staged_diff(repo, {"stats.py": STATS + MODE})
    train = [
        Task("o__stats-1", "o/stats", without_mode, adds_mode, repo_source=str(repo)),
        Task("o__stats-2", "o/stats", without_mode, fixes_total, repo_source=str(repo)),
    ]
    held_out = Task("o__stats-synth", "o/stats", with_bug, fixes_mode, source=Source.SYNTHETIC,
                    repo_source=str(repo), metadata={"file": "stats.py", "function": "mode"})  # fmt: skip
    train_file, held_out_file = tmp_path / "train.jsonl", tmp_path / "heldout.jsonl"
    out = tmp_path / "sft.jsonl"
    save_tasks(train, train_file)
    save_tasks([held_out], held_out_file)
    args = ["data", "sft", str(train_file), "--out", str(out), "--held-out", str(held_out_file)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert [json.loads(line)["instance_id"] for line in out.read_text().splitlines()] == ["o__stats-2"]
    summary = read_summary(out)
    assert summary["sources"][0]["dropped"] == {
        "writes a held-out function's body": 1,
        "writes a held-out task's fixed line": 0,
    }
    assert summary["guarded"] == {"held_out_tasks": 1, "lines": 0, "bodies": 1, "tasks_without_body": 0}
    printed = " ".join(result.output.split())
    assert "leakage guard over 1 held-out tasks: 0 fixed lines, 1 function bodies" in printed
