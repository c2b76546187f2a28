"""What a `repogym grade` process costs before and around the grade: own-process CPU seconds per probe, and the
modules it imports with their `-X importtime` self times, for one or more source trees run alternately.

Probes (each a fresh `python` with the shared venv, the tree's `src` first on PYTHONPATH, run through a `-c`
wrapper that calls `repogym.cli.main` as `python -m repogym` does and writes the process's own user + system
CPU seconds at exit; the jail's processes are the process's children and are not counted):
- ``python``: the interpreter and site only (the wrapper with nothing to run);
- ``floor``: a typer app with `repogym grade`'s root option and parameters and nothing behind them, run with
  the grade's arguments: what typer (and the pydantic it builds a TypeAdapter with per parameter) costs alone;
- ``start``: `repogym.cli` imported, the grade command built as typer builds it, the grade's library imported
  (no grade);
- ``help``: `repogym grade --help`;
- ``grade``: `repogym grade TASKS --instance toy__calc-1 --gold --json` on the toy task (repogym.testing),
  its environment cached by a warm-up grade.

Each tree is byte-compiled first, as pip leaves an installed package (this machine sets
PYTHONDONTWRITEBYTECODE=1; without it every process would compile every module it imports). Copy a tree that
is not yours before, e.g. `git archive main src | tar -x -C /tmp/main-tree`.

    python bench/bench_cli_start.py cpu --src /tmp/main-tree/src --src src --rounds 9
    python bench/bench_cli_start.py imports --src src --rounds 5
"""

from __future__ import annotations

import argparse
import collections
import compileall
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import load_average, machine_line, markdown_table

_WRAPPER = """\
import atexit, os, resource, sys
def _own_cpu():
    used = resource.getrusage(resource.RUSAGE_SELF)
    with open(os.environ["BENCH_CPU_OUT"], "w") as out:
        out.write(repr(used.ru_utime + used.ru_stime))
atexit.register(_own_cpu)
probe = sys.argv[1]
sys.argv = ["repogym", *sys.argv[2:]]
if probe == "floor":
    from pathlib import Path
    import typer
    app = typer.Typer(name="repogym", no_args_is_help=True, rich_markup_mode="rich", pretty_exceptions_enable=False)
    @app.callback()
    def _root(version: bool = typer.Option(False, "--version", is_eager=True, help="Print the version.")) -> None:
        pass
    @app.command("grade")
    def grade(
        tasks_file: Path = typer.Argument(...), instance: str = typer.Option(None, "--instance", "-i"),
        patch: Path = typer.Option(None, "--patch"), gold: bool = typer.Option(False, "--gold"),
        empty: bool = typer.Option(False, "--empty"), predictions: Path = typer.Option(None, "--predictions", "-p"),
        out: Path = typer.Option(None, "--out", "-o"), workers: int = typer.Option(1, "--workers", "-j", min=1),
        repos_dir: Path = typer.Option(None, "--repos-dir"), sandbox: str = typer.Option("bwrap", "--sandbox"),
        json_out: bool = typer.Option(False, "--json"), skip_rule: str = typer.Option("auto", "--skip-rule"),
    ) -> None:
        print("{}")
    app()
elif probe == "start":
    import typer.main
    from repogym.cli import build_app
    typer.main.get_command(build_app("grade"))
    import repogym.grading.grade, repogym.grading.judge
elif probe != "python":
    from repogym.cli import main
    main()
"""

PROBES = ("python", "floor", "start", "help", "grade")


def _toy_tasks(work: Path) -> Path:
    from repogym.dataset import save_tasks
    from repogym.testing import make_toy_task

    tasks = work / "tasks.jsonl"
    save_tasks([make_toy_task(work)], tasks)
    return tasks


def _argv(probe: str, tasks: Path) -> list[str]:
    if probe == "help":
        return ["grade", "--help"]
    if probe in ("floor", "grade"):
        return ["grade", str(tasks), "--instance", "toy__calc-1", "--gold", "--json"]
    return []


