"""The quickstart's training half: split -> tiny model -> baseline eval -> SFT -> GRPO -> evals -> report.

It runs on the validated tasks of `repogym.quickstart`'s data stages, with the library function of
each stage's own command (nothing here re-implements a stage):

1. split (`repogym tasks split --by function`): the last sample repository is held out whole (a repo
   never trained on); the others' tasks are split so that no function is on both sides
   -> OUT/split/{train,heldout-functions,heldout-repo}.jsonl and manifest.json;
2. model (`repogym model init --tiny` + `model pretrain`): a random tiny Llama with a BPE trained on
   local Python source, pretrained on the standard library and site-packages (never on the sample
   repos) within the plan's minutes, cached under $REPOGYM_CACHE/pretrain for the next run;
3. baseline eval (`repogym eval`) on both held-out splits -> OUT/eval/baseline-<split>/;
4. SFT data (`repogym data sft`): gold demonstrations of the train split -> OUT/train/sft.jsonl;
5. SFT (`repogym train sft`) -> OUT/train/sft/; eval -> OUT/eval/sft-<split>/;
6. GRPO against the sandbox (`repogym train rl`, agentless) -> OUT/train/grpo/; eval -> OUT/eval/grpo-<split>/;
7. report (`repogym report OUT`) -> OUT/report.html.

Every stage answers in the agentless format over a 3-line window located by the gold patch (perfect
fault localization: the tiny model is told where the bug is, as the quickstart's README says), by
default with the suspicious line rewritten (`answer_format="lines"`, `repogym.env.lines_answer`).
OUT/quickstart.json records each finished stage (`FlywheelState`), so rerunning after Ctrl-C or a
crash skips them; evaluations resume from their trajectory stores, SFT and GRPO from checkpoints.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repogym.dataset import load_tasks, save_tasks
from repogym.errors import ConfigError, RepogymError
from repogym.files import write_json
from repogym.quickstart_plan import QuickstartPlan, plan_defaults
from repogym.train.flywheel import FlywheelState
from repogym.train.mutation_demos import shorten_statements

STATE_FILE = "quickstart.json"
SPLITS = ("heldout-functions", "heldout-repo")
STAGES = ("baseline", "sft", "grpo")
Notify = Callable[[str], None]


class QuickstartError(RepogymError):
    """The pipeline produced something a later stage cannot use (e.g. an empty split)."""


@dataclass
class LoopHooks:
    """How the loop reports progress (the CLI fills these with rich displays; the defaults are silent)."""

    notify: Notify = lambda _: None
    evaluate: Callable[[Any], dict[str, Any]] | None = None
    """Runs one `EvalConfig` and returns its summary (default: `repogym.evaluate.run.run_eval`)."""
    bars: bool = False
    """Let the trainers draw their own rich bars (pretrain, SFT, GRPO)."""


@dataclass
class LoopResult:
    split_counts: dict[str, int]
    scores: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    """(split, stage) -> {pass@1, low, high, tasks}."""
    stages: dict[str, Any] = field(default_factory=dict)
    report: Path | None = None


def open_state(out: Path, plan: QuickstartPlan) -> FlywheelState:
    """OUT/quickstart.json; refuses a folder made with other settings (its finished stages would not match)."""
    state = FlywheelState(out / STATE_FILE)
    recorded = state.stages.get("plan")
    current = plan.to_dict()
    if recorded is not None:
        recorded = {**plan_defaults(), **recorded}  # a field added since: the default it had before
    if recorded is not None and recorded != current:
        changed = sorted(k for k in current if recorded.get(k) != current[k])
        raise ConfigError(
            f"--out {out}: made by a quickstart with other settings ({', '.join(changed)} differ); rerun with "
            f"the same options to resume, or give a new --out"
        )
    state.run("plan", lambda: current, lambda _: None)
    return state


def run_loop(out: Path, plan: QuickstartPlan, repos: list[str], sandbox: str, state: FlywheelState,
             hooks: LoopHooks) -> LoopResult:  # fmt: skip
    """Every stage after the data (see the module docstring); finished stages are skipped."""
    from repogym.train.sft import quiet_library_bars

    quiet_library_bars()  # transformers' tqdm bars (loading, writing shards) would cut into the rich display
    notify = hooks.notify
    counts = state.run("split", lambda: split_stage(out, plan, repos[-1]), notify)
    result = LoopResult(split_counts=counts)
    model = state.run("model", lambda: model_stage(out, plan, hooks.bars), notify)
    policies = {"baseline": model["model_dir"]}
    evaluate_stage(out, plan, sandbox, state, hooks, "baseline", policies["baseline"], result)
    extra = []
    if plan.demo_rows:
        state.run("demos", lambda: demos_stage(out, plan, repos), notify)
        extra = [out / "train" / "demos.jsonl"]
    state.run("sft_data", lambda: sft_data_stage(out, plan, sandbox, extra=extra), notify)
    sft = state.run("sft", lambda: sft_stage(out, plan, model["model_dir"], hooks.bars), notify)
    evaluate_stage(out, plan, sandbox, state, hooks, "sft", sft["model_dir"], result)
    grpo = state.run("grpo", lambda: grpo_stage(out, plan, sft["model_dir"], sandbox, hooks), notify)
    evaluate_stage(out, plan, sandbox, state, hooks, "grpo", grpo["model_dir"], result)
    result.report = report_stage(out)  # always redrawn: cheap, and it shows whatever is finished
    result.stages = dict(state.stages)
    return result


def split_stage(out: Path, plan: QuickstartPlan, held_out_repo: str) -> dict[str, int]:
    """Train / held-out functions / held-out repo (see the module docstring)."""
    from repogym.synth.split import split_tasks

    tasks = list(load_tasks(out / "tasks.jsonl"))
    if plan.short_statements:
        tasks = shorten_statements(tasks)
    repo_tasks = [task for task in tasks if task.repo == held_out_repo and _evaluated(task, plan)]
    rest = [task for task in tasks if task.repo != held_out_repo]
    if not repo_tasks or len(rest) < 2:
        raise QuickstartError(
            f"{out / 'tasks.jsonl'}: {len(repo_tasks)} task(s) of the held-out repository {held_out_repo} and "
            f"{len(rest)} of the others; both splits need tasks (raise --repos or the synth bugs per repo)"
        )
    split = split_tasks(rest, "function", ratio=plan.split_ratio, seed=plan.seed)
    # Held-out tasks of other methods are dropped, not moved to train: their functions are held out.
    tested = [task for task in split.test if _evaluated(task, plan)]
    if not split.train or not tested:
        raise QuickstartError(f"split by function: {len(split.train)} train / {len(tested)} held-out tasks")
    folder = out / "split"
    save_tasks(list(split.train), folder / "train.jsonl")
    save_tasks(tested, folder / "heldout-functions.jsonl")
    save_tasks(repo_tasks, folder / "heldout-repo.jsonl")
    write_json(folder / "manifest.json", {**split.manifest, "held_out_repo": held_out_repo})
    return {"train": len(split.train), "heldout-functions": len(tested), "heldout-repo": len(repo_tasks)}


def _evaluated(task: Any, plan: QuickstartPlan) -> bool:
    """Whether a held-out task is evaluated: every task, or only synthetic ones of `plan.eval_methods`."""
    return not plan.eval_methods or task.metadata.get("method") in plan.eval_methods


def model_stage(out: Path, plan: QuickstartPlan, bars: bool) -> dict[str, Any]:
    """`model init --tiny` (deterministic, so the pretraining cache key repeats) then `model pretrain`."""
    from repogym.train.corpus import load_corpus
    from repogym.train.model import init_model
    from repogym.train.pretrain import PretrainConfig, pretrain

    start = out / "model" / "init"
    corpus = load_corpus(None, 2_000_000, plan.model_seed)
    init_model(start, size="tiny", seed=plan.model_seed, tokenizer_texts=corpus.texts, tokenizer_corpus=corpus.describe(),
               max_positions=2048)  # fmt: skip
    config = PretrainConfig(
        model_dir=str(start), out_dir=str(out / "model" / "pretrained"), budget_minutes=plan.pretrain_minutes,
        seed=plan.model_seed, max_chars=2_000_000 if plan.fast else 6_000_000,
    )  # fmt: skip
    result = pretrain(config, progress=bars)
    return {"model_dir": result.out_dir, "cached": result.cached, "steps": result.steps,
            "final_loss": result.final_loss, "train_s": result.train_s}  # fmt: skip


def demos_stage(out: Path, plan: QuickstartPlan, repos: list[str], workers: int = 2,
                repos_root: Path | None = None) -> dict[str, Any]:  # fmt: skip
    """Cheap demonstrations (`repogym.train.mutation_demos`): synth's methods in the training repositories'
    other functions and in the standard library -> OUT/train/demos.jsonl. Nothing held out is used: the
    held-out repository is skipped, held-out functions are left out, and a corpus demo that writes a
    held-out task's fixed line is dropped."""
    from repogym.files import write_jsonl
    from repogym.synth.locate import task_locations
    from repogym.train.mutation_demos import DemoOptions, DemoReport, build_demos, repo_demos

    held_out = [task for split in SPLITS for task in load_tasks(out / "split" / f"{split}.jsonl")]
    banned = {location for task in held_out for location in task_locations(task)}
    methods = plan.eval_methods or DemoOptions().methods
    options = DemoOptions(methods=tuple(methods), max_rows=plan.demo_rows, seed=plan.seed,
                          answer_format=plan.answer_format, prompt_style=plan.prompt_style)  # fmt: skip
    corpus_path = out / "train" / "demos-corpus.jsonl"
    corpus = build_demos(corpus_path, options, held_out=held_out, workers=workers)
    report = DemoReport()
    root = repos_root or out / "repos"
    folders = [root / repo.split("/", 1)[1] for repo in repos[:-1]]  # the last one is held out whole
    rows = repo_demos([f for f in folders if f.is_dir()], options, banned, report)
    from repogym.files import read_jsonl_records

    write_jsonl(out / "train" / "demos.jsonl", [*rows, *read_jsonl_records(corpus_path)])
    return {
        "repo_rows": len(rows),
        "corpus_rows": corpus.rows,
        "corpus": corpus.to_dict(),
        "repos": report.to_dict(),
    }


