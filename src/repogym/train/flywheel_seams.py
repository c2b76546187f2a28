"""The flywheel's two borrowed stages, behind one function each: SFT on chat rows, and held-out evaluation.

- `run_sft(base_model, rows_path, output_dir, ...)`: `repogym train sft` (repogym.train.sft): TRL's
  SFTTrainer with an assistant-only loss on `{"messages", "tools"?}` rows, the folder saved with
  its tokenizer so it loads as `hf:PATH` and as the next stage's base_model.
- `evaluate_policy(tasks, model_dir, ...)`: `repogym eval` (repogym.evaluate.run) of the model on the
  tasks (greedy, one attempt each unless told otherwise) in the run's mode, reduced to the one
  number the flywheel's table shows: the resolve rate over all attempts.

The flywheel takes both as arguments, so a test or a team can put their own in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def run_sft(
    base_model: str | Path,
    rows_path: str | Path,
    output_dir: str | Path,
    *,
    max_steps: int = 50,
    learning_rate: float = 1e-4,
    seed: int = 0,
) -> Path:
    """Fine-tune `base_model` on the chat rows of `rows_path` with `repogym train sft`'s library function."""
    from repogym.train.sft import run_sft as train_sft
    from repogym.train.sft_config import SFTRunConfig

    config = SFTRunConfig(
        base_model=str(base_model), data=str(rows_path), output_dir=str(output_dir), max_steps=max_steps,
        learning_rate=learning_rate, seed=seed, save_steps=max_steps,
    )  # fmt: skip
    return Path(train_sft(config, progress=False).output_dir)


def evaluate_policy(
    tasks: str | Path,
    model_dir: str | Path,
    *,
    out_dir: str | Path,
    mode: str = "agent",
    attempts: int = 1,
    max_steps: int = 30,
    max_reply_tokens: int = 512,
    reward: dict[str, Any] | None = None,
    env_options: dict[str, Any] | None = None,
    sandbox: str = "bwrap",
    seed: int = 0,
    stage: str = "",
) -> float:
    """The resolve rate of `model_dir` on `tasks` by `repogym eval` (greedy with one attempt, T=1 with more).

    `out_dir` is an eval folder (summary.json with pass@1 and its interval, SWE-bench predictions),
    so `repogym report` shows the flywheel's evaluations beside its training curves.
    """
    from repogym.agent.loop import AgentLimits
    from repogym.agent.policies import PolicyConfig, SamplingParams
    from repogym.evaluate.run import EvalConfig, run_eval

    config = EvalConfig(
        tasks=str(tasks), policy=PolicyConfig(spec=f"hf:{model_dir}"), out=str(out_dir), n=attempts,
        stage=stage, split="heldout", mode=mode, env_options=dict(env_options or {}),
        sampling=SamplingParams(temperature=0.0 if attempts == 1 else 1.0, max_tokens=max_reply_tokens, seed=seed),
        limits=AgentLimits(max_steps=max_steps), sandbox=sandbox, reward=reward,
    )  # fmt: skip
    return float(run_eval(config)["resolve_rate"])
