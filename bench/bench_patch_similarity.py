"""Print the golden table of `patch_similarity` as markdown (for docs/benchmarks.md).

Each row is a hand-made (prediction, oracle) pair from `repogym.rewards.golden`: the rule it
exercises, the expected reward (SWE-RL's reference value), the value repogym computes, and the
median time of one call. Exits 1 when any value differs from the expected one by more than 1e-9.

    .venv/bin/python bench/bench_patch_similarity.py [--repeat 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from repogym.rewards import patch_similarity
from repogym.rewards.golden import CASES, GoldenCase


def _median_us(case: GoldenCase, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        patch_similarity(
            response=case.response, code_context=case.code_context, oracle_new_content=case.oracle_new_content
        )
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=200, help="calls timed per case (median reported)")
    args = parser.parse_args(argv)
    rows = [
        "| case | rule | expected | patch_similarity | ok | µs/call | note |",
        "| --- | --- | ---: | ---: | :---: | ---: | --- |",
    ]
    failures = 0
    for case in CASES:
        value = patch_similarity(
            response=case.response, code_context=case.code_context, oracle_new_content=case.oracle_new_content
        )
        ok = value is not None and abs(value - case.expected) <= 1e-9
        failures += not ok
        note = case.note
        if case.reference is not None:
            note = f"{note}; SWE-RL gives {case.reference:.4f}".lstrip("; ")
        rows.append(
            f"| {case.name} | {case.rule} | {case.expected:.4f} | {value:.4f} | {'yes' if ok else 'NO'} "
            f"| {_median_us(case, args.repeat):.0f} | {note} |"
        )
    print("\n".join(rows))
    print(f"\n{len(CASES) - failures}/{len(CASES)} cases match (python {sys.version.split()[0]})")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
