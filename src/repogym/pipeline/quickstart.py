"""`repogym quickstart`, the main job: from built-in sample repositories to a before/after table, one stage at a
time, each the library function of its own command (nothing here re-implements a stage):

1. data (`repogym.pipeline.data`): sample repos -> mine + synth -> validate -> grade -> OUT/tasks.jsonl;
2. split (`repogym tasks split --by function`): the last repository held out whole, the others' tasks split
   so that no function is on both sides -> OUT/split/;
3. model (`repogym model init` + `model pretrain`): a tiny Llama pretrained on the standard library
   within the plan's minutes, cached for the next run -> OUT/model/;
4. evals (`repogym eval`) on both held-out splits of the non-learned baseline (`--policy heuristic:swap`:
   one operator swapped in the suspicious line, what a learned figure must beat) -> OUT/eval/swap-<split>/,
   and of the model before training -> OUT/eval/baseline-<split>/;
5. (with `plan.demo_rows`) cheap demonstrations -> OUT/train/demos.jsonl;
6. SFT data (`repogym data sft`): gold demonstrations of the train split -> OUT/train/sft.jsonl;
7. SFT (`repogym train sft`) -> OUT/train/sft/; eval -> OUT/eval/sft-<split>/;
8. GRPO against the sandbox (`repogym train rl`, agentless) -> OUT/train/grpo/; eval -> OUT/eval/grpo-<split>/;
   each GRPO checkpoint greedy (the held-out curve over RL steps) -> OUT/eval/grpo-step-N-<split>/; then
   (with `plan.sampled_attempts`) both models sampled at GRPO's temperature, pass@1..pass@n ->
   OUT/eval/sft-sampled-<split>/, OUT/eval/grpo-sampled-<split>/;
9. report (`repogym report OUT`) -> OUT/report.html, redrawn on every run.

Each stage's result is recorded in its own folder (`repogym.pipeline.record`), so the same command after
Ctrl-C or a crash reads finished stages back and the unfinished one resumes its own work (evaluations from
their trajectory stores, SFT and GRPO from checkpoints). OUT/quickstart.json records the plan: a folder made
with other settings is refused, as is one written by an older repogym (one ledger of every stage).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from repogym.errors import ConfigError
from repogym.evaluate.layout import checkpoint_stage
from repogym.evaluate.report import build_report
from repogym.files import write_json
from repogym.pipeline import quickstart_inputs as inputs
from repogym.pipeline.data import data_stage
from repogym.pipeline.demos import demos_stage
from repogym.pipeline.evaluate import EvalResult, eval_stage
from repogym.pipeline.grpo import grpo_stage
from repogym.pipeline.model import model_stage
from repogym.pipeline.plan import QuickstartPlan, plan_defaults
from repogym.pipeline.record import LAYOUT, read_record
from repogym.pipeline.runner import SILENT, Hooks, PipelineError, Runner
from repogym.pipeline.sft import sft_data_stage, sft_stage
from repogym.pipeline.split import HELD_OUT_SPLITS, SplitResult, split_stage
from repogym.train.checkpoints import checkpoints, is_complete
from repogym.train.sft import quiet_library_bars

STATE_FILE = "quickstart.json"
STATE_KIND = "repogym.quickstart"
#: What the before/after table compares, in its order: the non-learned baseline (one operator swap in the
#: suspicious line, `heuristic:swap`), then the model before training, after SFT, after SFT+GRPO.
STAGES = ("swap", "baseline", "sft", "grpo")
SWAP_POLICY = "heuristic:swap"
Scores = dict[tuple[str, str], EvalResult]
"""(held-out split, stage) -> that evaluation's result."""


@dataclass(frozen=True)
class QuickstartRun:
    split: SplitResult
    scores: Scores
    report: Path


def run_quickstart(out: Path, plan: QuickstartPlan, *, workers: int = 2, sandbox: str = "bwrap",
                   hooks: Hooks = SILENT) -> QuickstartRun:  # fmt: skip
    """Every stage in order (see the module docstring); finished stages are read back, not run."""
    record_plan(out, plan)
    run = Runner(hooks)
    data = run("data", data_stage, inputs.data_input(out, plan, workers, sandbox))
    if not data.behaved:
        raise PipelineError(
            f"the pipeline did not behave as expected (see the reports above): {data.tasks} tasks, "
            f"{data.gold_resolved} resolved by their gold patch, {data.empty_resolved} by an empty one"
        )
    quiet_library_bars()  # transformers' tqdm bars (loading, writing shards) would cut into the live display
    split = run("split", split_stage, inputs.split_input(out, plan, held_out_repo=data.repos[-1]))
    scores = evaluate_splits(run, out, plan, sandbox, "swap", SWAP_POLICY)
    model = run("model", model_stage, inputs.model_input(out, plan))
    scores |= evaluate_splits(run, out, plan, sandbox, "baseline", f"hf:{model.model_dir}")
    extra: tuple[Path, ...] = ()
    if plan.demo_rows:
        demos = inputs.demos_input(out, plan, data.repos)
        run("demos", demos_stage, demos)
        extra = (demos.folder / "demos.jsonl",)
    run("sft_data", sft_data_stage, inputs.sft_data_input(out, plan, sandbox, extra))
    sft = run("sft", sft_stage, inputs.sft_input(out, plan, model.model_dir))
    scores |= evaluate_splits(run, out, plan, sandbox, "sft", f"hf:{sft.model_dir}")
    grpo = run("grpo", grpo_stage, inputs.grpo_input(out, plan, sft.model_dir, sandbox))
    scores |= evaluate_splits(run, out, plan, sandbox, "grpo", f"hf:{grpo.model_dir}")
    scores |= evaluate_around_grpo(run, out, plan, sandbox, sft.model_dir, grpo.model_dir)
    return QuickstartRun(split, scores, write_report(out))


