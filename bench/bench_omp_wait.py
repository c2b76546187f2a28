"""Seconds per training step of the tiny model under OpenMP's wait policies, on the machine as it is.

torch's CPU kernels run on libgomp threads, which by default spin between parallel regions; on cores busy
with other work a spinning thread holds a core another thread of the same operation waits for. Each case
runs in its own process (the policy is read once, when torch is imported), in alternating order, `--rounds`
times: torch's default thread count with the default policy, with OMP_WAIT_POLICY=PASSIVE (what the
repogym CLI sets unless the user chose), and one thread. A full step (forward, backward, AdamW) on a batch of
16 x 256 tokens, as SFT runs it. Ratios are against the default, per round. The load average is printed:
this benchmark is about what other work on the cores does, so run it beside that work.

    .venv/bin/python bench/bench_omp_wait.py [--model DIR] [--rounds 3] [--steps 6]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

from _common import load_average, machine_line, markdown_table

STEP = """
import sys, time, torch
from transformers import AutoModelForCausalLM
if sys.argv[2] != "default":
    torch.set_num_threads(int(sys.argv[2]))
model = AutoModelForCausalLM.from_pretrained(sys.argv[1])
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
batch = torch.randint(0, model.config.vocab_size, (16, 256))
def step():
    model(input_ids=batch, labels=batch).loss.backward(); optimizer.step(); optimizer.zero_grad()
step()
started = time.perf_counter()
for _ in range(int(sys.argv[3])):
    step()
print((time.perf_counter() - started) / int(sys.argv[3]), torch.get_num_threads())
"""

CASES = [
    ("torch's default threads, default policy", "default", None),
    ("torch's default threads, OMP_WAIT_POLICY=PASSIVE", "default", "PASSIVE"),
    ("one thread", "1", None),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="a model folder (default: a tiny model built here)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()
    model = args.model
    if model is None:
        from repogym.train.tiny import build_tiny_model

        model = str(build_tiny_model(tempfile.mkdtemp(prefix="bench-omp-") + "/tiny"))
    print(f"# {machine_line()}\n# load at the start {load_average()}", flush=True)
    times: dict[str, list[float]] = {name: [] for name, _, _ in CASES}
    threads: dict[str, int] = {}
    for round_ in range(args.rounds):
        for name, count, policy in CASES[round_ % 3 :] + CASES[: round_ % 3]:
            env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS")}
            env |= {"OMP_WAIT_POLICY": policy} if policy else {}
            done = subprocess.run([sys.executable, "-c", STEP, model, count, str(args.steps)], env=env,
                                  capture_output=True, text=True, check=True)  # fmt: skip
            seconds, used = done.stdout.split()
            times[name].append(float(seconds))
            threads[name] = int(used)
            print(f"round {round_ + 1}: {name}: {float(seconds):.3f} s/step", flush=True)
    base = times[CASES[0][0]]
    rows = [[name, threads[name], f"{statistics.median(times[name]):.3f}",
             f"{statistics.median(t / b for t, b in zip(times[name], base, strict=True)):.2f}"]
            for name, _, _ in CASES]  # fmt: skip
    print(markdown_table(["case", "threads", "s/step (median)", "vs default, paired"], rows))
    print(f"# load at the end {load_average()}")


if __name__ == "__main__":
    main()
