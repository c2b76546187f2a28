"""The quickstart's plan turned into each stage's input: the config objects its stages' commands would build.

Every stage answers in the agentless format over a 3-line window located by the gold patch (perfect fault
localization: the tiny model is told where the bug is, as the README says), by default with the suspicious
line rewritten (`answer_format="lines"`, `repogym.env.lines_answer`); `QuickstartPlan.env_options` is that
one setting, handed to the SFT data, GRPO and every evaluation alike.
"""

from __future__ import annotations

from pathlib import Path

from repogym.agent.policies import PolicyConfig, SamplingParams
from repogym.config import EnvConfig, GRPOSettings, RolloutSettings, RunConfig
from repogym.evaluate.layout import sampled_stage
from repogym.evaluate.run import EvalConfig
from repogym.pipeline.data import DataInput
from repogym.pipeline.demos import DemosInput
from repogym.pipeline.evaluate import EvalInput
from repogym.pipeline.grpo import GRPOInput
from repogym.pipeline.model import ModelInput
from repogym.pipeline.plan import QuickstartPlan
from repogym.pipeline.sft import SFTDataInput, SFTInput
from repogym.pipeline.split import HELD_OUT_SPLITS, SplitInput
from repogym.train.mutation_demos import DemoOptions
from repogym.train.rl_tasks import machine_workers
from repogym.train.sft_config import SFTRunConfig
from repogym.train.sft_data import SFTDataOptions


def data_input(out: Path, plan: QuickstartPlan, workers: int, sandbox: str) -> DataInput:
    return DataInput(out, seed=plan.seed, repos=plan.repos, synth_per_repo=plan.synth_per_repo, workers=workers,
                     sandbox=sandbox)  # fmt: skip


def split_input(out: Path, plan: QuickstartPlan, held_out_repo: str) -> SplitInput:
    """The last sample repository held out whole; the others' tasks split by function."""
    return SplitInput(
        tasks_file=out / "tasks.jsonl", folder=out / "split", held_out_repo=held_out_repo, ratio=plan.split_ratio,
        seed=plan.seed, eval_methods=plan.eval_methods, short_statements=plan.short_statements,
    )  # fmt: skip


def model_input(out: Path, plan: QuickstartPlan) -> ModelInput:
    return ModelInput(folder=out / "model", seed=plan.model_seed, pretrain_minutes=plan.pretrain_minutes,
                      pretrain_chars=2_000_000 if plan.fast else 6_000_000)  # fmt: skip


def demos_input(out: Path, plan: QuickstartPlan, repos: tuple[str, ...], workers: int = 2,
                repos_root: Path | None = None) -> DemosInput:  # fmt: skip
    """The eval's methods (all learnable ones when unset) in the training repositories and the corpus."""
    options = DemoOptions(methods=tuple(plan.eval_methods or DemoOptions().methods), max_rows=plan.demo_rows,
                          seed=plan.seed, answer_format=plan.answer_format, prompt_style=plan.prompt_style)  # fmt: skip
    root = repos_root or out / "repos"
    folders = tuple(root / repo.split("/", 1)[1] for repo in repos[:-1])  # the last one is held out whole
    return DemosInput(split_folder=out / "split", folder=out / "train", options=options, repo_folders=folders,
                      workers=workers)  # fmt: skip


def sft_data_input(
    out: Path, plan: QuickstartPlan, sandbox: str, extra: tuple[Path, ...] = ()
) -> SFTDataInput:
    """Gold demonstrations (SWE-RL answers) of the train split (and of `extra` files), in the eval's context;
    a row writing a held-out split's fixed line or function body is dropped (`repogym.train.leakage`)."""
    held_out = tuple(str(out / "split" / f"{split}.jsonl") for split in HELD_OUT_SPLITS)
    options = SFTDataOptions(
        gold="agentless",
        sandbox=sandbox,
        jobs=max(2, machine_workers()),
        held_out=held_out,
        **plan.env_options,
    )
    rows = out / "train" / "sft.jsonl"
    return SFTDataInput(
        sources=(out / "split" / "train.jsonl", *extra), options=options, rows_file=rows,
        empty_message=f"{rows}: no gold demonstration could be built from the train split",
    )  # fmt: skip


def sft_input(out: Path, plan: QuickstartPlan, base_model: str) -> SFTInput:
    decay = max(1, round(plan.sft_steps * plan.sft_decay))
    config = SFTRunConfig(
        base_model=base_model, data=str(out / "train" / "sft.jsonl"), output_dir=str(out / "train" / "sft"),
        max_steps=plan.sft_steps, learning_rate=plan.learning_rate_sft, warmup_steps=plan.sft_warmup,
        lr_scheduler_type=plan.sft_scheduler,
        batch_size=plan.sft_batch, max_length=512, save_steps=max(10, plan.sft_steps // 4), logging_steps=5,
        seed=plan.seed, report_to=[],
        trl={"lr_scheduler_kwargs": {"num_decay_steps": decay}} if plan.sft_scheduler == "warmup_stable_decay" else {},
    )  # fmt: skip
    return SFTInput(config, resume=True)


def grpo_input(out: Path, plan: QuickstartPlan, base_model: str, sandbox: str) -> GRPOInput:
    """`repogym train rl`, agentless, on the train split, from the SFT model."""
    config = RunConfig(
        base_model=base_model, output_dir=str(out / "train" / "grpo"), seed=plan.seed,
        env=EnvConfig(task_set=str(out / "split" / "train.jsonl"), mode="agentless", sandbox=sandbox,
                      options=plan.env_options),
        rollout=RolloutSettings(num_candidates=plan.grpo_generations), batch_size=plan.grpo_batch,
        total_steps=plan.grpo_steps, learning_rate=plan.learning_rate_grpo,
        grpo=GRPOSettings(max_completion_length=plan.max_reply_tokens, gradient_checkpointing=False, report_to=[],
                          beta=plan.grpo_beta, temperature=plan.grpo_temperature,
                          format_errors=plan.grpo_format_errors,
                          save_steps=max(2, plan.grpo_steps // 3)),
    )  # fmt: skip
    return GRPOInput(config)


def eval_input(
    out: Path, plan: QuickstartPlan, sandbox: str, stage: str, split: str, policy: str, sampled: bool = False
) -> EvalInput:
    """`repogym eval SPLIT --policy POLICY --mode agentless` into OUT/eval/<stage>-<split>/ (`policy`: a spec,
    `hf:MODEL_DIR` for a model); with `sampled`, `plan.sampled_attempts` attempts at GRPO's temperature with
    every pass@k, into OUT/eval/<stage>-sampled-<split>/ (stage label `<stage>-sampled`)."""
    n = plan.sampled_attempts if sampled else plan.eval_attempts
    temperature = plan.grpo_temperature if sampled else (0.0 if n == 1 else 1.0)
    label = sampled_stage(stage) if sampled else stage
    return EvalInput(EvalConfig(
        tasks=str(out / "split" / f"{split}.jsonl"), policy=PolicyConfig(spec=policy),
        out=str(out / "eval" / f"{label}-{split}"), n=n, stage=label, split=split,
        ks=tuple(range(1, n + 1)) if sampled else (),
        mode="agentless", env_options=plan.env_options, jobs=2, sandbox=sandbox,
        sampling=SamplingParams(temperature=temperature, max_tokens=plan.max_reply_tokens, seed=plan.seed),
    ))  # fmt: skip
