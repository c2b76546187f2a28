"""bench_synth's journal: what a run has measured, one JSONL line at a time, so a stopped run keeps it.

Every figure of `bench/bench_synth.py` is appended to a file under `--work` the moment it is measured
(repogym.files.append_jsonl: fsynced, a torn last line skipped on reading), and the summary is built
from those files, never from memory:

- `<target>-phases.jsonl`: a `start` and an `end` line per phase (synth, validate) and attempt, with
  wall and CPU seconds; the synth end line holds the funnels and the repository of each candidate;
- `<target>-naive.jsonl`: one line per naive mutant (verdict, wall and CPU seconds) and one per
  environment prepared for it;
- `<target>-grade.jsonl`: one line per graded (task, --gold or --empty);
- `poll.jsonl`: every 30 s the phase under way, its CPU so far and the load average, so a phase that
  was stopped (timeout, SIGTERM) still has its CPU seconds up to the last poll.

A rerun with the same --work resumes: synth is not redone once it ended, validate resumes from its own
partial file (repogym.validate), and finished naive mutants and grades are not run again. A phase run
in several attempts counts the sum of its attempts. `report` turns the summaries into markdown tables.
"""

from __future__ import annotations

import datetime
import os
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from _common import machine_line, markdown_table

from repogym.files import append_jsonl, read_jsonl_records

POLL_EVERY_S = float(os.environ.get("BENCH_SYNTH_POLL_S", "30"))  # shorter only to try a stop out


class Journal:
    """The append-only files of one target under --work, and the attempt (this process) writing them."""

    attempt = f"{os.getpid()}-{int(time.time())}"

    def __init__(self, work: Path, target: str) -> None:
        self.work, self.target = work, target

    def path(self, kind: str) -> Path:
        return self.work / f"{self.target}-{kind}.jsonl"

    def read(self, kind: str) -> list[dict[str, Any]]:
        return list(read_jsonl_records(self.path(kind)))

    def append(self, kind: str, record: dict[str, Any]) -> None:
        append_jsonl(self.path(kind), {"attempt": self.attempt, "at": _now(), **record})

    def ended(self, phase: str) -> dict[str, Any] | None:
        """The last end line of a phase that finished in some attempt, else None."""
        ends = [r for r in self.read("phases") if r.get("phase") == phase and r.get("event") == "end"]
        return ends[-1] if ends else None

    def phase_cost(self, phase: str) -> dict[str, Any]:
        """Wall and CPU seconds of a phase over its attempts; an attempt with no end line counts to its last poll."""
        polls: dict[str, dict] = {}
        for poll in read_jsonl_records(self.work / "poll.jsonl"):
            if poll.get("target") == self.target and poll.get("phase") == phase:
                polls[poll["attempt"]] = poll
        ends = {
            r["attempt"]: r
            for r in self.read("phases")
            if r.get("phase") == phase and r.get("event") == "end"
        }
        starts = [
            r["attempt"] for r in self.read("phases") if r.get("phase") == phase and r.get("event") == "start"
        ]
        wall = cpu = 0.0
        interrupted = 0
        for attempt in dict.fromkeys(starts):
            last = ends.get(attempt) or polls.get(attempt) or {"wall_s": 0.0, "cpu_s": 0.0}
            interrupted += attempt not in ends
            wall, cpu = wall + last["wall_s"], cpu + last["cpu_s"]
        return {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "attempts": len(set(starts)),
                "interrupted_attempts": interrupted}  # fmt: skip