def sft_data_stage(out: Path, plan: QuickstartPlan, sandbox: str, extra: list[Path] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    """Gold demonstrations (SWE-RL answers) of the train split (and of `extra` task files), in the eval's context."""
    from repogym.train.rl_tasks import machine_workers
    from repogym.train.sft_data import SFTDataOptions, build_sft_data, write_sft_data

    options = SFTDataOptions(gold="agentless", sandbox=sandbox, jobs=max(2, machine_workers()),
                             **plan.env_options)  # fmt: skip
    path = out / "train" / "sft.jsonl"
    data = build_sft_data([out / "split" / "train.jsonl", *extra], options, path)
    if not data.rows:
        raise QuickstartError(f"{path}: no gold demonstration could be built from the train split")
    write_sft_data(data, path)
    return {"rows": len(data.rows)}


def sft_stage(out: Path, plan: QuickstartPlan, base_model: str, bars: bool) -> dict[str, Any]:
    from repogym.train.sft import run_sft
    from repogym.train.sft_config import SFTRunConfig

    config = SFTRunConfig(
        base_model=base_model, data=str(out / "train" / "sft.jsonl"), output_dir=str(out / "train" / "sft"),
        max_steps=plan.sft_steps, learning_rate=plan.learning_rate_sft, warmup_steps=plan.sft_warmup,
        lr_scheduler_type=plan.sft_scheduler,
        batch_size=plan.sft_batch, max_length=512, save_steps=max(10, plan.sft_steps // 4), logging_steps=5,
        seed=plan.seed, report_to=[],
        trl={"lr_scheduler_kwargs": {"num_decay_steps": max(1, round(plan.sft_steps * plan.sft_decay))}}
        if plan.sft_scheduler == "warmup_stable_decay" else {},
    )  # fmt: skip
    summary = run_sft(config, resume=True, progress=bars)
    return {"model_dir": summary.output_dir, "steps": summary.global_step, "final_loss": summary.final_loss,
            "rows": summary.rows}  # fmt: skip


def grpo_stage(
    out: Path, plan: QuickstartPlan, base_model: str, sandbox: str, hooks: LoopHooks
) -> dict[str, Any]:
    from repogym.config import validate_config
    from repogym.train.grpo import train_rl

    config = validate_config({
        "base_model": base_model, "output_dir": str(out / "train" / "grpo"), "seed": plan.seed,
        "env": {"task_set": str(out / "split" / "train.jsonl"), "mode": "agentless", "sandbox": sandbox,
                "options": plan.env_options},
        "rollout": {"num_candidates": plan.grpo_generations}, "batch_size": plan.grpo_batch,
        "total_steps": plan.grpo_steps, "learning_rate": plan.learning_rate_grpo,
        "grpo": {"max_completion_length": plan.max_reply_tokens, "gradient_checkpointing": False, "report_to": [],
                 "beta": plan.grpo_beta, "temperature": plan.grpo_temperature,
                 "save_steps": max(2, plan.grpo_steps // 3)},
    })  # fmt: skip
    result = train_rl(config, resume=True, notify=hooks.notify, progress=hooks.bars)
    rewards = [row["reward"] for row in result.metrics if isinstance(row.get("reward"), int | float)]
    return {"model_dir": str(result.model_dir), "steps": result.global_step,
            "reward_first": rewards[0] if rewards else None, "reward_last": rewards[-1] if rewards else None}  # fmt: skip


def eval_config(out: Path, plan: QuickstartPlan, sandbox: str, stage: str, split: str, model_dir: str) -> Any:
    """`repogym eval SPLIT --policy hf:MODEL --mode agentless` into OUT/eval/<stage>-<split>/."""
    from repogym.agent.policies import PolicyConfig, SamplingParams
    from repogym.evaluate.run import EvalConfig

    greedy = plan.eval_attempts == 1
    return EvalConfig(
        tasks=str(out / "split" / f"{split}.jsonl"), policy=PolicyConfig(spec=f"hf:{model_dir}"),
        out=str(out / "eval" / f"{stage}-{split}"), n=plan.eval_attempts, stage=stage, split=split,
        mode="agentless", env_options=plan.env_options, jobs=2, sandbox=sandbox,
        sampling=SamplingParams(temperature=0.0 if greedy else 1.0, max_tokens=plan.max_reply_tokens, seed=plan.seed),
    )  # fmt: skip


def evaluate_stage(out: Path, plan: QuickstartPlan, sandbox: str, state: FlywheelState, hooks: LoopHooks, stage: str,
           model_dir: str, result: LoopResult) -> None:  # fmt: skip
    from repogym.evaluate.run import run_eval

    evaluate = hooks.evaluate or run_eval
    for split in SPLITS:
        config = eval_config(out, plan, sandbox, stage, split, model_dir)
        summary = state.run(
            f"eval/{stage}-{split}", lambda config=config: _score(evaluate(config)), hooks.notify
        )
        result.scores[(split, stage)] = summary


def _score(summary: dict[str, Any]) -> dict[str, Any]:
    low, high = summary.get("intervals", {}).get("pass@1", (None, None))
    return {"pass@1": summary["pass@1"], "low": low, "high": high, "tasks": summary["tasks"]}


def report_stage(out: Path) -> Path:
    """`repogym report OUT --out OUT/report.html` (training curves, before/after, funnels, trajectories)."""
    from repogym.evaluate.report import build_report

    path = out / "report.html"
    build_report([out], path, max_attempts=60)
    return path


def before_after_rows(scores: dict[tuple[str, str], dict[str, Any]]) -> list[list[str]]:
    """The closing table: one row per held-out split, a cell per stage ("pass@1 [low, high]").

    >>> before_after_rows({("heldout-repo", "baseline"): {"pass@1": 0.25, "low": 0.0, "high": 0.5, "tasks": 4}})
    [['heldout-repo (4 tasks)', '25.0% [0.0, 50.0]', '–', '–']]
    """
    rows = []
    for split in SPLITS:
        cells = [scores.get((split, stage)) for stage in STAGES]
        if not any(cells):
            continue
        tasks = next(cell["tasks"] for cell in cells if cell)
        rows.append([f"{split} ({tasks} tasks)", *(_cell(cell) for cell in cells)])
    return rows


def _cell(cell: dict[str, Any] | None) -> str:
    if not cell:
        return "–"
    text = f"{100 * cell['pass@1']:.1f}%"
    if cell.get("low") is not None:
        text += f" [{100 * cell['low']:.1f}, {100 * cell['high']:.1f}]"
    return text
