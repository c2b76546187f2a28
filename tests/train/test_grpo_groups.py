"""Groups whose completions all scored the same leave the GRPO step (`grpo.zero_variance_groups`).

The rules on TRL's own tensors, then the real trainer (TRL's GRPOTrainer with repogym's overrides) on the
tiny model with plain reward functions, since what is checked is what the optimiser does with the scores,
not where the scores come from: a step whose groups are all uniform must not move the weights, although
AdamW, given the zero gradients TRL hands it, moves them on the momentum of earlier steps.
"""

from __future__ import annotations

import math

import pytest

from repogym.train.metrics import read_metrics
from repogym.train.rl_groups import drop_rows, rows_without_advantage

torch = pytest.importorskip("torch")

NAN = math.nan


def test_a_group_is_uniform_by_its_total_reward_and_unscorable_rows_carry_nothing():
    rewards = torch.tensor(
        [
            [1.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0],  # a success among failures: advantage
            [-1.0, 0.0], [-1.0, 0.0], [-1.0, 0.0], [-1.0, 0.0],  # every answer malformed: none
            [1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [1.0, 0.0],  # terms differ, totals equal: none
            [1.0, 0.0], [NAN, NAN], [NAN, NAN], [0.0, 0.0],  # two scored, different: advantage, not the NaNs
            [1.0, 0.0], [NAN, NAN], [NAN, NAN], [NAN, NAN],  # one scored: no baseline to compare with
        ]
    )  # fmt: skip
    drop = rows_without_advantage(rewards, torch.tensor([1.0, 1.0]), group_size=4)
    assert drop.tolist() == [False] * 4 + [True] * 8 + [False, True, True, False] + [True] * 4


def test_dropped_rows_leave_the_loss_and_the_token_count_of_the_token_level_losses():
    output = {
        "completion_mask": torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1]]),
        "tool_mask": torch.tensor([[1, 0, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1]]),
        "num_items_in_batch": torch.tensor(9),
    }
    drop_rows(output, torch.tensor([False, True, False]), gather=lambda t: t.reshape(1))
    assert output["completion_mask"].tolist() == [[1, 1, 1, 0], [0, 0, 0, 0], [1, 1, 1, 1]]
    assert int(output["num_items_in_batch"]) == 2 + 4, "only the kept rows' tool-unmasked tokens count"


class _Rewards:
    """A reward function: varied scores for the first `varied` batches, then one score for every completion."""

    __name__ = "scripted"

    def __init__(self, varied: int) -> None:
        self.varied = varied
        self.batches = 0

    def __call__(self, prompts=None, completions=None, **_):
        self.batches += 1
        if self.batches <= self.varied:
            return [float(len(c) % 3) for c in completions]
        return [0.0 for _ in completions]


def _train(tiny_model, out, rewards: _Rewards, zero_variance_groups: str, steps: int = 3):
    """The real trainer for `steps` steps; returns the weights (flattened) before the first step and after each,
    and the steps' metrics rows."""
    from datasets import Dataset
    from transformers import AutoTokenizer, TrainerCallback
    from trl import GRPOConfig

    from repogym.train.grpo import grpo_trainer_class

    snapshots = []

    class Snapshot(TrainerCallback):
        def on_train_begin(self, args, state, control, model=None, **_):
            snapshots.append(torch.cat([p.detach().flatten().clone() for p in model.parameters()]))

        on_step_end = on_train_begin

    args = GRPOConfig(
        output_dir=str(out), max_steps=steps, learning_rate=1e-2, lr_scheduler_type="constant",
        per_device_train_batch_size=8, num_generations=4, max_completion_length=8, use_cpu=True,
        report_to=[], save_strategy="no", logging_steps=1, seed=0, gradient_checkpointing=False,
    )  # fmt: skip
    trainer = grpo_trainer_class()(
        model=str(tiny_model),
        reward_funcs=[rewards],
        args=args,
        train_dataset=Dataset.from_list([{"prompt": "def add(a, b):"}, {"prompt": "import os"}] * 8),
        processing_class=AutoTokenizer.from_pretrained(tiny_model),
        metrics_dir=str(out),
        zero_variance_groups=zero_variance_groups,
    )
    trainer.add_callback(Snapshot())
    trainer.train()
    return snapshots, [row for row in read_metrics(out) if "reward" in row]


@pytest.mark.slow
def test_steps_whose_groups_are_all_uniform_leave_the_weights_where_the_last_signal_put_them(
    tiny_model, tmp_path
):
    snapshots, rows = _train(tiny_model, tmp_path / "skip", _Rewards(varied=1), "skip")
    assert [row["zero_variance/update_skipped"] for row in rows] == [0.0, 1.0, 1.0]
    assert [row["zero_variance/dropped_fraction"] for row in rows][1:] == [1.0, 1.0]
    assert not torch.equal(snapshots[0], snapshots[1]), "step 1 had a signal and must move the weights"
    assert torch.equal(snapshots[1], snapshots[3]), "an update on no signal moved the weights"

    # TRL's way (keep): the zero gradients of steps 2 and 3 still reach AdamW, whose momentum moves the weights.
    kept, _ = _train(tiny_model, tmp_path / "keep", _Rewards(varied=1), "keep")
    assert not torch.equal(kept[1], kept[3]), "this test no longer shows what skipping prevents"


@pytest.mark.slow
def test_a_mixed_batch_trains_on_its_informative_groups_only(tiny_model, tmp_path):
    snapshots, rows = _train(tiny_model, tmp_path / "mixed", _Rewards(varied=10), "skip", steps=2)
    assert [row["zero_variance/update_skipped"] for row in rows] == [0.0, 0.0]
    assert all(0.0 <= row["zero_variance/dropped_fraction"] < 1.0 for row in rows)
    assert not torch.equal(snapshots[1], snapshots[2]), "informative groups must still train"