class Poller:
    """A daemon thread appending the phase under way, its CPU so far and the load average every 30 s."""

    _shared: Poller | None = None

    @classmethod
    def shared(cls, work: Path, meter: Any) -> Poller:
        """The process's one poller (one thread, whatever the number of targets)."""
        if cls._shared is None:
            cls._shared = cls(work, meter)
        return cls._shared

    def __init__(self, work: Path, meter: Any) -> None:
        self.file, self.meter = work / "poll.jsonl", meter
        self.current: tuple[Journal, str, float, float] | None = None
        self.lock = threading.Lock()
        threading.Thread(target=self._loop, daemon=True, name="bench-poll").start()

    def run(self, journal: Journal, phase: str, fn, *args, extra=None, **kwargs):  # type: ignore[no-untyped-def]
        """fn(*args, **kwargs) as a phase: a start line, polls while it runs, an end line with its cost."""
        journal.append("phases", {"phase": phase, "event": "start"})
        wall, cpu = time.perf_counter(), self.meter.seconds()
        with self.lock:
            self.current = (journal, phase, wall, cpu)
        try:
            result = fn(*args, **kwargs)
        finally:
            with self.lock:
                self.current = None
        cost = {"wall_s": round(time.perf_counter() - wall, 1), "cpu_s": round(self.meter.seconds() - cpu, 1)}
        journal.append("phases", {"phase": phase, "event": "end", **cost, **(extra(result) if extra else {})})
        return result

    def _loop(self) -> None:
        while True:
            time.sleep(POLL_EVERY_S)
            with self.lock:
                current = self.current
            row: dict[str, Any] = {"attempt": Journal.attempt, "at": _now(), "load": os.getloadavg()}
            if current is not None:
                journal, phase, wall, cpu = current
                row.update(target=journal.target, phase=phase, wall_s=round(time.perf_counter() - wall, 1),
                           cpu_s=round(self.meter.seconds() - cpu, 1))  # fmt: skip
            row["cpu_total_s"] = round(self.meter.seconds(), 1)
            append_jsonl(self.file, row)


def naive_summary(journal: Journal, sample_ids: list[str]) -> dict[str, Any]:
    """The naive baseline of the drawn mutants from the journal: each mutant's first finished line, and
    each repository's first environment preparation (a run that never stopped prepares it once)."""
    mutants: dict[str, dict] = {}
    prepared: dict[str, dict] = {}
    for row in journal.read("naive"):
        if "prepare" in row:
            prepared.setdefault(row["prepare"], row)
        elif row.get("instance_id") in sample_ids:
            mutants.setdefault(row["instance_id"], row)
    done = list(mutants.values()) + list(prepared.values())
    return {
        "mutants": len(sample_ids),
        "finished": len(mutants),
        "validated": sum(1 for m in mutants.values() if m["validated"]),
        "wall_s": round(sum(r["wall_s"] for r in done), 1),
        "cpu_s": round(sum(r["cpu_s"] for r in done), 1),
        "attempts": len({r["attempt"] for r in done}),
    }


def grade_summary(journal: Journal, picked_ids: list[str]) -> dict[str, int]:
    """Counts of gold / empty verdicts of the drawn tasks from the journal (first verdict of each pair)."""
    verdicts: dict[tuple[str, str], bool | None] = {}
    for row in journal.read("grade"):
        if row.get("instance_id") in picked_ids:
            verdicts.setdefault((row["instance_id"], row["flag"]), row["resolved"])
    # None: the grade printed no verdict (an error), counted apart so that it never passes for "not resolved".
    state = {True: "resolved", False: "not_resolved", None: "error"}
    counts = Counter(f"{flag}_{state[ok]}" for (_, flag), ok in verdicts.items())
    counts["graded"] = len(picked_ids)
    counts["graded_done"] = len(
        {i for (i, _f) in verdicts if (i, "gold") in verdicts and (i, "empty") in verdicts}
    )
    return dict(counts)


def processed_by_method(candidates: list[Any], partial: Path) -> dict[str, dict[str, Any]]:
    """Per method: candidates drawn, processed (an outcome in validate's partial file), validated, drops."""
    method_of = {t.instance_id: t.metadata["method"] for t in candidates}
    rows: dict[str, dict[str, Any]] = defaultdict(lambda: {"candidates": 0, "processed": 0, "validated": 0,
                                                           "dropped": Counter()})  # fmt: skip
    for method in method_of.values():
        rows[method]["candidates"] += 1
    seen: set[str] = set()
    for record in read_jsonl_records(partial):
        iid = record.get("instance_id")
        if iid not in method_of or iid in seen:
            continue
        seen.add(iid)
        row = rows[method_of[iid]]
        row["processed"] += 1
        if record["verdict"] == "validated":
            row["validated"] += 1
        else:
            row["dropped"][record["verdict"]] += 1
    return {m: {**v, "dropped": dict(v["dropped"].most_common())} for m, v in sorted(rows.items())}


