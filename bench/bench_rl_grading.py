"""Graded completions per core-second: GRPO's reward grading as it was against as it is, on the same real
completions of the tiny model, in the same run (issue 29).

1. Tasks (cached): the quickstart's data stage, one sample repository with --synth single-line bugs, every
   task validated in the sandbox.
2. Model (cached): `repogym model init --tiny` (random weights), then SFT on the tasks' gold answers in the
   quickstart's agentless setting (the buggy line rewritten, a 1-line window, the compact prompt) for
   --sft-steps: a random model writes no well-formed answer, so nothing would reach the sandbox.
3. Completions (cached per model and count): --group samples per task at temperature 1.0 (GRPO's), up to
   48 new tokens, until there are --n completions (--quick: fewer). Generating them is slow on a CPU, so they
   are made once and kept in the cache folder; their time is never part of a figure.
4. Grading, twice over the same completions in the same process: the run's own reward functions
   (`SandboxReward` over `agentless_scorer`, a thread pool of `machine_workers()`) score them in GRPO
   batches (--batch completions: groups of --group of the same task), once with every completion graded on
   its own (the grader before issue 29: `grade()` without `share_verdicts`) and once as `repogym train rl`,
   `repogym eval` and rollouts now grade (`TaskEnv._grade`: one verdict per distinct candidate over a
   runtime, grading/verdicts.py). Each pass opens its own `TaskEnvs` (fresh runtimes: no verdict crosses
   from one pass to the other); preparing them is not measured.

Core-seconds: the CPU time of this process and of every process it starts, the sandboxed test runs
included, read from a cpuacct cgroup the benchmark moves itself into. `RUSAGE_CHILDREN` alone misses the
jails (measured: a sandboxed `python` burning 9 s of CPU added 0.006 s to it; the processes inside bwrap's
pid namespace are not charged to the bwrap process we wait for). Where no cpuacct cgroup can be made (no
cgroup v1 cpuacct, not root), the rusage figures are used and a line says so: the ratio is then not the
issue's.

Identical verdicts: per completion, the outcome, SWE-bench's status, every FAIL_TO_PASS and PASS_TO_PASS
status, the compile errors, how the patch applied, the ignored paths, the tests not counted, and the reward
total (format errors: both not graded, the same reward). The last line is the issue's interface:

    graded/core-s ratio R identical K/N

    .venv/bin/python bench/bench_rl_grading.py [--quick] [--cache DIR] [--n 512]

The cache folder (default ~/.cache/repogym-bench/rl_grading, never inside the repository) holds the tasks,
the model and the completions (delete it to start over); the sandbox's environments are REPOGYM_CACHE's as
usual. A cold run builds them first (the data stage alone took 6-8 minutes on 2 busy cores: `--tasks FILE`
takes a validated task file instead; SFT 200 steps took 12 minutes at load 6); a warm --quick run grades
only (2 minutes).

Measured on 2 busy cores (load 3-4), 30 tasks, SFT 200 steps: 512 completions (480 well-formed, 92 distinct
patches): 354.1 against 72.9 core-s and 306.2 against 65.4 in two runs, ratio 4.86 and 4.68, 512/512
identical (4 minutes); --quick, 160 completions (150 well-formed, 48 distinct): ratio 2.88 and 2.99, 160/160
identical. --quick is lower because its 20 groups never meet a task twice: across GRPO steps (the full run's
64 groups over 30 tasks) the same answers come back and are not graded again. A distinct candidate's grade
costs what it did (0.5 core-s idle, 0.6-0.8 under load: 0.35 of it the test process starting Python, pytest
and its plugins); the distinct ones cost about 10% more than the average copy, being more often the failing
answers, whose tests print tracebacks.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import resource
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_average, machine_line

from repogym.config import validate_config
from repogym.env.base import TaskEnv
from repogym.grading.grade import grade
from repogym.pipeline.data import DataInput, data_stage
from repogym.pipeline.runner import SILENT
from repogym.train.rl_reward import SandboxReward, Scored, agentless_scorer
from repogym.train.rl_tasks import TaskEnvs, machine_workers
from repogym.train.sft import run_sft
from repogym.train.sft_config import SFTRunConfig
from repogym.train.sft_data import SFTDataOptions, build_sft_data, write_sft_data
from repogym.train.tiny import build_tiny_model

DEFAULT_CACHE = Path.home() / ".cache" / "repogym-bench" / "rl_grading"
ENV_OPTIONS = {
    "context": "window",
    "window_lines": 1,
    "localize": "oracle",
    "answer_format": "lines",
    "prompt_style": "compact",
}


# -- core-seconds -----------------------------------------------------------------------------------


class CoreSeconds:
    """CPU seconds of this process and everything it starts: a cpuacct cgroup of its own, else rusage."""

    def __init__(self) -> None:
        self.group: Path | None = None
        self._home: Path | None = None
        root = Path("/sys/fs/cgroup/cpuacct")
        try:
            own = next(
                line.split(":", 2)[2]
                for line in Path("/proc/self/cgroup").read_text().splitlines()
                if "cpuacct" in line.split(":", 2)[1].split(",")
            )
            home = root / own.lstrip("/")
            group = home / f"repogym-bench-rl-grading-{os.getpid()}"
            group.mkdir()
            (group / "cgroup.procs").write_text(str(os.getpid()))
            self.group, self._home = group, home
        except (OSError, StopIteration, IndexError):
            self.group = None

    @property
    def how(self) -> str:
        if self.group is not None:
            return f"cpuacct cgroup {self.group} (this process and every child, jails included)"
        return "rusage SELF + CHILDREN only (no cpuacct cgroup could be made): the jails' CPU is NOT counted"

    def now(self) -> float:
        if self.group is not None:
            return int((self.group / "cpuacct.usage").read_text()) / 1e9
        own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    def close(self) -> None:
        if self.group is None or self._home is None:
            return
        with contextlib.suppress(OSError):
            (self._home / "cgroup.procs").write_text(str(os.getpid()))
        for _ in range(50):  # the jails' last processes leave the group a little after they exit
            try:
                self.group.rmdir()
                return
            except OSError:
                time.sleep(0.1)


# -- tasks, model, completions (cached) ---------------------------------------------------------------


def tasks_file(cache: Path, synth: int) -> Path:
    out = cache / f"data-synth{synth}"
    tasks = out / "tasks.jsonl"
    if not (out / "data.json").exists():
        started = time.perf_counter()
        data_stage(DataInput(out, repos=1, synth_per_repo=synth, workers=2), SILENT)
        print(f"tasks built in {time.perf_counter() - started:.0f} s: {tasks}", file=sys.stderr)
    return tasks


def sft_model(cache: Path, tasks: Path, steps: int) -> Path:
    out = cache / f"sft-{steps}"
    model = out / "model"
    if (out / "done").exists():
        return model
    base = build_tiny_model(cache / "tiny")
    rows = out / "sft.jsonl"
    data = build_sft_data([tasks], SFTDataOptions(gold="agentless", jobs=2, **ENV_OPTIONS), rows)
    write_sft_data(data, rows)
    config = SFTRunConfig(
        base_model=str(base), data=str(rows), output_dir=str(model), max_steps=steps, learning_rate=2e-3,
        warmup_steps=0.05, lr_scheduler_type="constant_with_warmup", batch_size=8, max_length=512,
        save_steps=steps, logging_steps=max(1, steps // 4), report_to=[],
    )  # fmt: skip
    started = time.perf_counter()
    run_sft(config, resume=False)
    print(
        f"SFT: {len(data.rows)} rows, {steps} steps in {time.perf_counter() - started:.0f} s", file=sys.stderr
    )
    (out / "done").write_text("")
    return model


def completions(cache: Path, model: Path, envs: Any, count: int, group: int) -> list[dict[str, str]]:
    """`count` completions ({"instance_id", "text"}), `group` per task, tasks taken round-robin."""
    path = cache / f"completions-{model.parent.name}-{count}x{group}.jsonl"
    if path.exists():
        return [json.loads(line) for line in path.read_text().splitlines()]
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(model)
    lm = AutoModelForCausalLM.from_pretrained(model).eval()
    ids = [task.instance_id for task in envs.tasks]
    random.Random(0).shuffle(ids)
    rows: list[dict[str, str]] = []
    started = time.perf_counter()
    while len(rows) < count:
        instance_id = ids[(len(rows) // group) % len(ids)]
        prompt = tokenizer.apply_chat_template(
            envs.prompt(instance_id), add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        with torch.no_grad():
            out = lm.generate(
                **prompt, do_sample=True, temperature=1.0, top_p=1.0, max_new_tokens=48,
                num_return_sequences=group, pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
            )  # fmt: skip
        start = prompt["input_ids"].shape[1]
        for sequence in out[: count - len(rows)]:
            text = tokenizer.decode(sequence[start:], skip_special_tokens=True)
            rows.append({"instance_id": instance_id, "text": text})
    print(f"{len(rows)} completions generated in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return rows


# -- the two graders ----------------------------------------------------------------------------------


@contextlib.contextmanager
def each_graded_alone() -> Iterator[None]:
    """The grader before issue 29: every env grades its candidate with `grade()` on its own."""

    def old_grade(self: Any, patch: str) -> Any:
        return grade(self.task, patch, runtime=self.runtime, test_limits=self.grade_limits)

    current = TaskEnv._grade
    TaskEnv._grade = old_grade  # type: ignore[method-assign]
    try:
        yield
    finally:
        TaskEnv._grade = current  # type: ignore[method-assign]


def score_all(
    config: Any, rows: Sequence[dict[str, str]], batch: int, meter: CoreSeconds
) -> tuple[list[Scored], float, float, float]:
    """Every row's Scored, GRPO batch by GRPO batch; (scores, core-seconds, of which this process's own,
    wall seconds) of the scoring."""
    envs = TaskEnvs.open(config)
    scores: list[Scored] = []
    try:
        with ThreadPoolExecutor(machine_workers(), thread_name_prefix="repogym-grade") as pool:
            reward = SandboxReward(envs.reward, agentless_scorer(envs, pool))
            cpu, own, wall = meter.now(), _own_cpu(), time.perf_counter()
            for start in range(0, len(rows), batch):
                part = rows[start : start + batch]
                texts = [[{"role": "assistant", "content": row["text"]}] for row in part]
                scores += reward.scores(texts, {"instance_id": [row["instance_id"] for row in part]})
            cpu, own, wall = meter.now() - cpu, _own_cpu() - own, time.perf_counter() - wall
    finally:
        envs.close()
    return scores, cpu, own, wall


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def verdict(scored: Scored) -> tuple[Any, ...]:
    """What must be identical between the two graders (see the module docstring)."""
    grade = scored.grade
    total = round(scored.breakdown.total, 9)
    if grade is None:
        return (None, total, scored.format_error)
    return (
        grade.outcome, grade.status, tuple(grade.fail_to_pass.items()), tuple(grade.pass_to_pass.items()),
        grade.compile_errors, grade.patch_applied_with, grade.ignored_paths, tuple(grade.not_counted.items()),
        total, scored.format_error,
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer completions (--n 160), same steps")
    parser.add_argument("--n", type=int, default=None, help="completions graded (default 512; --quick 160)")
    parser.add_argument("--group", type=int, default=8, help="completions per prompt (GRPO's group)")
    parser.add_argument("--batch", type=int, default=16, help="completions per reward call (GRPO's batch)")
    parser.add_argument("--synth", type=int, default=30, help="synthetic bugs in the sample repository")
    parser.add_argument("--sft-steps", type=int, default=200)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--tasks", type=Path, default=None, help="a validated task file (default: build one)")
    args = parser.parse_args()
    count = args.n or (160 if args.quick else 512)
    args.cache.mkdir(parents=True, exist_ok=True)
    meter = CoreSeconds()
    try:
        run(args, count, meter)
    finally:
        meter.close()


def run(args: argparse.Namespace, count: int, meter: CoreSeconds) -> None:
    print(f"load average at the start: {load_average()}; core-seconds from {meter.how}", file=sys.stderr)
    tasks = args.tasks or tasks_file(args.cache, args.synth)
    model = sft_model(args.cache, tasks, args.sft_steps)
    config = validate_config({"env": {"task_set": str(tasks), "mode": "agentless", "options": ENV_OPTIONS}})
    envs = TaskEnvs.open(config)
    try:
        rows = completions(args.cache, model, envs, count, args.group)
    finally:
        envs.close()
    with each_graded_alone():
        old, old_cpu, old_own, old_wall = score_all(config, rows, args.batch, meter)
    new, new_cpu, new_own, new_wall = score_all(config, rows, args.batch, meter)
    same = sum(verdict(a) == verdict(b) for a, b in zip(old, new, strict=True))
    well_formed = [row for row, s in zip(rows, old, strict=True) if not s.format_error]
    distinct = len(
        {(row["instance_id"], s.patch) for row, s in zip(rows, new, strict=True) if not s.format_error}
    )
    resolved = sum(s.resolved for s in old)
    print(f"\n{machine_line()}; load average now {load_average()}\n")
    print(f"completions: {len(rows)} ({len(well_formed)} well-formed, {resolved} resolved, "
          f"{distinct} distinct patches graded by the new path)")  # fmt: skip
    for name, cpu, own, wall in (
        ("each graded alone", old_cpu, old_own, old_wall),
        ("one verdict per candidate", new_cpu, new_own, new_wall),
    ):
        print(f"{name:>28}: {cpu:7.1f} core-s ({own:5.1f} of them this process's own), {wall:7.1f} s wall, "
              f"{len(rows) / cpu:7.2f} graded/core-s")  # fmt: skip
    ratio = (len(rows) / new_cpu) / (len(rows) / old_cpu)
    print(f"graded/core-s ratio {ratio:.2f} identical {same}/{len(rows)}")


if __name__ == "__main__":
    main()
