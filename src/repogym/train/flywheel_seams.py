"""The flywheel's two borrowed stages, behind one function each: SFT on chat rows, and held-out evaluation.

`run_sft` stands in for h-sft's `repogym train sft` library function (issue 13, item 2) until it
lands (swapping it is a one-line change in `repogym.train.flywheel`); `evaluate_policy` is
`repogym eval` (repogym.evaluate.run) reduced to the one number the flywheel's table shows.

- `run_sft(base_model, rows_path, output_dir, ...)`: TRL's SFTTrainer with an assistant-only loss
  on `{"messages", "tools"?}` rows (the chat template's {% generation %} markers decide what is
  trained), the folder saved with its tokenizer so it loads as `hf:PATH` and as a base_model.
- `evaluate_policy(tasks, model_dir, ...)`: `repogym eval` of the model on the tasks (greedy, one
  attempt each unless told otherwise) in the run's mode; the resolve rate over all attempts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repogym.files import read_jsonl_records


def run_sft(
    base_model: str | Path,
    rows_path: str | Path,
    output_dir: str | Path,
    *,
    max_steps: int = 50,
    learning_rate: float = 1e-4,
    seed: int = 0,
) -> Path:
    """Fine-tune `base_model` on the chat rows of `rows_path`; returns the saved model folder."""
    import torch
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from repogym.train.tiny import load_tokenizer

    rows = [_sft_row(row) for row in read_jsonl_records(rows_path)]
    if not rows:
        from repogym.errors import ConfigError

        raise ConfigError(f"{rows_path}: no SFT rows (no resolved attempt and no gold demonstration)")
    tokenizer = load_tokenizer(base_model)
    on_cpu = not torch.cuda.is_available()
    args = SFTConfig(
        output_dir=str(output_dir),
        max_steps=max_steps,
        learning_rate=learning_rate,
        per_device_train_batch_size=min(8, len(rows)),
        assistant_only_loss=True,
        use_cpu=on_cpu,
        bf16=not on_cpu and torch.cuda.is_bf16_supported(),
        save_strategy="no",
        report_to=[],
        logging_steps=max(1, max_steps // 10),
        seed=seed,
    )
    trainer = SFTTrainer(
        model=str(base_model), args=args, train_dataset=Dataset.from_list(rows), processing_class=tokenizer
    )
    trainer.train()
    trainer.save_model(str(output_dir))
    tokenizer.save_pretrained(str(output_dir))
    return Path(output_dir)


def _sft_row(row: dict[str, Any]) -> dict[str, Any]:
    """A trajectory's chat as SFTTrainer reads it: messages, and the tool schemas when there were tools."""
    messages = [_message(m) for m in row["messages"]]
    return {"messages": messages, "tools": row["tools"]} if row.get("tools") else {"messages": messages}


def _message(message: dict[str, Any]) -> dict[str, Any]:
    kept = {"role": message["role"], "content": message.get("content") or ""}
    if message.get("tool_calls"):
        kept["tool_calls"] = message["tool_calls"]
    return kept


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