def load_during(work: Path, target: str) -> str:
    """The 1-minute load average's range over the polls of a target's phases, e.g. '1.9-3.4 (41 polls)'."""
    loads = [p["load"][0] for p in read_jsonl_records(work / "poll.jsonl") if p.get("target") == target]
    return f"{min(loads):.1f}-{max(loads):.1f} ({len(loads)} polls)" if loads else "no polls"


def _rates(r: dict) -> tuple[float, float, float]:
    ours_cpu = r["synth"]["cpu_s"] + r["validate"]["cpu_s"]
    ours_rate = 60 * r["validated"] / ours_cpu if ours_cpu else 0.0
    naive_rate = 60 * r["naive"]["validated"] / r["naive"]["cpu_s"] if r["naive"]["cpu_s"] else 0.0
    return ours_cpu, ours_rate, naive_rate


def report(results: list[dict], meter: Any, args: Any) -> str:
    """Markdown tables of results (this run's, or saved ones: the older layout without journals too)."""
    lines = [f"CPU time: {meter.source}.", ""]
    for r in results:
        lines += [f"Machine, {r['target']}: {r.get('machine') or machine_line()}; load during its phases: "
                  f"{r.get('load', 'not recorded')}.", ""]  # fmt: skip
    rows = []
    for r in results:
        ours_cpu, ours_rate, naive_rate = _rates(r)
        nv, gr = r["naive"], r["grade"]
        unfinished = (
            ""
            if r.get("validate_finished", True)
            else f" (of {r['processed']} processed: validate unfinished)"
        )
        naive_done = (
            f" ({nv['finished']} finished)" if nv.get("finished", nv["mutants"]) < nv["mutants"] else ""
        )
        grade_done = gr.get("graded_done", gr["graded"])
        errors = gr.get("gold_error", 0) + gr.get("empty_error", 0)
        rows.append([
            r["target"], r["candidates"], f"{r['validated']}{unfinished}",
            f"{r['synth']['wall_s'] + r['validate']['wall_s']:.0f}", f"{ours_cpu:.0f}", f"{ours_rate:.1f}",
            f"{nv['validated']}/{nv['mutants']}{naive_done}", f"{nv['cpu_s']:.0f}", f"{naive_rate:.1f}",
            f"{ours_rate / naive_rate:.1f}x" if naive_rate else "-",
            f"{gr.get('gold_resolved', 0)}/{grade_done} gold, {gr.get('empty_not_resolved', 0)}/{grade_done} empty"
            + (f" ({gr['graded']} drawn)" if grade_done < gr["graded"] else "") + (f", {errors} errors" if errors else ""),
        ])  # fmt: skip
    lines.append(markdown_table(
        ["target", "candidates", "validated", "wall s", "CPU s", "validated / CPU-min", "naive validated", "naive CPU s",
         "naive / CPU-min", "ratio", "grade (gold resolves, empty does not)"], rows))  # fmt: skip
    for r in results:
        if r.get("split"):
            sp = r["split"]
            lines += ["", (
                f"`tasks split --by function`, {r['target']}: train {sp['train']} tasks / {sp['train_functions']} "
                f"functions, test {sp['test']} / {sp['test_functions']}, {sp['duplicates']} duplicate diffs dropped; "
                f"functions on both sides: {sp['functions_on_both_sides']}; same seed byte-identical: "
                f"{sp['same_seed_identical']}; seed + 1 gives another test side: {sp['other_seed_differs']}.")]  # fmt: skip
    for r in results:
        lines += ["", f"Yield per method, {r['target']} ({len(r['methods_validated'])} methods validated: "
                  f"{', '.join(r['methods_validated'])}):", ""]  # fmt: skip
        table = []
        for m, v in sorted(r["by_method"].items()):
            processed, validated = (
                v.get("processed", v["candidates"]),
                v.get("written", v.get("validated", 0)),
            )
            table.append([m, v["candidates"], processed, validated, f"{validated / processed:.0%}" if processed else "-",
                          ", ".join(f"{k}: {c}" for k, c in v["dropped"].items())])  # fmt: skip
        lines.append(
            markdown_table(["method", "candidates", "processed", "validated", "yield", "dropped"], table)
        )
    return "\n".join(lines)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
