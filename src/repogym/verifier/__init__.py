"""A learned verifier (outcome reward model): a causal LM that reads a task's issue and a finished attempt and
answers YES or NO; its score is p(YES) from the two answer tokens' logits.

- `data`: graded attempts from rollout and eval folders, the prompt, the balance and the split by task.
- `train`: `repogym train verifier`, TRL's SFTTrainer with the loss on the answer only.
- `score`: loading a verifier and scoring attempts (`score_attempts(verifier, [(task, diff), ...])`, what a
  best-of-n selection calls).
- `metrics`: AUC and ECE with bootstrap intervals over tasks; `verify`: `repogym verify`.

The package sits above `evaluate` (it reuses the bootstrap settings and their percentile rule), so `evaluate`
must not import it: a selection by verifier inside an eval takes `score_attempts` as a callable handed in by
the CLI.
"""
