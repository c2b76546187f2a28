"""bench_synth's checks through the CLI, as a user runs them: `repogym grade --gold` / `--empty` on drawn
tasks (journaled per verdict) and `repogym tasks split --by function` (disjoint, reproducible from the seed).
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

from _synth_journal import Journal

from repogym.dataset import load_tasks
from repogym.locate import task_locations
from repogym.task import Task


def grade_sample(tasks_file: Path, tasks: list[Task], count: int, seed: int, journal: Journal) -> list[str]:
    """`repogym grade --gold` and `--empty` on `count` tasks drawn with the seed, one journal line per
    verdict; pairs the journal already holds are not graded again. Returns the drawn ids."""
    picked = random.Random(seed).sample(tasks, min(count, len(tasks)))
    done = {(row["instance_id"], row["flag"]) for row in journal.read("grade")}
    repogym = [str(Path(sys.executable).with_name("repogym"))]
    for task in picked:
        for flag in ("gold", "empty"):
            if (task.instance_id, flag) in done:
                continue
            finished = subprocess.run(
                [*repogym, "grade", str(tasks_file), "--instance", task.instance_id, f"--{flag}", "--json"],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            resolved = (
                json.loads(finished.stdout).get("resolved")
                if finished.stdout.strip().startswith("{")
                else None
            )
            journal.append("grade", {"instance_id": task.instance_id, "flag": flag, "resolved": resolved,
                                     "returncode": finished.returncode})  # fmt: skip
    return [t.instance_id for t in picked]


def split_check(tasks_file: Path, seed: int) -> dict:
    """`repogym tasks split --by function` through the CLI: disjoint by function, reproducible from the seed."""
    repogym = str(Path(sys.executable).with_name("repogym"))
    folders = {}
    for tag, use in (("a", seed), ("b", seed), ("other", seed + 1)):
        folder = tasks_file.with_name(f"{tasks_file.stem}-split-{tag}")
        shutil.rmtree(folder, ignore_errors=True)
        subprocess.run(
            [repogym, "tasks", "split", str(tasks_file), "--by", "function", "--ratio", "0.8",
             "--out-dir", str(folder), "--seed", str(use)],
            check=True, capture_output=True,
        )  # fmt: skip
        folders[tag] = folder

    def functions(path: Path) -> set[tuple]:
        return {(t.repo, *loc) for t in load_tasks(path) for loc in task_locations(t)}

    train, test = functions(folders["a"] / "train.jsonl"), functions(folders["a"] / "test.jsonl")
    same = all(
        (folders["a"] / name).read_bytes() == (folders["b"] / name).read_bytes()
        for name in ("train.jsonl", "test.jsonl", "manifest.json")
    )
    other = (folders["a"] / "test.jsonl").read_bytes() != (folders["other"] / "test.jsonl").read_bytes()
    counts = json.loads((folders["a"] / "manifest.json").read_text())["counts"]
    return {
        **counts,
        "train_functions": len(train),
        "test_functions": len(test),
        "functions_on_both_sides": len(train & test),
        "same_seed_identical": same,
        "other_seed_differs": other,
    }
