"""Trajectory rows round-trip and refuse what they would silently lose."""

from __future__ import annotations

import pytest

from repogym.agent.trajectory import AttemptOutcome, StepRecord, Trajectory
from repogym.errors import DatasetError


def sample() -> Trajectory:
    return Trajectory(
        instance_id="a__b-1",
        attempt=3,
        policy_id="scripted:gold",
        messages=[{"role": "user", "content": "fix"}],
        outcome=AttemptOutcome.MAX_STEPS,
        steps=[
            StepRecord(
                index=0, format_errors=("no_tool_call",), logprobs=(-0.5, -1.0), completion_token_ids=(4, 2)
            )
        ],
        grade={"outcome": "UNRESOLVED"},
    )


def test_round_trip_through_the_row():
    row = sample().to_dict()
    assert row["instance_id"] == "a__b-1" and row["attempt"] == 3 and row["outcome"] == "max_steps"
    assert Trajectory.from_dict(row) == sample()
    assert sample().grade_outcome == "UNRESOLVED"


def test_unknown_fields_and_outcomes_are_refused_with_the_place():
    row = sample().to_dict()
    with pytest.raises(DatasetError, match=r"shard\.jsonl:4: unknown trajectory field\(s\) \['rewrd'\]"):
        Trajectory.from_dict({**row, "rewrd": 1.0}, where="shard.jsonl:4")
    with pytest.raises(DatasetError, match="unknown outcome 'won'"):
        Trajectory.from_dict({**row, "outcome": "won"})
    with pytest.raises(DatasetError, match="no 'attempt'"):
        Trajectory.from_dict({k: v for k, v in row.items() if k != "attempt"})
