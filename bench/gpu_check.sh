#!/usr/bin/env bash
# One short check of repogym's own loop on a GPU with a larger repogym-built model (issue 29, item 4).
#
# What it runs, each stage through repogym's library functions (the ones `repogym quickstart` and
# bench/bench_learning.py chain; nothing re-implemented):
#   1. installs the carried wheels (.whl/: trl, datasets, pydantic, gymnasium, libcst, uv, ...) into
#      /tmp/gpu-check-site; unpacks the carried bubblewrap (.gpu/debs/) where `bwrap` is missing;
#   2. the tasks: the learning benchmark's split (docs/benchmarks.md, "Learning benchmark"; its synthetic
#      tasks: 90 train, 35 held-out functions, 26 held-out repository) with their four sample repositories
#      (.gpu/repos/) and SFT rows (.gpu/data/sft.jsonl.gz); each task's env.python is set to this machine's
#      Python (the split's 3.13.0 is not here) and its repo_source to the carried repository;
#   3. a grading check: gold resolves and an empty patch does not on one task of each repository, in the
#      `bwrap` sandbox (`local` only if bwrap cannot run here: said in the log and results.json); the task
#      environments are built offline from .gpu/wheels/ (REPOGYM_WHEELS: pytest, pytest-cov, coverage,
#      setuptools, pip), then every task's environment and install layer in the background;
#   4. `model init --size medium` (~97M parameters; tokenizer trained on this machine's stdlib) and
#      `model pretrain` on its stdlib and site-packages for GPU_CHECK_PRETRAIN_MIN minutes (bf16);
#   5. SFT (`train sft`) on the benchmark's SFT rows; eval greedy and sampled (pass@1..pass@n) on both
#      held-out splits; GRPO (`train rl`, agentless, the seed's reward from real sandboxed test runs);
#      the same evals after GRPO;
#   6. $OUT/results.json (model size, step times, tokens/s, GPU memory peaks, rewards, pass@1 figures,
#      grading seconds per completion), rewritten after every stage so a timeout still returns the
#      finished part; $OUT/log.txt (everything printed, with UTC times and seconds since start); the
#      pretraining, SFT and GRPO metrics.jsonl.
#
# How to run it on the device machine (the `run` tool), from the repository root:
#   command:   bash bench/gpu_check.sh
#   carry:     [".whl", ".gpu"]
#   timeout_s: 540   (the script plans about 6 minutes, installs included; it starts the optional parts
#                     only before fixed marks: the SFT model's sampled eval by 300 s, GRPO by 360 s, the
#                     sampled eval after GRPO by 440 s, and says in results.json what it skipped)
# Here, on CPU, a smoke run of every stage (tiny model, a few steps and tasks, one thread, no network):
#   GPU_CHECK_SMALL=1 GPU_CHECK_NO_INSTALL=1 GPU_CHECK_PYTHON=.venv/bin/python \
#     GPU_CHECK_TASK_PYTHON=$(pyenv prefix 3.12.1)/bin/python3.12 OUT=/tmp/gpu-check-out \
#     unshare -n nice -n 19 bash bench/gpu_check.sh
# (GPU_CHECK_TASK_PYTHON: the task environments' interpreter, since .gpu/wheels holds cp312 wheels;
#  GPU_CHECK_BASE_MODEL=DIR starts SFT from DIR instead of init + pretrain, so that a smoke run's model
#  answers well enough for GRPO and the evals to grade real patches. Other knobs: GPU_CHECK_SIZE,
#  GPU_CHECK_PRETRAIN_MIN, GPU_CHECK_SFT_STEPS, GPU_CHECK_GRPO_STEPS; GPU_CHECK_SHORT=1 skips the sampled
#  evals and starts GRPO only before 200 s, for a second look in under 5 minutes, e.g.
#  GPU_CHECK_SHORT=1 GPU_CHECK_PRETRAIN_MIN=0.5 GPU_CHECK_SFT_STEPS=150 GPU_CHECK_GRPO_STEPS=5 bash bench/gpu_check.sh)
#
# What it needs beside the tracked tree (ignored by .git/info/exclude, carried; 35 MB in all):
#   .whl/         the wheels the device's python lacks (pip download --no-deps, cp312 manylinux);
#   .gpu/wheels/  what the task environments install (cp312); .gpu/repos/, .gpu/data/: tasks, repos,
#                 SFT rows; .gpu/debs/: Debian's bubblewrap package.
# To build both from scratch on a networked Debian machine (pinned wheels, the debs, a learning benchmark
# work folder's split, SFT rows and repositories): bash bench/gpu_payload.sh LEARN_WORK (its header says how).
{ # one compound command: bash reads the whole script before it runs any of it
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
: "${OUT:=/tmp/gpu-check-out}"
export OUT
mkdir -p "$OUT"
export GPU_CHECK_WORK=${GPU_CHECK_WORK:-/tmp/gpu-check}
rm -rf "$GPU_CHECK_WORK"
mkdir -p "$GPU_CHECK_WORK"
exec > >(tee -a "$OUT/log.txt") 2>&1
export PYTHONUNBUFFERED=1
stamp() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*"; }

PY=${GPU_CHECK_PYTHON:-python3}
stamp "gpu_check: $($PY -V 2>&1) at $(command -v "$PY"); $(nproc) cores; $(uname -m)"
SITE=/tmp/gpu-check-site
if [ -z "${GPU_CHECK_NO_INSTALL:-}" ]; then
    rm -rf "$SITE"
    if ! "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl; then
        stamp "the carried wheels did not install"
        exit 1
    fi
    export PYTHONPATH=$SITE:$ROOT/src
    export PATH=$SITE/bin:$PATH
else
    export PYTHONPATH=$ROOT/src${PYTHONPATH:+:$PYTHONPATH}
fi
export GPU_CHECK_INSTALL_S=$SECONDS
stamp "wheels installed"

if ! command -v bwrap >/dev/null; then
    # Debian's package (libc6, libselinux1 and libcap2 are what it links; libcap2 is carried too, and
    # unpacked only where the machine lacks it, so no library of the machine's own is replaced).
    ldconfig -p | grep -q 'libcap\.so\.2 ' || { dpkg -x .gpu/debs/libcap2_*.deb / && ldconfig; }
    dpkg -x .gpu/debs/bubblewrap_*.deb /
    stamp "bubblewrap unpacked from .gpu/debs"
fi
bwrap --version || stamp "no bwrap: the sandbox will be local"
chmod -R a+rX .gpu  # the jails' unprivileged uid reads the wheel folder

export REPOGYM_CACHE=$GPU_CHECK_WORK/cache
export REPOGYM_WHEELS=$ROOT/.gpu/wheels
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv

"$PY" - <<'PY'
"""The driver: every stage a repogym library call, results.json rewritten after each."""

import dataclasses
import gzip
import json
import os
import shutil
import sys
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch
import transformers
import trl

from repogym.agent.policies import PolicyConfig
from repogym.dataset import load_tasks
from repogym.files import write_json
from repogym.grading.grade import grade
from repogym.grading.report import Outcome
from repogym.pipeline import quickstart_inputs as inputs
from repogym.pipeline.evaluate import EvalInput, eval_stage
from repogym.pipeline.grpo import grpo_stage
from repogym.pipeline.model import TOKENIZER_CHARS
from repogym.pipeline.plan import make_plan
from repogym.pipeline.runner import Hooks, Runner
from repogym.pipeline.sft import sft_stage
from repogym.pipeline.split import HELD_OUT_SPLITS
from repogym.sandbox.runtime import TaskRuntime
from repogym.sandbox.cache import cache_dir
from repogym.train.corpus import load_corpus
from repogym.train.model import init_model, model_record
from repogym.train.pretrain import PretrainConfig, pretrain

START = time.monotonic() - float(os.environ.get("GPU_CHECK_INSTALL_S", "0"))  # the script's start
ROOT, OUT, WORK = Path.cwd(), Path(os.environ["OUT"]), Path(os.environ["GPU_CHECK_WORK"])
SMALL = os.environ.get("GPU_CHECK_SMALL") == "1"
CUDA = torch.cuda.is_available()
CORES = len(os.sched_getaffinity(0))
JOBS = 2 if SMALL else max(2, CORES - 2)  # GRPO's grading workers
EVAL_JOBS = 2 if SMALL else 48  # an eval's attempts in flight: the model's batch, and as many sandboxes
#: Optional work starts only before these marks (seconds since the script started), so that the whole run
#: ends inside 8 minutes even when a stage is slower than planned; what is skipped is said in results.json.
LATEST_START = {"the sampled eval of the SFT model": 300, "GRPO and the evals after it": 360,
                "the sampled eval after GRPO": 440}  # fmt: skip
if os.environ.get("GPU_CHECK_SHORT") == "1":  # a second, shorter look (under 5 minutes): no sampled evals
    LATEST_START = {"the sampled eval of the SFT model": 0, "GRPO and the evals after it": 200,
                    "the sampled eval after GRPO": 0}  # fmt: skip
if SMALL:
    torch.set_num_threads(1)


def env_number(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


SETTINGS = {
    "size": "tiny" if SMALL else os.environ.get("GPU_CHECK_SIZE", "medium"),
    "pretrain_minutes": env_number("GPU_CHECK_PRETRAIN_MIN", 0.2 if SMALL else 1.5),
    "pretrain_batch": 8 if SMALL else 64, "pretrain_seq_len": 128 if SMALL else 512,
    "pretrain_lr": 1e-3 if SMALL else 6e-4, "pretrain_chars": 1_000_000 if SMALL else 40_000_000,
    "sft_steps": int(env_number("GPU_CHECK_SFT_STEPS", 12 if SMALL else 400)), "sft_batch": 8 if SMALL else 32,
    "sft_lr": 2e-3 if SMALL else 5e-4,
    "grpo_steps": int(env_number("GPU_CHECK_GRPO_STEPS", 2 if SMALL else 8)),
    "grpo_generations": 4 if SMALL else 8, "grpo_batch": 8 if SMALL else 32, "grpo_lr": 3e-5,
    "sampled": 2 if SMALL else 4, "eval_tasks_per_split": 3 if SMALL else None, "train_tasks": 8 if SMALL else None,
    "sft_rows": 2000 if SMALL else 13_000, "grading_workers": JOBS, "eval_jobs": EVAL_JOBS,
    "latest_start_s": None if SMALL else LATEST_START, "base_model": os.environ.get("GPU_CHECK_BASE_MODEL"),
}  # fmt: skip
results: dict = {"settings": SETTINGS, "stages": {}, "eval": {}, "done": []}


def elapsed() -> float:
    return time.monotonic() - START


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S', time.gmtime())} +{elapsed():.0f}s] {message}", flush=True)


def save() -> None:
    results["wall_s"] = round(elapsed(), 1)
    write_json(OUT / "results.json", results)


def gpu_peak_gb() -> float | None:
    """The GPU memory peak since the last call (None without CUDA), then reset for the next stage."""
    if not CUDA:
        return None
    peak = torch.cuda.max_memory_allocated() / 2**30
    torch.cuda.reset_peak_memory_stats()
    return round(peak, 2)


def copy_metrics(folder: Path, name: str) -> None:
    if (folder / "metrics.jsonl").is_file():
        shutil.copy2(folder / "metrics.jsonl", OUT / name)


def read_metrics(folder: Path) -> list[dict]:
    path = folder / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


# -- machine ---------------------------------------------------------------------------------------------
results["machine"] = {
    "python": sys.version.split()[0], "torch": torch.__version__, "transformers": transformers.__version__,
    "trl": trl.__version__, "cuda": CUDA, "gpu": torch.cuda.get_device_name(0) if CUDA else None,
    "bf16": CUDA and torch.cuda.is_bf16_supported(), "cores": CORES,
    "install_s": float(os.environ.get("GPU_CHECK_INSTALL_S", "0")),
}  # fmt: skip
log(f"machine: {results['machine']}")
if not CUDA:
    log("no CUDA here: every stage runs on the CPU (a smoke run, not a GPU figure)")
save()

# -- tasks: the learning benchmark's split, pointed at the carried repos and this machine's Python ----------
task_python = os.environ.get("GPU_CHECK_TASK_PYTHON", "")  # "": the interpreter running repogym
(WORK / "split").mkdir(parents=True)
(WORK / "train").mkdir(parents=True)
for name in ("train", *HELD_OUT_SPLITS):
    rows = [json.loads(line) for line in (ROOT / ".gpu/data" / f"{name}.jsonl").read_text().splitlines()]
    limit = SETTINGS["train_tasks"] if name == "train" else SETTINGS["eval_tasks_per_split"]
    rows = rows[:limit] if limit else rows
    for row in rows:
        row["repo_source"] = str(ROOT / ".gpu/repos" / Path(row["repo_source"]).name)
        row["env"]["python"] = task_python
    (WORK / "split" / f"{name}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
with gzip.open(ROOT / ".gpu/data/sft.jsonl.gz", "rt") as rows_in, open(WORK / "train/sft.jsonl", "w") as rows_out:
    for index, line in enumerate(rows_in):
        if SETTINGS["sft_rows"] and index >= SETTINGS["sft_rows"]:
            break
        rows_out.write(line)
splits = {name: load_tasks(WORK / "split" / f"{name}.jsonl") for name in ("train", *HELD_OUT_SPLITS)}
results["tasks"] = {name: len(tasks) for name, tasks in splits.items()}
results["route"] = {
    "task_python": task_python or sys.executable, "env_wheels": os.environ.get("REPOGYM_WHEELS"),
    "note": "the split's tasks as the learning benchmark made them, but env.python set to this machine's Python "
            "(their 3.13.0 is not here) and environments built offline from the carried wheels",
}  # fmt: skip
log(f"tasks: {results['tasks']}; task python: {task_python or sys.executable}")

# -- grading check: gold resolves, empty does not, one task per repository; the sandbox chosen here --------
def check_grading(sandbox: str) -> dict:
    firsts = {}
    for task in [*splits["heldout-functions"], *splits["heldout-repo"], *splits["train"]]:
        firsts.setdefault(task.repo, task)

    def one(task):  # type: ignore[no-untyped-def]
        started = time.monotonic()
        gold = grade(task, task.patch, sandbox=sandbox)
        first_s = time.monotonic() - started
        started = time.monotonic()
        empty = grade(task, "", sandbox=sandbox)
        return task.repo, {"gold": str(gold.outcome), "empty": str(empty.outcome),
                           "first_grade_s": round(first_s, 2), "cached_env_grade_s": round(time.monotonic() - started, 2),
                           "detail": "" if gold.outcome is Outcome.RESOLVED else (gold.detail or "")[-600:]}  # fmt: skip

    with ThreadPoolExecutor(len(firsts)) as pool:
        return dict(pool.map(one, firsts.values()))


def checked(sandbox: str) -> tuple[bool, dict]:
    """(gold resolves and empty does not on every repository, what each grade said) in `sandbox`."""
    try:
        check = check_grading(sandbox)
    except Exception as exc:  # a sandbox that cannot start here raises instead of grading
        return False, {"error": f"{type(exc).__name__}: {exc}"[-2000:]}
    return all(c["gold"] == Outcome.RESOLVED and c["empty"] != Outcome.RESOLVED for c in check.values()), check


started = time.monotonic()
SANDBOX = "bwrap"
ok, check = checked(SANDBOX)
if not ok:
    log(f"grading check in bwrap failed: {json.dumps(check)[:2000]}")
    results["stages"]["grading_check_bwrap"] = check
    SANDBOX = "local"
    log("falling back to sandbox 'local' (no isolation; this machine is a disposable VM with no network)")
    warnings.filterwarnings("ignore", message="sandbox 'local' runs")  # said once here, not per runtime
    ok, check = checked(SANDBOX)
results["sandbox"] = SANDBOX
results["stages"]["grading_check"] = {"sandbox": SANDBOX, "ok": ok, "wall_s": round(time.monotonic() - started, 1),
                                      "repos": check}  # fmt: skip
log(f"grading check in sandbox {SANDBOX}: {'ok' if ok else 'FAILED'} {json.dumps(check)}")
save()
if not ok:
    raise SystemExit("the grading check failed: no figure would mean anything (see results.json)")


def prepare_all() -> None:
    """Every task's environment and install layer, while the GPU pretrains (the evals and GRPO reuse them)."""
    started = time.monotonic()
    tasks = [task for tasks in splits.values() for task in tasks]
    with ThreadPoolExecutor(max(2, CORES // 2)) as pool:
        list(pool.map(lambda task: TaskRuntime.create(task, SANDBOX).prepare(), tasks))
    results["stages"]["prepare_all"] = {"tasks": len(tasks), "wall_s": round(time.monotonic() - started, 1)}
    log(f"prepared {len(tasks)} task runtimes in {time.monotonic() - started:.0f}s")


preparing = threading.Thread(target=prepare_all, daemon=True)
preparing.start()

# -- model: init (size medium) + pretrain ------------------------------------------------------------------
plan = dataclasses.replace(
    make_plan(repos=4), seed=0, sft_steps=SETTINGS["sft_steps"], sft_batch=SETTINGS["sft_batch"],
    learning_rate_sft=SETTINGS["sft_lr"], sft_warmup=0.03, sft_scheduler="warmup_stable_decay", sft_decay=0.2,
    grpo_steps=SETTINGS["grpo_steps"], grpo_generations=SETTINGS["grpo_generations"],
    grpo_batch=SETTINGS["grpo_batch"], learning_rate_grpo=SETTINGS["grpo_lr"], grpo_temperature=1.0,
    grpo_format_errors="mask", sampled_attempts=SETTINGS["sampled"], eval_attempts=1, short_statements=True,
    max_reply_tokens=96,
)  # fmt: skip
run = Runner(Hooks(notify=log))


def init_and_pretrain() -> str:
    """`model init --size SIZE` + `model pretrain`: the pretrained model's folder."""
    started = time.monotonic()
    corpus = load_corpus(None, TOKENIZER_CHARS, plan.seed)
    init_dir = init_model(WORK / "model/init", size=SETTINGS["size"], seed=plan.seed, tokenizer_texts=corpus.texts,
                          tokenizer_corpus=corpus.describe(), max_positions=2048)  # fmt: skip
    params = model_record(init_dir)["params"]
    results["model"] = {"size": SETTINGS["size"], "params": params, "init_s": round(time.monotonic() - started, 1)}
    log(f"model init: {SETTINGS['size']}, {params:,} parameters")
    save()
    gpu_peak_gb()
    started = time.monotonic()
    pretrained = pretrain(
        PretrainConfig(model_dir=str(init_dir), out_dir=str(WORK / "model/pretrained"),
                       budget_minutes=SETTINGS["pretrain_minutes"], seed=plan.seed, seq_len=SETTINGS["pretrain_seq_len"],
                       batch_size=SETTINGS["pretrain_batch"], learning_rate=SETTINGS["pretrain_lr"],
                       max_chars=SETTINGS["pretrain_chars"], save_steps=10**6),
        progress=False,
    )  # fmt: skip
    plan_file = cache_dir("pretrain", pretrained.key[:24]) / "run/plan.json"
    pre_metrics = read_metrics(WORK / "model/pretrained")
    rates = [row["tokens_per_s"] for row in pre_metrics if "tokens_per_s" in row]
    results["stages"]["pretrain"] = {
        "wall_s": round(time.monotonic() - started, 1), "train_s": pretrained.train_s, "steps": pretrained.steps,
        "tokens": pretrained.tokens, "tokens_per_s": round(pretrained.tokens / max(pretrained.train_s, 1e-9)),
        "tokens_per_s_last_interval": rates[-1] if rates else None, "final_loss": pretrained.final_loss,
        "first_loss": pre_metrics[0].get("loss") if pre_metrics else None,
        "step_s": round(pretrained.train_s / max(pretrained.steps, 1), 4),
        "plan": json.loads(plan_file.read_text()) if plan_file.is_file() else None,
        "corpus": pretrained.corpus, "gpu_peak_gb": gpu_peak_gb(),
    }  # fmt: skip
    copy_metrics(WORK / "model/pretrained", "pretrain_metrics.jsonl")
    log(f"pretrain: {results['stages']['pretrain']}")
    save()
    return pretrained.out_dir


if SETTINGS["base_model"]:  # a smoke run's shortcut: SFT starts from a model that already answers
    base_model = SETTINGS["base_model"]
    results["model"] = {"base_model": base_model, "params": model_record(base_model).get("params")}
else:
    base_model = init_and_pretrain()

# -- SFT ---------------------------------------------------------------------------------------------------
given = inputs.sft_input(WORK, plan, base_model)
given = dataclasses.replace(given, config=given.config.model_copy(update={"save_steps": plan.sft_steps}))
started = time.monotonic()
sft = run("sft", sft_stage, given)
sft_metrics = read_metrics(Path(sft.model_dir))
tokens = max((row.get("num_tokens", 0) for row in sft_metrics), default=0)
train_s = max((row.get("wall_s", 0) for row in sft_metrics), default=0)
results["stages"]["sft"] = {
    "wall_s": round(time.monotonic() - started, 1), "steps": sft.steps, "rows": sft.rows, "final_loss": sft.final_loss,
    "step_s": round(train_s / max(sft.steps, 1), 4), "tokens_per_s": round(tokens / train_s) if train_s else None,
    "gpu_peak_gb": gpu_peak_gb(),
}  # fmt: skip
copy_metrics(Path(sft.model_dir), "sft_metrics.jsonl")
log(f"sft: {results['stages']['sft']}")
save()
preparing.join()
save()


# -- evals -------------------------------------------------------------------------------------------------
def evaluate(stage: str, model_dir: str, sampled: bool) -> None:
    for split in HELD_OUT_SPLITS:
        given = inputs.eval_input(WORK, plan, SANDBOX, stage, split, f"hf:{model_dir}", sampled)
        config = given.config
        rollout = dataclasses.replace(config.rollout, jobs=EVAL_JOBS,
                                      policy=PolicyConfig(spec=f"hf:{model_dir}", concurrency=EVAL_JOBS))  # fmt: skip
        started = time.monotonic()
        score = run(f"eval/{config.stage}-{split}", eval_stage, EvalInput(dataclasses.replace(config, rollout=rollout)))
        wall = time.monotonic() - started
        attempts = score.tasks * config.n
        results["eval"][f"{config.stage}/{split}"] = {
            **score.to_dict(), "attempts": attempts, "wall_s": round(wall, 1),
            "wall_s_per_attempt": round(wall / max(attempts, 1), 3), "gpu_peak_gb": gpu_peak_gb(),
        }  # fmt: skip
        log(f"eval {config.stage}/{split}: {results['eval'][f'{config.stage}/{split}']}")
        save()


def time_left(what: str) -> bool:
    if SMALL or elapsed() < LATEST_START[what]:
        return True
    log(f"{elapsed():.0f}s: past {LATEST_START[what]}s, {what} skipped")
    results["done"].append(f"skipped: {what}")
    save()
    return False


evaluate("sft", sft.model_dir, sampled=False)
if time_left("the sampled eval of the SFT model"):
    evaluate("sft", sft.model_dir, sampled=True)

# -- GRPO --------------------------------------------------------------------------------------------------
if time_left("GRPO and the evals after it"):
    given = inputs.grpo_input(WORK, plan, sft.model_dir, SANDBOX)
    settings = given.config.grpo.model_copy(update={"save_steps": plan.grpo_steps, "grading_workers": JOBS})
    given = dataclasses.replace(given, config=given.config.model_copy(update={"grpo": settings}))
    started = time.monotonic()
    grpo = run("grpo", grpo_stage, given)
    steps = read_metrics(Path(grpo.model_dir))

    def mean(key: str) -> float | None:
        values = [row[key] for row in steps if isinstance(row.get(key), int | float)]
        return round(sum(values) / len(values), 4) if values else None

    results["stages"]["grpo"] = {
        "wall_s": round(time.monotonic() - started, 1), "steps": grpo.steps, "reward_first": grpo.reward_first,
        "reward_last": grpo.reward_last, "rewards": [row.get("reward") for row in steps],
        "resolve_rate": [row.get("resolve_rate") for row in steps],
        "format_error_rate": [row.get("format_error_rate") for row in steps],
        **{key: mean(key) for key in ("time/step_s", "time/generate_s", "time/grade_s", "time/update_s",
                                      "time/grade_each_s", "completions/mean_length")},
        "completions_per_step": plan.grpo_batch, "grading_workers": JOBS, "gpu_peak_gb": gpu_peak_gb(),
    }  # fmt: skip
    copy_metrics(Path(grpo.model_dir), "grpo_metrics.jsonl")
    log(f"grpo: {results['stages']['grpo']}")
    save()
    evaluate("grpo", grpo.model_dir, sampled=False)
    if time_left("the sampled eval after GRPO"):
        evaluate("grpo", grpo.model_dir, sampled=True)
results["done"].append("finished")
save()
log(f"finished in {elapsed():.0f}s; results in {OUT / 'results.json'}")
PY
rc=$?
stamp "gpu_check finished (exit code $rc)"
exit $rc
}
