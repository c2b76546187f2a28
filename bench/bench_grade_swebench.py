"""SWE-bench Lite graded by repogym: gold resolves, empty does not, a published agent's patches get SWE-bench's
verdicts, and a cached grade costs what a bare harness costs.

Data: SWE-bench Lite (the 300 test instances as published) and a published agent's predictions, both as
SWE-bench ships them; repositories are clones of the public ones under --repos-dir (owner__name folders).
Tasks are imported as a user imports them: `--specs swebench` (repogym.data: SWE-bench's per-version specs).

``verdicts``: every instance of the chosen repos is graded with its gold patch and with an empty patch, and
each prediction for them with its model patch; each grade's own log is also read the way SWE-bench's harness
reads it (its parser for the repo, its resolved rule), so repogym's verdict is compared with SWE-bench's on the
same run. Grades are appended to a JSONL file as they finish (a re-run resumes), then summarised.

``recheck``: the logs of graded rows read again by SWE-bench's own log parsers, so the comparison does not rest on
repogym's re-implementation of them: the installed ``swebench`` package's parsers and FULL rule
(repogym.grading.swebench_reading, as `repogym tasks check` reads its logs), or its published
log_parsers/python.py loaded from a folder given with --swebench-harness.

`repogym tasks check TASKS --out DIR` grades the gold and empty controls of a whole task file with a table per
repository; ``verdicts`` adds a published agent's predictions and SWE-bench's reading of every grade.

``speed``: on instances whose environment is built, each round times, in rotating order,
- ``cli``: ``repogym grade TASKS --instance ID --gold`` in a fresh process (start-up included);
- ``grade``: `repogym.grading.grade.grade` in this process (runtime prepared from the cache each time);
- ``bare``: a bare harness as SWE-bench's eval script does it: a fresh episode of the same environment and one
  jailed command, ``git apply`` the patch and the test patch, then the test command on the test patch's files;
- ``batch`` (after the per-instance rounds): ``repogym grade TASKS --predictions GOLD.jsonl`` in one fresh process
  over every chosen instance's gold patch, as SWE-bench's harness grades a predictions file, against the sum of
  the same instances' bare runs back to back, each round.

``ab``: two source trees' library grade of one instance against the bare harness, in the same minutes: one worker
process per tree (``--a-src``, ``--b-src``) and one for the bare harness, asked in turn, one grade each per round in
rotating order; figures: each side's median, its paired ratio to the bare run of the same round, the mean of its
extra seconds, and B / A. What a change to the grader costs, where a run per tree would measure the load.

``bytecode``: each instance's library grade with and without the commit's compiled bytecode (one runtime whose
layers are swapped between runs) against the bare harness without it, rotating: what compiling the tree once per
commit saves a grade (SWE-bench's images hold no bytecode of the repository either).

``reruns``: SWE-bench's eval of each chosen instance repeated, gold and empty, with PYTHONHASHSEED as SWE-bench
leaves it: how often each verdict comes out, for instances whose test runner draws a new random seed per run.

    nice -n 10 .venv/bin/python bench/bench_grade_swebench.py verdicts --lite LITE.json --preds PREDS.jsonl \\
        --repos-dir REPOS --out bench-results/swebench.jsonl [--repo sympy/sympy] [--only ID,...] \\
        [--env-file bench/swebench_offline.toml]
    nice -n 10 .venv/bin/python bench/bench_grade_swebench.py speed --lite LITE.json --repos-dir REPOS \\
        --only ID,ID --rounds 5
    .venv/bin/python bench/bench_grade_swebench.py ab --lite LITE.json --repos-dir REPOS --only ID \\
        --a-src BASELINE/src --b-src src --rounds 60
    .venv/bin/python bench/bench_grade_swebench.py bytecode --lite LITE.json --repos-dir REPOS --only ID,ID \\
        --env-file bench/swebench_offline.toml --rounds 7
    nice -n 10 .venv/bin/python bench/bench_grade_swebench.py reruns --lite LITE.json --repos-dir REPOS \
        --only sympy__sympy-13177 --runs 60
"""

from __future__ import annotations

import argparse
import compileall
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from _common import load_average, machine_line, markdown_table