def run_probe(
    src: str, probe: str, tasks: Path, work: Path, importtime: bool = False
) -> tuple[float, float, str]:
    """(own CPU seconds, wall seconds until the process ended, stderr) of one probe in a fresh process."""
    cpu_file = work / "cpu.txt"
    env = {**os.environ, "PYTHONPATH": src, "BENCH_CPU_OUT": str(cpu_file)}
    flags = ["-X", "importtime"] if importtime else []
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *flags, "-c", _WRAPPER, probe, *_argv(probe, tasks)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    wall = time.perf_counter() - started
    if probe == "grade" and json.loads(done.stdout)["outcome"] != "RESOLVED":
        raise SystemExit(
            f"the toy grade did not resolve under {src}: {done.stdout[-500:]} {done.stderr[-2000:]}"
        )
    if probe in ("floor", "help", "grade") and done.returncode != 0:
        raise SystemExit(f"{probe} failed under {src}: {done.stderr[-2000:]}")
    return float(cpu_file.read_text()), wall, done.stderr


def self_times(stderr: str) -> dict[str, int]:
    """Module -> self microseconds from `-X importtime` output."""
    found = re.findall(r"^import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)$", stderr, re.M)
    return {name: int(us) for us, name in found}


def cpu(args: argparse.Namespace, tasks: Path, work: Path) -> None:
    seconds: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
    walls: dict[str, list[float]] = collections.defaultdict(list)
    for round_ in range(args.rounds):
        # Trees alternate, and which goes first turns each round, so the load's drift falls on both.
        trees = args.src if round_ % 2 == 0 else args.src[::-1]
        for src in trees:
            for probe in PROBES:
                own, wall, _ = run_probe(src, probe, tasks, work)
                seconds[(src, probe)].append(own)
                if probe == "grade":
                    walls[src].append(wall)
    rows = [
        [
            src,
            *(f"{statistics.median(seconds[(src, p)]):.3f}" for p in PROBES),
            f"{statistics.median(seconds[(src, 'grade')]) - statistics.median(seconds[(src, 'floor')]):.3f}",
            f"{statistics.median(walls[src]):.3f}",
        ]
        for src in args.src
    ]
    print(markdown_table(["tree", *(f"{p} CPU s" for p in PROBES), "grade - floor", "grade wall s"], rows))
    if len(args.src) == 2:
        # The same round's runs of the two trees are seconds apart: a per-round ratio cancels the drift.
        series = {probe: [seconds[(src, probe)] for src in args.src] for probe in ("start", "grade")}
        series["grade wall"] = [walls[src] for src in args.src]
        for name, (first, second) in series.items():
            ratios = [b / a for a, b in zip(first, second, strict=True)]
            print(
                f"# {name}: second tree / first, median of the rounds' ratios {statistics.median(ratios):.3f}"
            )


def imports(args: argparse.Namespace, tasks: Path, work: Path) -> None:
    for src in args.src:
        runs = [
            self_times(run_probe(src, "grade", tasks, work, importtime=True)[2]) for _ in range(args.rounds)
        ]
        modules = sorted(set().union(*runs))
        by_package: collections.Counter[str] = collections.Counter()
        for name in modules:
            by_package[name.split(".")[0]] += statistics.median(run.get(name, 0) for run in runs)
        total = sum(by_package.values())
        print(f"# {src}: {len(modules)} modules imported, median self times summed {total / 1000:.1f} ms")
        rows = [[package, f"{us / 1000:.1f}"] for package, us in by_package.most_common(args.top)]
        print(markdown_table(["package", "self ms (median of runs)"], rows))
        print("# repogym modules:", " ".join(name for name in modules if name.startswith("repogym")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("cpu", "imports"))
    parser.add_argument(
        "--src", action="append", required=True, help="A source tree's src folder (repeatable)."
    )
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--top", type=int, default=20, help="imports: packages shown.")
    args = parser.parse_args()
    args.src = [str(Path(src).resolve()) for src in args.src]
    for src in args.src:
        compileall.compile_dir(Path(src) / "repogym", quiet=1)
    work = Path(tempfile.mkdtemp(prefix="bench-cli-start-"))
    os.environ.setdefault("REPOGYM_CACHE", str(work / "cache"))
    tasks = _toy_tasks(work)
    run_probe(args.src[0], "grade", tasks, work)  # warm: the toy environment is built once, then cached
    print(f"# {machine_line()}\n# load at the start {load_average()}", flush=True)
    {"cpu": cpu, "imports": imports}[args.mode](args, tasks, work)
    print(f"# load at the end {load_average()}")


if __name__ == "__main__":
    main()
