"""The trajectory store: exactly one row per attempt, torn writes repaired, a second writer refused."""

from __future__ import annotations

import pytest

from repogym.agent.trajectory import AttemptOutcome, Trajectory
from repogym.errors import ConfigError
from repogym.rollout.store import TrajectoryStore, load_trajectories


def trajectory(instance_id: str, attempt: int, resolved: bool = True) -> Trajectory:
    return Trajectory(
        instance_id=instance_id,
        attempt=attempt,
        policy_id="scripted:gold",
        messages=[{"role": "user", "content": "fix"}, {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c0", "type": "function", "function": {"name": "submit", "arguments": "{}"}}]}],
        outcome=AttemptOutcome.SUBMITTED,
        resolved=resolved,
        reward=1.0 if resolved else 0.0,
    )  # fmt: skip


def test_resume_skips_what_is_done_and_never_writes_twice(tmp_path):
    with TrajectoryStore(tmp_path) as store:
        store.append(trajectory("a", 0))
        store.append(trajectory("a", 1), keep=False)
        store.append(trajectory("a", 0))  # a duplicate is dropped
    with TrajectoryStore(tmp_path) as store:
        assert store.done == {("a", 0), ("a", 1)}
        store.append(trajectory("b", 0))
        assert len(store.shards()) == 2  # each run writes its own shard
    assert sorted(t.key for t in load_trajectories(tmp_path)) == [("a", 0), ("b", 0)]


def test_a_torn_last_line_is_cut_and_its_attempt_runs_again(tmp_path):
    with TrajectoryStore(tmp_path) as store:
        store.append(trajectory("a", 0))
        store.append(trajectory("a", 1))
    shard, ledger = store.shards()[0], tmp_path / ".ledger"
    whole = shard.read_bytes()
    shard.write_bytes(whole[: len(whole) - 40])  # SIGKILL in the middle of the second row's write...
    ledger.write_text(ledger.read_text().splitlines(keepends=True)[0])  # ...so its ledger line never came
    with TrajectoryStore(tmp_path) as store:
        assert ("a", 1) not in store.done and ("a", 0) in store.done
    assert shard.read_bytes().endswith(b"\n")
    datasets = pytest.importorskip("datasets")
    rows = datasets.load_dataset("json", data_files=str(tmp_path / "*.jsonl"), split="train")
    assert rows["instance_id"] == ["a"] and rows["attempt"] == [0]
    assert rows[0]["messages"][1]["tool_calls"][0]["function"]["name"] == "submit"


def test_shards_rotate(tmp_path):
    with TrajectoryStore(tmp_path, shard_records=2) as store:
        for attempt in range(5):
            store.append(trajectory("a", attempt))
    assert [len(p.read_text().splitlines()) for p in store.shards()] == [2, 2, 1]


def test_a_second_writer_is_refused(tmp_path):
    with TrajectoryStore(tmp_path), pytest.raises(ConfigError, match="another rollout is writing"):
        TrajectoryStore(tmp_path).open()


def test_out_must_be_a_folder(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="not a folder"):
        TrajectoryStore(tmp_path / "file").open()