def evaluate_splits(run: Runner, out: Path, plan: QuickstartPlan, sandbox: str, stage: str,
                    policy: str, sampled: bool = False) -> Scores:  # fmt: skip
    """`stage`'s policy (a spec: `hf:MODEL_DIR`, `heuristic:swap`) evaluated on each held-out split: greedy,
    or with `sampled` as `<stage>-sampled` (see `quickstart_inputs.eval_input`)."""
    scores: Scores = {}
    for split in HELD_OUT_SPLITS:
        given = inputs.eval_input(out, plan, sandbox, stage, split, policy, sampled)
        label = given.config.stage
        scores[(split, label)] = run(f"eval/{label}-{split}", eval_stage, given)
    return scores


def evaluate_around_grpo(run: Runner, out: Path, plan: QuickstartPlan, sandbox: str, sft_dir: str,
                         grpo_dir: str) -> Scores:  # fmt: skip
    """What is measured of GRPO beyond its model's greedy eval: every complete checkpoint greedy on each held-out
    split (stage `grpo-step-N`: the held-out curve over RL steps, which the report draws), then, with
    `plan.sampled_attempts`, the models before and after GRPO sampled as GRPO samples (pass@1..pass@n)."""
    scores: Scores = {}
    for checkpoint in (c for c in checkpoints(grpo_dir) if is_complete(c)):
        step = checkpoint.name.split("-", 1)[1]
        scores |= evaluate_splits(run, out, plan, sandbox, checkpoint_stage("grpo", step), f"hf:{checkpoint}")
    if plan.sampled_attempts:
        for stage, model_dir in (("sft", sft_dir), ("grpo", grpo_dir)):
            scores |= evaluate_splits(run, out, plan, sandbox, stage, f"hf:{model_dir}", sampled=True)
    return scores


def write_report(out: Path) -> Path:
    """`repogym report OUT --out OUT/report.html` (training curves, before/after, funnels, trajectories): cheap,
    so it is redrawn on every run and shows whatever is finished."""
    path = out / "report.html"
    build_report([out], path, max_attempts=60)
    return path


def record_plan(out: Path, plan: QuickstartPlan) -> None:
    """OUT/quickstart.json: written on the first run; a later run must bring the same plan (else the finished
    stages on disk would not be this plan's)."""
    path = out / STATE_FILE
    current = plan.to_dict()
    if not path.is_file():
        write_json(path, {"kind": STATE_KIND, "layout": LAYOUT, "plan": current})
        return
    fix = "give a new --out, or finish that run with the repogym that started it"
    # A field added to the plan since that run keeps the default it had before.
    recorded = {**plan_defaults(), **read_record(path, STATE_KIND, fix).get("plan", {})}
    if recorded != current:
        changed = sorted(k for k in current if recorded.get(k) != current[k])
        raise ConfigError(
            f"--out {out}: made by a quickstart with other settings ({', '.join(changed)} differ); rerun with "
            f"the same options to resume, or give a new --out"
        )


def before_after_rows(scores: Scores) -> list[list[str]]:
    """The closing table: one row per held-out split, a cell per stage ("pass@1 [low, high]").

    >>> before_after_rows({("heldout-repo", "baseline"): EvalResult(0.25, 0.0, 0.5, tasks=4, resolve_rate=0.25)})
    [['heldout-repo (4 tasks)', '–', '25.0% [0.0, 50.0]', '–', '–']]
    """
    rows = []
    for split in HELD_OUT_SPLITS:
        cells = [scores.get((split, stage)) for stage in STAGES]
        tasks = next((cell.tasks for cell in cells if cell), None)
        if tasks is not None:
            rows.append([f"{split} ({tasks} tasks)", *(_cell(cell) for cell in cells)])
    return rows


def _cell(cell: EvalResult | None) -> str:
    if not cell:
        return "–"
    text = f"{100 * cell.pass_at_1:.1f}%"
    if cell.low is not None:
        text += f" [{100 * cell.low:.1f}, {100 * cell.high:.1f}]"  # type: ignore[operator]
    return text