import repogym
from repogym.data import apply_specs, builtin_specs
from repogym.dataset import load_tasks, save_tasks
from repogym.envfile import load_env_file
from repogym.grading.grade import grade
from repogym.grading.parsers.common import shell_join
from repogym.grading.parsers.django import parse_log_django
from repogym.grading.parsers.swebench_ids import read_printed
from repogym.grading.parsers.sympy import parse_log_sympy
from repogym.grading.swebench_reading import load_reader
from repogym.patches import changed_paths
from repogym.sandbox.base import ExecResult, Limits
from repogym.sandbox.runtime import TaskRuntime
from repogym.task import Task

DEFAULT_REPOS = ("pallets/flask", "pytest-dev/pytest", "sympy/sympy")
# SWE-bench's NON_TEST_EXTS: test patch files it does not pass to the test command.
_NON_TEST_EXTS = (".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml")


def imported_tasks(lite: Path, repos: Iterable[str], only: set[str], env_file: str | None = None) -> list[Task]:
    """Lite's instances as `repogym tasks import LITE --specs swebench [--env-file ENV_FILE]` imports them."""
    files = [builtin_specs("swebench")] + ([load_env_file(Path(env_file))] if env_file else [])
    tasks = apply_specs(load_tasks(lite), *files).tasks
    chosen = [t for t in tasks if t.repo in set(repos)]
    return [t for t in chosen if t.instance_id in only] if only else chosen


# -- SWE-bench's reading of a run ----------------------------------------------------------------------


def swebench_statuses(task: Task, log: str) -> dict[str, str]:
    """The status map SWE-bench's parser for the task's repo reads from `log`."""
    parser = task.env.log_parser
    if parser == "sympy":
        return {k: v.value for k, v in parse_log_sympy(log).items()}
    if parser == "django":
        return {k: v.value for k, v in parse_log_django(log).items()}
    return read_printed(log, parser)


def swebench_resolved(statuses: dict[str, str], task: Task) -> bool:
    """SWE-bench's FULL (harness/grading.py, v5.0.0+): F2P and P2P rates of 1, where a test passed (PASSED,
    XFAIL) or failed (FAILED, ERROR, missing), a SKIPPED F2P test failed and a SKIPPED P2P test was maintained;
    a rate over no counted test is 1."""

    def rate(tests: list[str], skipped_passes: bool) -> float:
        ok = ("PASSED", "XFAIL", "SKIPPED") if skipped_passes else ("PASSED", "XFAIL")
        passed = sum(statuses.get(t) in ok for t in tests)
        failed = sum(t not in statuses or statuses[t] in ("FAILED", "ERROR", "SKIPPED") for t in tests) - (
            sum(statuses.get(t) == "SKIPPED" for t in tests) if skipped_passes else 0
        )
        return 1.0 if passed + failed == 0 else passed / (passed + failed)

    return rate(task.FAIL_TO_PASS, False) == 1 and rate(task.PASS_TO_PASS, True) == 1


# -- verdicts ------------------------------------------------------------------------------------------------


def _done(out: Path) -> dict[tuple[str, str], dict]:
    if not out.exists():
        return {}
    rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    return {(r["instance_id"], r["kind"]): r for r in rows}


def _grade_row(task: Task, kind: str, patch: str, repos_dir: str, wall_s: float) -> dict:
    started = time.perf_counter()
    result = grade(task, patch, repos_dir=repos_dir, limits=Limits.for_timeout(wall_s))
    row = {
        "instance_id": task.instance_id,
        "kind": kind,
        "outcome": result.outcome.value,
        "status": result.status.value,
        "detail": result.detail[:600],
        "wall_s": round(time.perf_counter() - started, 2),
        "timings": {k: round(v, 3) for k, v in result.timings.items()},
        "not_counted": result.not_counted,
    }
    log = Path(result.report.log_path).read_text(errors="replace") if result.report and result.report.log_path else ""
    applied = result.patch_applied_with != "" or not patch.strip()
    row["swebench_resolved"] = bool(log) and applied and swebench_resolved(swebench_statuses(task, log), task)
    row["log_path"] = result.report.log_path if result.report else ""
    return row


