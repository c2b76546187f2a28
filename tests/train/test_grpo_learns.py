"""GRPO moves a random tiny model on a signal it can learn, through the real reward path.

The toy task in agentless mode; the reward is the `format` component (SWE-RL's -1 for a
malformed answer: a random model never writes a well-formed one, so it stays -1) plus DAPO's
overlong penalty on the answer's length in characters (`overlong`), which a random model can
move: it learns to write short tokens. Every completion goes through TRL -> repogym's reward functions ->
AgentlessEnv.step -> compose, as in any run. With a fixed seed the run is reproducible; the test
compares the first steps' mean reward with the last steps'.
"""

from __future__ import annotations

import pytest

from repogym.config import validate_config
from repogym.train.grpo import train_rl

from ..support.rl import fast_settings

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

STEPS = 10  # at lr 5e-2 the reward settles by step 7-8; the tiny model changes with repogym's source


def test_mean_reward_rises_on_a_learnable_signal(tiny_model, toy_tasks_file, tmp_path):
    config = validate_config({
        "base_model": str(tiny_model),
        "reward": {"components": [
            {"name": "format", "weight": 1.0, "fn": "format"},
            {"name": "short_answer", "weight": 1.0, "fn": "overlong", "kwargs": {"max_chars": 100, "buffer_chars": 100}},
        ]},
        "env": {"task_set": str(toy_tasks_file), "mode": "agentless", "options": {"context_chars": 1000}},
        "rollout": {"num_candidates": 8}, "batch_size": 8, "learning_rate": 0.05, "total_steps": STEPS,
        "output_dir": str(tmp_path / "run"), "seed": 0,
        "grpo": fast_settings(lr_scheduler_type="constant"),
    })  # fmt: skip
    result = train_rl(config)

    rows = [row for row in result.metrics if "reward" in row]
    assert [row["step"] for row in rows] == list(range(1, STEPS + 1))
    assert all(row["rewards/format/mean"] == -1.0 for row in rows), "a random model never writes the format"
    assert rows[0]["reward_std"] > 0, "the group's rewards differ, so there is an advantage to learn from"
    start = sum(row["reward"] for row in rows[:2]) / 2
    end = sum(row["reward"] for row in rows[-2:]) / 2
    assert end > start + 0.2, [round(row["reward"], 3) for row in rows]
    for key in ("time/generate_s", "time/grade_s", "time/update_s", "format_error_rate", "resolve_rate"):
        assert key in rows[-1], key
    # The loss's own figures exist where a loss was computed: a step whose groups all scored the same (the
    # random model's answers all short enough, say) makes no update (repogym.train.rl_groups).
    updated = [row for row in rows if not row["zero_variance/update_skipped"]]
    assert updated and "clip_ratio/region_mean" in updated[-1]
