"""scripted:gold replays any gold patch through tool calls; a person at the terminal drives the same loop."""

from __future__ import annotations

import shutil

import pytest

from repogym.agent.backends.human import HumanPolicy
from repogym.agent.backends.scripted import GoldPolicy, gold_actions
from repogym.agent.loop import AgentLimits, AgentLoop
from repogym.agent.policies import PolicyConfig, PolicyRequest, make_policy
from repogym.agent.trajectory import AttemptOutcome
from repogym.errors import ConfigError
from repogym.testing import FIXED_SOURCE

from ..support.git import git


def gold_patch_with_every_kind_of_change(toy_task, tmp_path) -> str:
    """The fix, plus a deleted file, a file without a final newline and a multi-hunk edit."""
    repo = tmp_path / "work"
    shutil.copytree(toy_task.repo_source, repo)
    (repo / "src/calc/__init__.py").write_text(
        FIXED_SOURCE.replace("def mul", "# multiply\ndef mul") + "\n\n# end\n"
    )
    (repo / "README.md").unlink()
    (repo / "src/calc/version.py").write_text("VERSION = '0.1.1'")  # no final newline
    git(repo, "add", "-A")
    return git(repo, "diff", "--cached")


def test_gold_replay_reaches_exactly_the_gold_result(make_env, toy_task, tmp_path):
    patch = gold_patch_with_every_kind_of_change(toy_task, tmp_path)
    task = toy_task.replace(patch=patch)
    names = [call.name for call in gold_actions(patch)]
    assert names.count("bash") == 2 and "edit_file" in names and names[-1] == "submit"
    loop = AgentLoop(GoldPolicy(), limits=AgentLimits(max_steps=10))
    trajectory = loop.run(make_env(max_steps=10), task)
    assert trajectory.outcome is AttemptOutcome.SUBMITTED and trajectory.resolved
    final = trajectory.final_patch
    assert "deleted file mode" in final and "\\ No newline at end of file" in final and "# end" in final


def test_a_person_plays_through_the_terminal(make_env, toy_task):
    replies = iter(["view_file('src/calc/__init__.py')", "I am not sure", f"create_file('src/calc/__init__.py', {FIXED_SOURCE!r})", "submit()"])  # fmt: skip
    shown: list[str] = []
    policy = HumanPolicy(read_line=lambda prompt: next(replies), show=shown.append)
    trajectory = AgentLoop(policy, limits=AgentLimits(max_steps=10)).run(make_env(max_steps=10), toy_task)
    assert trajectory.outcome is AttemptOutcome.SUBMITTED and trajectory.resolved
    assert "add(2, 3) returns -1" in shown[0]  # the issue first
    assert "return a - b" in shown[1]  # then what view_file showed
    assert "could not run a tool call" in shown[2]  # then the hint after a reply with no call


@pytest.mark.parametrize("reply", [":quit", EOFError])
def test_quitting_ends_the_attempt_as_a_policy_error(make_env, toy_task, reply):
    def read_line(prompt: str) -> str:
        if reply is EOFError:
            raise EOFError
        return reply

    policy = HumanPolicy(read_line=read_line, show=lambda text: None)
    trajectory = AgentLoop(policy).run(make_env(), toy_task)
    assert trajectory.outcome is AttemptOutcome.POLICY_ERROR and "quit" in trajectory.detail


def test_script_files_are_checked_when_the_policy_is_made(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"instance_id": "x", "actions": [1, 2]}\n')
    with pytest.raises(ConfigError, match=r"bad.jsonl:1: actions must be a list"):
        make_policy(PolicyConfig(spec=f"scripted:{bad}"))
    with pytest.raises(ConfigError, match="cannot read the script"):
        make_policy(PolicyConfig(spec=f"scripted:{tmp_path / 'missing.json'}"))


def test_script_rows_can_name_the_attempt(tmp_path):
    """Best-of-n tests need k different attempts per task: a row with an attempt number wins for that attempt."""
    script = tmp_path / "per-attempt.jsonl"
    script.write_text(
        '{"instance_id": "t", "actions": ["any attempt"]}\n{"instance_id": "t", "attempt": 1, "actions": ["one"]}\n'
        '{"actions": ["any task"]}\n'
    )
    policy = make_policy(PolicyConfig(spec=f"scripted:{script}"))
    replies = [
        policy.act(PolicyRequest([], [], instance_id=t, attempt=a)).text
        for t, a in (("t", 0), ("t", 1), ("u", 1))
    ]
    assert replies == ["any attempt", "one", "any task"]
    script.write_text('{"attempt": 1, "actions": ["one"]}\n')
    with pytest.raises(
        ConfigError, match=r"per-attempt.jsonl:1: 'attempt' is an attempt number, in a row with"
    ):
        make_policy(PolicyConfig(spec=f"scripted:{script}"))