def verdicts(args: argparse.Namespace) -> None:
    only = set(filter(None, (args.only or "").split(",")))
    tasks = imported_tasks(Path(args.lite), args.repo or DEFAULT_REPOS, only, args.env_file)
    predictions = {}
    if args.preds:
        for line in Path(args.preds).read_text().splitlines():
            row = json.loads(line)
            predictions[row["instance_id"]] = row.get("model_patch") or ""
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = _done(out)
    todo = [(t, k) for t in tasks for k in ("gold", "empty", "pred") if (k != "pred" or t.instance_id in predictions)]
    todo = [(t, k) for t, k in todo if (t.instance_id, k) not in done]
    print(f"{len(tasks)} tasks, {len(todo)} grades to do ({len(done)} done); load {load_average()}", flush=True)
    for index, (task, kind) in enumerate(todo, start=1):
        patch = {"gold": task.patch, "empty": "", "pred": predictions.get(task.instance_id, "")}[kind]
        row = _grade_row(task, kind, patch, args.repos_dir, args.wall_s)
        with out.open("a") as stream:
            stream.write(json.dumps(row) + "\n")
        print(f"[{index}/{len(todo)}] {task.instance_id} {kind}: {row['outcome']} "
              f"(SWE-bench: {'resolved' if row['swebench_resolved'] else 'no'}) {row['wall_s']} s", flush=True)
    summarise(tasks, _done(out), predictions)


def summarise(tasks: list[Task], done: dict[tuple[str, str], dict], predictions: dict[str, str]) -> None:
    rows = []
    for repo in sorted({t.repo for t in tasks}):
        mine = [t for t in tasks if t.repo == repo]
        gold = [done.get((t.instance_id, "gold")) for t in mine]
        empty = [done.get((t.instance_id, "empty")) for t in mine]
        rows.append([
            repo, len(mine),
            sum(1 for r in gold if r and r["outcome"] == "RESOLVED"),
            sum(1 for r in empty if r and r["outcome"] != "RESOLVED"),
            sum(1 for r in gold if r and r["outcome"] == "ENV_BUILD_FAILED"),
        ])
    print(markdown_table(["repo", "instances", "gold resolved", "empty not resolved", "env build failed"], rows))
    failures = [(t.instance_id, k, done[(t.instance_id, k)]) for t in tasks for k in ("gold", "empty")
                if (t.instance_id, k) in done
                and ((k == "gold") != (done[(t.instance_id, k)]["outcome"] == "RESOLVED"))]
    for instance_id, kind, row in failures:
        print(f"- {instance_id} {kind}: {row['outcome']}: {row['detail'][:300]}")
    preds = [done[(t.instance_id, "pred")] for t in tasks if (t.instance_id, "pred") in done]
    if preds:
        agree = sum(1 for r in preds if (r["outcome"] == "RESOLVED") == r["swebench_resolved"])
        print(f"predictions: {len(preds)} graded, repogym resolves {sum(r['outcome'] == 'RESOLVED' for r in preds)}, "
              f"SWE-bench's reading resolves {sum(r['swebench_resolved'] for r in preds)}, {agree} agree")
        for r in preds:
            if (r["outcome"] == "RESOLVED") != r["swebench_resolved"]:
                print(f"  - {r['instance_id']}: repogym {r['outcome']}, SWE-bench "
                      f"{'resolved' if r['swebench_resolved'] else 'not resolved'}: {r['detail'][:200]}")


# -- recheck: SWE-bench's own parsers on the same logs ---------------------------------------------------


def load_swebench_parsers(harness: Path) -> dict:
    """SWE-bench's MAP_REPO_TO_PARSER_PY, loaded from its log_parsers/python.py as published (a copy under
    `harness`, never vendored here), with the two names it imports from the rest of SWE-bench stubbed
    (`TestSpec` from harness/test_spec/test_spec.py before 2026, from swebench/types.py since)."""
    import enum
    import types

    class TestStatus(enum.Enum):  # SWE-bench's harness/constants TestStatus
        FAILED = "FAILED"
        PASSED = "PASSED"
        SKIPPED = "SKIPPED"
        ERROR = "ERROR"
        XFAIL = "XFAIL"

    for name, attrs in (("swebench", {}), ("swebench.harness", {}),
                        ("swebench.harness.constants", {"TestStatus": TestStatus}),
                        ("swebench.harness.test_spec", {}),
                        ("swebench.harness.test_spec.test_spec", {"TestSpec": object}),
                        ("swebench.types", {"TestSpec": object})):
        module = sys.modules.setdefault(name, types.ModuleType(name))
        module.__dict__.update(attrs)
    namespace: dict = {}
    source = (harness / "swebench_harness_log_parsers_python.py").read_text()
    exec(compile(source, str(harness / "swebench_harness_log_parsers_python.py"), "exec"), namespace)
    return namespace["MAP_REPO_TO_PARSER_PY"]


