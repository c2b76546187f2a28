"""A/B of the per-command and per-episode cost of two repogym source trees on the same machine, interleaved.

Benchmarks run one after another see different load on a shared machine; this one starts one worker
process per tree (each with its own private REPOGYM_CACHE and the same generated repo from
bench/_common.py), then asks them in turn, one operation at a time (which goes first alternates), so
that load hits both alike. Operations: `true` in an episode (the fixed cost of a command), ten test
files (310 tests), and a fresh episode plus its close. Figures: each side's median and the median of
the paired ratios (B / A).

    .venv/bin/python bench/bench_ab.py --a-src /path/to/baseline/src [--b-src src] [--runs 40]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

_TEN_FILES = "python -m pytest -q -p no:cacheprovider " + " ".join(
    f"tests/test_pkg{i:02d}.py" for i in range(10, 20)
)
_OPERATIONS = {
    "true": "`true` in an episode",
    "tests": "ten test files (310 tests)",
    "episode": "fresh episode + close",
}


def worker() -> None:
    """Prepare a runtime and an episode, then time one operation per line of stdin."""
    sys.path.insert(0, str(Path(__file__).parent))
    from _common import big_task, make_big_repo, private_cache

    from repogym.sandbox.runtime import TaskRuntime

    with private_cache() as scratch:
        repo = make_big_repo(scratch / "src")
        runtime = TaskRuntime.create(big_task(repo), "bwrap").prepare()
        episode = runtime.episode()
        print(json.dumps({"ready": True}), flush=True)
        for line in sys.stdin:
            operation = line.strip()
            started = time.perf_counter()
            if operation == "episode":
                runtime.episode().close()
                ok = True
            else:
                ok = episode.run("true" if operation == "true" else _TEN_FILES).ok
            print(json.dumps({"s": time.perf_counter() - started, "ok": ok}), flush=True)
        episode.close()


def _start(src: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(src).resolve())}
    process = subprocess.Popen(
        [sys.executable, __file__, "--worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    if not json.loads(process.stdout.readline()).get("ready"):
        raise SystemExit(f"worker for {src} did not start")
    return process


def _ask(process: subprocess.Popen[str], operation: str) -> float:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(operation + "\n")
    process.stdin.flush()
    answer = json.loads(process.stdout.readline())
    if not answer["ok"]:
        raise SystemExit(f"{operation} failed in a worker")
    return float(answer["s"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a-src", default="", help="the baseline tree's src folder (required)")
    parser.add_argument("--b-src", default=str(Path(__file__).resolve().parent.parent / "src"))
    parser.add_argument(
        "--runs", type=int, default=40, help="pairs of `true` and of episodes (tests: a quarter)"
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker()
        return 0
    if not args.a_src:
        parser.error("--a-src is required")
    sys.path.insert(0, str(Path(__file__).parent))
    from _common import machine_line, markdown_table, ms

    sides = {"A": _start(args.a_src), "B": _start(args.b_src)}
    rows = []
    for operation, label in _OPERATIONS.items():
        count = max(2, args.runs // 4) if operation == "tests" else args.runs
        timings: dict[str, list[float]] = {"A": [], "B": []}
        for index in range(count):
            for side in ("A", "B") if index % 2 == 0 else ("B", "A"):
                timings[side].append(_ask(sides[side], operation))
        paired = statistics.median(b / a for a, b in zip(timings["A"], timings["B"], strict=True))
        rows.append(
            [
                label,
                count,
                ms(statistics.median(timings["A"])),
                ms(statistics.median(timings["B"])),
                f"{paired:.2f}x",
            ]
        )
    for process in sides.values():
        assert process.stdin is not None
        process.stdin.close()
        process.wait()
    print(f"### A/B: A = {args.a_src}, B = {args.b_src}\n\n{machine_line()}\n")
    print(markdown_table(["operation", "pairs", "A p50 ms", "B p50 ms", "median paired ratio B / A"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
