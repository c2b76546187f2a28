"""Groups that carry no advantage leave the GRPO step (`grpo.zero_variance_groups: skip`, the default).

A GRPO group whose completions all scored the same has advantage 0 on every completion, so it adds
no gradient; what it still does in TRL's trainer:
- with the token-level losses (`dapo`, the default; `bnpo`, `cispo`), its tokens count in the loss's
  normaliser, so a batch of 2 informative groups and 6 uniform ones steps a quarter as far as the 2
  alone would: the step shrinks exactly when the signal is rare;
- a step in which every group is uniform still calls the optimiser with zero gradients, and AdamW
  moves the weights on its momentum from earlier steps (and the scheduler spends a step).

What the others do: DAPO and SkyRL (`dynamic_sampling.type: filter`) drop uniform groups and sample
more prompts until the batch is full; DeepSWE filters them and masks failed trajectories from the
loss ("compact filtering"); TRL only logs their share (`frac_reward_zero_std`). Resampling inside
TRL's buffered generation batch would mean rewriting its step loop, so here the uniform groups are
dropped without replacement: their completions are masked out of the loss and its normaliser (a
completion every reward function abstained on, as `grpo.format_errors: mask` makes a format error,
has advantage 0 too and goes with them), and a micro-batch with nothing left returns a loss with no
path to the weights, so the weights get no gradient at all and the optimiser leaves them alone (torch
optimisers skip a parameter whose `.grad` is None). The share of completions dropped is logged as
`zero_variance/dropped_fraction`, and `zero_variance/update_skipped` is 1 on a step that made no update.

With a KL term (`grpo.beta` > 0) every completion carries a gradient, the KL's pull towards the reference
model, so nothing is dropped and the setting changes nothing. With the sequence-level losses (`grpo`,
`dr_grpo`) a masked completion still counts as a row of the batch mean; the all-uniform step is skipped all
the same. Across several processes (DDP) every rank must run its backward, so there a micro-batch with
nothing left computes its (zero) loss as usual.
"""

from __future__ import annotations

from typing import Any

#: Two rewards closer than this are the same score (TRL's group std test is torch.isclose's).
SAME_SCORE = 1e-6


def rows_without_advantage(rewards_per_func: Any, weights: Any, group_size: int) -> Any:
    """A bool tensor over the batch's completions: True where the completion carries no advantage.

    That is every completion of a group whose scored completions all have the same total reward (or
    fewer than two of them), and every completion every reward function abstained on (NaN: TRL zeroes
    its advantage). `rewards_per_func` is TRL's (completions x functions, NaN where a function returned
    None), `weights` the functions' weights; groups are `group_size` consecutive rows, as TRL lays them out.
    """
    import torch

    unscorable = torch.isnan(rewards_per_func).all(dim=1)
    total = (rewards_per_func * weights.to(rewards_per_func.device).unsqueeze(0)).nansum(dim=1)
    total[unscorable] = torch.nan
    grouped = total.view(-1, group_size)
    top = torch.where(torch.isnan(grouped), -torch.inf, grouped).max(dim=1).values
    bottom = torch.where(torch.isnan(grouped), torch.inf, grouped).min(dim=1).values
    uniform = ~(top - bottom > SAME_SCORE)  # fewer than two scored: inf - inf or -inf - inf, not > 0
    return uniform.repeat_interleave(group_size) | unscorable


def drop_rows(output: dict[str, Any], drop: Any, gather: Any) -> None:
    """Mask the `drop` rows of TRL's scored generation batch out of the loss and recount its tokens.

    `output` is what `_generate_and_score_completions` returns (this process's rows); the loss reads
    `completion_mask` (times `tool_mask` in agent mode) and the token-level losses divide by
    `num_items_in_batch`, the masked tokens of every process (`gather`: the accelerator's)."""
    keep = (~drop).to(output["completion_mask"].device).int().unsqueeze(1)
    output["completion_mask"] = output["completion_mask"] * keep
    if "tool_mask" in output:
        output["tool_mask"] = output["tool_mask"] * keep
    output["num_items_in_batch"] = gather(loss_mask(output).sum()).sum()


def loss_mask(batch: dict[str, Any]) -> Any:
    """The tokens TRL's loss reads: the completion's, less tool output in agent mode."""
    mask = batch["completion_mask"]
    return mask * batch["tool_mask"] if "tool_mask" in batch else mask


def has_loss_tokens(inputs: dict[str, Any]) -> bool:
    """Whether a micro-batch has any token the loss reads."""
    return bool(loss_mask(inputs).sum() > 0)


class DropUniformGroups:
    """Over TRL's GRPOTrainer: groups without advantage leave the loss; a step with none left makes no update."""

    def __init__(self, *args: Any, zero_variance_groups: str = "skip", **kwargs: Any) -> None:
        self.drop_uniform = zero_variance_groups == "skip"
        self._no_advantage: Any = None
        self._micro_batches = 0
        self._empty_micro_batches = 0
        super().__init__(*args, **kwargs)

    def _calculate_rewards(self, *args: Any) -> Any:
        rewards_per_func = super()._calculate_rewards(*args)
        if self.drop_uniform and self.beta == 0.0 and self.model.training:
            self._no_advantage = rows_without_advantage(
                rewards_per_func, self.reward_weights, self.num_generations
            )
        return rewards_per_func

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        self._no_advantage = None
        output = super()._generate_and_score_completions(inputs)
        if self._no_advantage is not None:
            at = self.accelerator.process_index * len(inputs)  # TRL's slice of the gathered rewards
            drop = self._no_advantage[at : at + len(inputs)]
            drop_rows(output, drop, self.accelerator.gather)
            self._metrics["train"]["zero_variance/dropped_fraction"].append(
                self._no_advantage.float().mean().item()
            )
        return output

    def compute_loss(
        self, model: Any, inputs: dict[str, Any], return_outputs: bool = False, num_items_in_batch: Any = None
    ) -> Any:
        if not (self.drop_uniform and model.training):
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        self._micro_batches += 1
        if self.accelerator.num_processes == 1 and not return_outputs and not has_loss_tokens(inputs):
            import torch

            self._empty_micro_batches += 1
            self._note_step_end()
            # No path to the weights: backward leaves every .grad None, so the optimiser skips them.
            return torch.zeros((), device=inputs["completion_mask"].device, requires_grad=True)
        loss = super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        self._note_step_end()
        return loss

    def _note_step_end(self) -> None:
        if self._micro_batches < self.current_gradient_accumulation_steps:
            return
        skipped = self._empty_micro_batches == self._micro_batches
        self._metrics["train"]["zero_variance/update_skipped"].append(float(skipped))
        self._micro_batches = self._empty_micro_batches = 0
