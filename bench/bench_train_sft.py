"""Seconds per SFT step and per pretraining step (tokens/s) on the tiny model, and each run's peak RSS.

Each configuration runs in its own process (so its peak RSS is its own) through the library
calls `repogym train sft` and `repogym model pretrain` make, on the tiny model (1.4M parameters)
built here: SFT on 40 agentless window-context gold rows (about 220 tokens each), pretraining on
repogym's own source. Ratios are against the first row of each table (full fine-tuning, no
packing, one torch thread), measured in the same run. Runs on the machine as it is: the load
average at the start is printed, since other work on the cores changes every number.

    .venv/bin/python bench/bench_train_sft.py [--steps 20] [--threads 1,2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

SFT_CASES = [
    ("full fine-tuning", []),
    ("full fine-tuning, packing", ["packing=true"]),
    ("LoRA r=16", ["lora.r=16", "learning_rate=1e-3"]),
]


def _rows(path: Path, count: int) -> None:
    """Window-context agentless rows like `data sft --context window` writes, over distinct one-line bugs."""
    from repogym.env.context import Window, window_prompt
    from repogym.search_replace import SearchReplace, render_answer

    rows = []
    for n in range(count):
        text = f"def f{n}(a, b):\n    return a - b * {n}\n\n\ndef g{n}(x):\n    return x\n"
        prompt = window_prompt(
            f"f{n}(2, 3) is wrong.", [Window("m.py", 1, 3)], {"m.py": (2,)}, {"m.py": text}
        )
        answer = render_answer([SearchReplace("m.py", f"    return a - b * {n}", f"    return a + b * {n}")])
        rows.append(
            {"messages": [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}]}
        )
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def worker(kind: str, model: str, workdir: str, steps: int, threads: int, overrides: list[str]) -> None:
    """One measured run; prints a JSON line with its figures and peak RSS."""
    import torch

    torch.set_num_threads(threads)
    if kind == "sft":
        from repogym.train.sft import run_sft
        from repogym.train.sft_config import load_sft_config

        rows = Path(workdir) / "rows.jsonl"
        config = load_sft_config(None, [f"base_model={model}", f"data={rows}", f"output_dir={workdir}/out",
                                        f"max_steps={steps}", "batch_size=8", "max_length=512", "logging_steps=5",
                                        f"save_steps={steps}", "learning_rate=1e-3", *overrides])  # fmt: skip
        summary = run_sft(config, progress=False)
        result = {"s_per_step": summary.train_runtime_s / summary.global_step}
    else:
        from repogym.train.pretrain import PretrainConfig, pretrain

        os.environ["REPOGYM_CACHE"] = str(Path(workdir) / "cache")
        source = str(Path(__file__).resolve().parents[1] / "src" / "repogym")
        config = PretrainConfig(model, budget_minutes=steps / 60, corpus=(source,), out_dir=f"{workdir}/pre",
                                seq_len=256, batch_size=16)  # fmt: skip
        done = pretrain(config, progress=False)
        result = {"s_per_step": done.train_s / done.steps, "tokens_per_s": done.tokens / done.train_s,
                  "steps": done.steps}  # fmt: skip
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))


def _run(kind: str, model: Path, steps: int, threads: int, overrides: list[str], rows: Path) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-sft-") as workdir:
        (Path(workdir) / "rows.jsonl").write_text(rows.read_text())
        command = [sys.executable, __file__, "--worker", kind, str(model), workdir, str(steps), str(threads),
                   *overrides]  # fmt: skip
        env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=20, help="SFT steps per case (pretraining: seconds)")
    parser.add_argument("--threads", default="1,2", help="torch intra-op threads to compare")
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        kind, model, workdir, steps, threads, *overrides = args.worker
        worker(kind, model, workdir, int(steps), int(threads), overrides)
        return
    from repogym.train.tiny import build_tiny_model

    threads = [int(t) for t in args.threads.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-sft-model-") as folder:
        model = build_tiny_model(Path(folder) / "tiny")
        rows = Path(folder) / "rows.jsonl"
        _rows(rows, 40)
        print(
            f"load average at start: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores); tiny model 1.4M params\n"
        )
        print("| SFT case (batch 8, ~220 tokens/row) | torch threads | s/step | vs baseline | peak RSS MB |")
        print("| --- | ---: | ---: | ---: | ---: |")
        base = None
        for name, overrides in SFT_CASES:
            for thread_count in threads if name == SFT_CASES[0][0] else threads[:1]:
                result = _run("sft", model, args.steps, thread_count, overrides, rows)
                base = base or result["s_per_step"]
                print(f"| {name} | {thread_count} | {result['s_per_step']:.3f} | {result['s_per_step'] / base:.2f}x "
                      f"| {result['peak_rss_mb']:.0f} |", flush=True)  # fmt: skip
        print("\n| pretraining (16 x 256 tokens/step) | torch threads | s/step | tokens/s | peak RSS MB |")
        print("| --- | ---: | ---: | ---: | ---: |")
        for thread_count in threads:
            result = _run("pretrain", model, max(args.steps, 20), thread_count, [], rows)
            print(
                f"| {result['steps']} steps in {max(args.steps, 20)} s budget | {thread_count} | "
                f"{result['s_per_step']:.3f} | {result['tokens_per_s']:,.0f} | {result['peak_rss_mb']:.0f} |"
            )


if __name__ == "__main__":
    main()