def recheck(args: argparse.Namespace) -> None:
    """Every graded row's log read again by SWE-bench's own parser for the repo, with SWE-bench's FULL rule: the
    installed package's, or (--swebench-harness) its log_parsers/python.py from a folder."""
    if args.swebench_harness:
        parsers = load_swebench_parsers(Path(args.swebench_harness))

        def official_reading(task: Task, log: str) -> bool:
            return swebench_resolved(parsers[task.repo](log, None), task)
    else:
        reader, why = load_reader()
        if reader is None:
            raise SystemExit(f"{why}; or give --swebench-harness DIR")
        print(f"# SWE-bench {reader.version}, installed", flush=True)

        def official_reading(task: Task, log: str) -> bool:
            return bool(reader.resolved(task, log))
    tasks = {t.instance_id: t for t in imported_tasks(Path(args.lite), args.repo or DEFAULT_REPOS, set(),
                                                          args.env_file)}
    done: dict[tuple[str, str], dict] = {}
    for out in args.out:
        done.update(_done(Path(out)))
    agree = disagree = unread = 0
    for (instance_id, kind), row in sorted(done.items()):
        task = tasks.get(instance_id)
        if task is None:
            continue
        log = Path(row["log_path"]).read_text(errors="replace") if row.get("log_path") else ""
        ran = bool(log) and row["outcome"] not in ("PATCH_FAILED", "ENV_BUILD_FAILED")
        official = ran and official_reading(task, log)
        if not log:
            unread += 1
        if official == (row["outcome"] == "RESOLVED") == row["swebench_resolved"]:
            agree += 1
        else:
            disagree += 1
            print(f"- {instance_id} {kind}: repogym {row['outcome']}, SWE-bench's parser "
                  f"{'resolved' if official else 'not resolved'}, bench's reading "
                  f"{'resolved' if row['swebench_resolved'] else 'not resolved'}: {row['detail'][:200]}")
    print(f"{agree + disagree} grades re-read with SWE-bench's parsers: {agree} agree on all three readings, "
          f"{disagree} do not ({unread} without a test log: patch or build failed)")
    rows = [r for r in done.values() if r["instance_id"] in tasks]
    summarise([t for t in tasks.values() if any(r["instance_id"] == t.instance_id for r in rows)], done,
              {r["instance_id"]: "" for r in rows if r["kind"] == "pred"})


# -- speed ---------------------------------------------------------------------------------------------------


def swebench_directives(task: Task) -> list[str]:
    return [p for p in changed_paths(task.test_patch) if not p.endswith(_NON_TEST_EXTS)]


def swebench_eval(task: Task, runtime: TaskRuntime, patch: str, hash_seed: str | None = "jail") -> ExecResult:
    """SWE-bench's eval script in one jailed command of a fresh episode: apply `patch` (none when empty), apply
    the test patch, run the test command on the test patch's files. `hash_seed`: "jail" keeps the jail's
    PYTHONHASHSEED=0; None unsets it, as SWE-bench's images leave it."""
    with runtime.episode(readonly_git=True) as episode:
        tests = episode.put_file("tests.diff", task.test_patch)
        steps = [f"git apply -v {episode.put_file('patch.diff', patch)}"] if patch.strip() else []
        steps += [f"git apply -v {tests}", f"{task.env.test_cmd or 'pytest -rA'} {shell_join(swebench_directives(task))}"]
        unset = "unset PYTHONHASHSEED; " if hash_seed is None else ""
        return episode.run(unset + " && ".join(steps))


def bare(task: Task, runtime: TaskRuntime) -> float:
    """The bare harness's cost: SWE-bench's eval script with the gold patch (it must resolve)."""
    started = time.perf_counter()
    result = swebench_eval(task, runtime, task.patch)
    elapsed = time.perf_counter() - started
    if result.exit_code is None or not swebench_resolved(swebench_statuses(task, result.output), task):
        raise SystemExit(f"the bare harness does not resolve {task.instance_id}: {result.output[-2000:]}")
    return elapsed


def cli(tasks_file: Path, task: Task, repos_dir: str) -> tuple[float, float]:
    """(wall seconds, seconds of it outside the jailed test run) of `repogym grade ... --gold` in a new process."""
    started = time.perf_counter()
    done = subprocess.run(
        [str(Path(sys.executable).with_name("repogym")), "grade", str(tasks_file), "--instance", task.instance_id,
         "--gold", "--repos-dir", repos_dir, "--json"],
        capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"},
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0 or json.loads(done.stdout)["outcome"] != "RESOLVED":
        raise SystemExit(f"repogym grade does not resolve {task.instance_id}: {done.stdout[-1500:]}{done.stderr[-1500:]}")
    return elapsed, elapsed - json.loads(done.stdout)["timings"].get("tests_s", 0.0)


def cli_batch(tasks_file: Path, tasks: list[Task], repos_dir: str) -> float:
    """Wall seconds of `repogym grade TASKS --predictions GOLD --out REPORT` over `tasks` in a new process."""
    folder = Path(tempfile.mkdtemp(prefix="bench-batch-"))
    preds = folder / "gold.jsonl"
    preds.write_text("".join(json.dumps({"instance_id": t.instance_id, "model_name_or_path": "gold",
                                         "model_patch": t.patch}) + "\n" for t in tasks))  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(
        [str(Path(sys.executable).with_name("repogym")), "grade", str(tasks_file), "--predictions", str(preds),
         "--out", str(folder / "report.json"), "--repos-dir", repos_dir],
        capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"},
    )
    elapsed = time.perf_counter() - started
    resolved = json.loads((folder / "report.json").read_text())["resolved_ids"] if done.returncode == 0 else []
    if sorted(resolved) != sorted(t.instance_id for t in tasks):
        raise SystemExit(f"repogym grade --predictions does not resolve every gold patch: {done.stdout[-1500:]}"
                         f"{done.stderr[-1500:]}")  # fmt: skip
    return elapsed


def library(task: Task, repos_dir: str) -> tuple[float, float]:
    """(wall seconds, seconds outside the jailed test run) of `grade(task, gold)` in this process."""
    started = time.perf_counter()
    result = grade(task, task.patch, repos_dir=repos_dir)
    if not result.resolved:
        raise SystemExit(f"grade does not resolve {task.instance_id}: {result.detail}")
    elapsed = time.perf_counter() - started
    return elapsed, elapsed - result.timings.get("tests_s", 0.0)


def speed(args: argparse.Namespace) -> None:
    # An installed package is byte-compiled (pip does it); run from a source tree with PYTHONDONTWRITEBYTECODE=1
    # (as on the benchmark machine), each `repogym grade` process would compile every module it imports first
    # (0.15 s of CPU), which no user pays.
    compileall.compile_dir(Path(repogym.__file__).parent, quiet=1)
    only = set(filter(None, (args.only or "").split(",")))
    tasks = imported_tasks(Path(args.lite), args.repo or DEFAULT_REPOS, only, args.env_file)
    tasks_file = Path(tempfile.mkdtemp(prefix="bench-swebench-")) / "tasks.jsonl"
    save_tasks(tasks, tasks_file)
    print(f"# {machine_line()}\n# load at the start {load_average()}", flush=True)
    rows = []
    for task in tasks:
        runtime = TaskRuntime.create(task, "bwrap", args.repos_dir).prepare()
        library(task, args.repos_dir)  # warm: env layers for this commit, page cache
        times: dict[str, list[float]] = {"cli": [], "grade": [], "bare": []}
        around: dict[str, list[float]] = {"cli": [], "grade": []}
        order = list(times)
        for round_ in range(args.rounds):
            for name in order[round_ % 3:] + order[: round_ % 3]:
                if name == "bare":
                    times[name].append(bare(task, runtime))
                    continue
                wall, outside = cli(tasks_file, task, args.repos_dir) if name == "cli" else library(task, args.repos_dir)
                times[name].append(wall)
                around[name].append(outside)
        med = {k: statistics.median(v) for k, v in times.items()}
        # Each round's three runs are back to back: the median of the rounds' own ratios cancels the load's
        # drift between rounds, which the ratio of the medians does not (other jobs on the machine come and go).
        paired = {k: statistics.median(a / b for a, b in zip(times[k], times["bare"], strict=True)) for k in ("grade", "cli")}
        rows.append([task.instance_id, args.rounds, f"{med['bare']:.2f}", f"{med['grade']:.2f}", f"{med['cli']:.2f}",
                     f"{med['grade'] / med['bare']:.3f}", f"{med['cli'] / med['bare']:.3f}",
                     f"{statistics.median(around['grade']):.2f}", f"{statistics.median(around['cli']):.2f}",
                     f"{paired['grade']:.3f}", f"{paired['cli']:.3f}"])
        print(rows[-1], flush=True)
    print(markdown_table(["instance", "rounds", "bare s", "grade s", "cli s", "grade / bare", "cli / bare",
                          "grade outside tests s", "cli outside tests s", "grade / bare, paired",
                          "cli / bare, paired"], rows))
    if len(tasks) > 1:
        runtimes = {t.instance_id: TaskRuntime.create(t, "bwrap", args.repos_dir).prepare() for t in tasks}
        batches, bares = [], []
        for round_ in range(args.rounds):  # alternate which goes first
            for name in ("batch", "bare") if round_ % 2 == 0 else ("bare", "batch"):
                if name == "batch":
                    batches.append(cli_batch(tasks_file, tasks, args.repos_dir))
                else:
                    bares.append(sum(bare(t, runtimes[t.instance_id]) for t in tasks))
        paired = statistics.median(a / b for a, b in zip(batches, bares, strict=True))
        print(markdown_table(["instances", "rounds", "bare, summed s", "cli batch s", "cli batch / bare, paired"],
                             [[len(tasks), args.rounds, f"{statistics.median(bares):.2f}",
                               f"{statistics.median(batches):.2f}", f"{paired:.3f}"]]))  # fmt: skip
    print(f"# load at the end {load_average()}")


def ab_worker(args: argparse.Namespace) -> None:
    """One side of `ab`: prepare the instance, grade it once (warm), print "ready", then one timed grade (or bare
    run) per line of stdin, its seconds printed."""
    task = imported_tasks(Path(args.lite), args.repo or DEFAULT_REPOS, {args.only}, args.env_file)[0]
    runtime = TaskRuntime.create(task, "bwrap", args.repos_dir).prepare()
    library(task, args.repos_dir)
    print(f"ready {Path(repogym.__file__).resolve().parent}", flush=True)
    for _ in sys.stdin:
        print(bare(task, runtime) if args.side == "bare" else library(task, args.repos_dir)[0], flush=True)


def ab(args: argparse.Namespace) -> None:
    if not args.only or "," in args.only:
        raise SystemExit("ab grades one instance: --only ID")
    sides = {"bare": args.b_src, "A": args.a_src, "B": args.b_src}
    common = [arg for arg in sys.argv[2:] if arg not in (args.a_src, args.b_src, "--a-src", "--b-src")]
    workers = {}
    for side, src in sides.items():
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(src).resolve()), str(Path(__file__).parent)])}
        workers[side] = subprocess.Popen(
            [sys.executable, __file__, "ab-worker", *common, "--side", side],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
    for side, worker in workers.items():
        assert worker.stdout is not None and worker.stdin is not None
        word, _, package = worker.stdout.readline().strip().partition(" ")
        if word != "ready":
            raise SystemExit(f"the {side} worker did not start (its stderr is above)")
        if Path(package) != Path(sides[side]).resolve() / "repogym":
            raise SystemExit(f"the {side} worker imported repogym from {package}, not from {sides[side]}")
    print(f"# {machine_line()}\n# load at the start {load_average()}", flush=True)
    times: dict[str, list[float]] = {side: [] for side in sides}
    order = list(sides)
    for round_ in range(args.rounds):
        for side in order[round_ % 3 :] + order[: round_ % 3]:
            workers[side].stdin.write("go\n")  # type: ignore[union-attr]
            workers[side].stdin.flush()  # type: ignore[union-attr]
            times[side].append(float(workers[side].stdout.readline()))  # type: ignore[union-attr]
    for worker in workers.values():
        worker.stdin.close()  # type: ignore[union-attr]
        worker.wait()
    rows = []
    for side in ("A", "B"):
        paired = statistics.median(a / b for a, b in zip(times[side], times["bare"], strict=True))
        extra = statistics.mean(a - b for a, b in zip(times[side], times["bare"], strict=True))
        rows.append([side, sides[side], f"{statistics.median(times[side]) * 1000:.1f}",
                     f"{statistics.median(times['bare']) * 1000:.1f}", f"{paired:.3f}", f"{extra * 1000:.1f}"])
    print(markdown_table(["side", "source", "grade ms", "bare ms", "grade / bare, paired", "extra ms, mean"], rows))
    b_over_a = statistics.median(b / a for a, b in zip(times["A"], times["B"], strict=True))
    print(f"B / A, paired: {b_over_a:.3f} over {args.rounds} rounds\n# load at the end {load_average()}")


def reruns(args: argparse.Namespace) -> None:
    """Each chosen instance's SWE-bench eval run --runs times per patch (gold, empty), each in a fresh episode
    with PYTHONHASHSEED as SWE-bench leaves it (unset; `--hash-seed jail` keeps the jail's 0), and read by
    SWE-bench's reading: how often it resolves, and which required tests fail how often. A test runner that
    draws its own random seed each run (sympy's bin/test) makes some instances' verdicts a draw; this says
    which, and how likely each verdict is."""
    only = set(filter(None, (args.only or "").split(",")))
    tasks = imported_tasks(Path(args.lite), args.repo or DEFAULT_REPOS, only, args.env_file)
    hash_seed = "jail" if args.hash_seed == "jail" else None
    print(f"# {machine_line()}\n# load at the start {load_average()}", flush=True)
    rows = []
    for task in tasks:
        runtime = TaskRuntime.create(task, "bwrap", args.repos_dir, limits=Limits.for_timeout(args.wall_s)).prepare()
        for kind, patch in (("gold", task.patch), ("empty", "")):
            resolved, failing, started = 0, Counter(), time.perf_counter()
            for _ in range(args.runs):
                result = swebench_eval(task, runtime, patch, hash_seed)
                statuses = swebench_statuses(task, result.output) if result.exit_code is not None else {}
                resolved += bool(statuses) and swebench_resolved(statuses, task)
                failing.update(t for t in task.FAIL_TO_PASS + task.PASS_TO_PASS
                               if statuses.get(t) not in ("PASSED", "XFAIL", "SKIPPED"))
            which = ", ".join(f"{t} {n}" for t, n in failing.most_common(6)) or "none"
            rows.append([task.instance_id, kind, args.runs, resolved, which,
                         f"{(time.perf_counter() - started) / args.runs:.1f}"])
            print(rows[-1], flush=True)
    print(markdown_table(["instance", "patch", "runs", "resolved (SWE-bench's reading)",
                          "required tests not passing: runs", "s per run"], rows))
    print(f"# load at the end {load_average()}")


def bytecode(args: argparse.Namespace) -> None:
    """Each instance's library grade with and without the commit's bytecode layer (sandbox/bytecode.py) against
    the bare harness without it (SWE-bench's image holds no bytecode of the repository), rotating, one runtime
    whose layers are swapped between runs: what compiling the tree once per commit saves a grade."""
    only = set(filter(None, (args.only or "").split(",")))
    tasks = imported_tasks(Path(args.lite), args.repo or DEFAULT_REPOS, only, args.env_file)
    print(f"# {machine_line()}\n# load at the start {load_average()}", flush=True)
    rows = []
    for task in tasks:
        runtime = TaskRuntime.create(task, "bwrap", args.repos_dir).prepare()
        compiled = runtime.commit_layers()
        if compiled.repo[0].name != "pyc":
            print(f"{task.instance_id}: no bytecode layer (Python before 3.7, or no overlayfs); skipped")
            continue
        plain = dataclasses.replace(compiled, repo=compiled.repo[1:])
        sides = {"bare": plain, "plain": plain, "compiled": compiled}
        times: dict[str, list[float]] = {side: [] for side in sides}
        order = list(sides)
        for round_ in range(args.rounds + 1):  # the first round warms the page cache and is not counted
            for side in order[round_ % 3 :] + order[: round_ % 3]:
                runtime.layers = sides[side]
                started = time.perf_counter()
                if side == "bare":
                    bare(task, runtime)
                elif not grade(task, task.patch, runtime=runtime).resolved:
                    raise SystemExit(f"grade does not resolve {task.instance_id} ({side})")
                if round_:
                    times[side].append(time.perf_counter() - started)
        runtime.layers = compiled
        ratios = [_paired(times[side], times[base]) for side, base in (("plain", "bare"), ("compiled", "bare"),
                                                                       ("compiled", "plain"))]  # fmt: skip
        rows.append([task.instance_id, args.rounds, *(f"{statistics.median(times[s]):.2f}" for s in sides),
                     *(f"{ratio:.3f}" for ratio in ratios)])  # fmt: skip
        print(rows[-1], flush=True)
    print(markdown_table(["instance", "rounds", "bare s", "grade s, no bytecode", "grade s, bytecode",
                          "no bytecode / bare", "bytecode / bare", "bytecode / no bytecode"], rows))  # fmt: skip
    print(f"# load at the end {load_average()}")


def _paired(times: list[float], base: list[float]) -> float:
    """The median of each round's own ratio (a round's runs are back to back: the load's drift cancels)."""
    return statistics.median(a / b for a, b in zip(times, base, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    for name in ("verdicts", "speed", "recheck", "reruns", "ab", "ab-worker", "bytecode"):
        mode = sub.add_parser(name)
        mode.add_argument("--lite", required=True)
        mode.add_argument("--repos-dir", required=True)
        mode.add_argument("--repo", action="append", help="Limit to this repo (repeatable).")
        mode.add_argument("--only", help="Comma-separated instance ids.")
        mode.add_argument("--env-file", help="An env file applied after the specs (bench/swebench_offline.toml).")
    sub.choices["verdicts"].add_argument("--preds")
    sub.choices["verdicts"].add_argument("--out", required=True)
    sub.choices["verdicts"].add_argument("--wall-s", type=float, default=600.0,
                                         help="Wall-clock limit per jailed command (raise it on a loaded machine).")
    sub.choices["speed"].add_argument("--rounds", type=int, default=5)
    sub.choices["bytecode"].add_argument("--rounds", type=int, default=7)
    sub.choices["ab"].add_argument("--a-src", required=True, help="The baseline's src folder (git archive REV src).")
    sub.choices["ab"].add_argument("--b-src", default=str(Path(__file__).parents[1] / "src"))
    sub.choices["ab"].add_argument("--rounds", type=int, default=60)
    sub.choices["ab-worker"].add_argument("--side", required=True)
    sub.choices["ab-worker"].add_argument("--rounds", type=int)
    sub.choices["reruns"].add_argument("--runs", type=int, default=20)
    sub.choices["reruns"].add_argument("--hash-seed", choices=("unset", "jail"), default="unset",
                                       help="unset: as SWE-bench's images leave PYTHONHASHSEED; jail: the jail's 0.")
    sub.choices["reruns"].add_argument("--wall-s", type=float, default=1800.0)
    sub.choices["recheck"].add_argument("--out", action="append", required=True, help="A verdicts JSONL.")
    sub.choices["recheck"].add_argument("--swebench-harness",
                                        help="Folder with SWE-bench's swebench_harness_log_parsers_python.py "
                                             "(default: the installed swebench package).")
    args = parser.parse_args()
    modes = {"verdicts": verdicts, "speed": speed, "recheck": recheck, "reruns": reruns, "ab": ab, "ab-worker": ab_worker,
             "bytecode": bytecode}  # fmt: skip
    modes[args.mode](args)


if __name__ == "__main__":
    main()
