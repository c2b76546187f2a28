"""Cheap SFT demonstrations: synth's own single-line bugs injected into local Python source outside the tasks.

A tiny model needs thousands of repairs before it copies a window and flips the right token (issue 14's
probe: 14k rows gave 44.5% exact repair, a few hundred gave nothing), and a team's few validated tasks
are far fewer. So the same libcst methods that make the benchmark's synthetic tasks
(`repogym.synth.methods`) are applied to the functions of the standard library and site-packages
(`repogym.train.corpus`, which leaves repogym's own package, the sample libraries' templates, out),
without tests: each mutation becomes one row in exactly the format `repogym data sft --context window`
writes (the agentless env's window prompt, oracle-localized, and SWE-RL's answer restoring the line).

Not validated, on purpose: a demonstration only has to show the repair, and no test can run on a random
stdlib function. The statement a demo shows mimics a task's short statement (`short_statement`), naming
a test after the function, since the demo has no test to name.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import libcst as cst
from filelock import FileLock

from repogym.env.context import make_windows, window_answer, window_prompt
from repogym.env.lines_answer import lines_answer
from repogym.errors import ConfigError
from repogym.files import read_jsonl_records, write_jsonl
from repogym.patches import unified_diff
from repogym.sandbox.cache import cache_dir
from repogym.synth.inject import touched_lines
from repogym.synth.methods import resolve_methods
from repogym.synth.source import SourceFile, compiles
from repogym.task import Task
from repogym.testpaths import is_test_path
from repogym.train.chat_rows import make_row
from repogym.train.corpus import load_corpus
from repogym.train.leakage import Guard, LeakageGuard

#: The single-line methods a 3-line window can decide: the broken token is visible and its fix follows
#: from the code around it. Left out: const_off_by_one (which way, and which constant?) and
#: op_break_chain (the dropped operand is not in the window); op_swap is learnable only in part.
#: Bump when the rows' format changes (it is part of the cache key).
DEMO_FORMAT = 1
LEARNABLE_METHODS = ("op_change", "op_flip_comparison", "op_flip_boolean", "op_swap")


@dataclass(frozen=True)
class DemoOptions:
    """How many demonstrations, from which methods, shown how."""

    methods: tuple[str, ...] = LEARNABLE_METHODS
    window_lines: int = 1
    """Lines either side of the bug (as the env's `window_lines`)."""
    per_function: int = 4
    """Mutations drawn per function (a few per function keeps the mix varied)."""
    max_rows: int = 20_000
    max_chars: int = 12_000_000
    """Corpus characters read (`load_corpus`; files are drawn in an order fixed by the seed)."""
    max_file_bytes: int = 60_000
    """Larger files are skipped: libcst's parse costs grow with size and one file would crowd the rest."""
    max_line_chars: int = 100
    """Buggy lines longer than this are skipped (the prompt shows them twice)."""
    answer_format: str = "search_replace"
    """The env's `answer_format`: SWE-RL's blocks, or "lines" (the suspicious line rewritten)."""
    prompt_style: str = "full"
    """The env's `prompt_style`: "full" (a made-up issue naming the function's test) or "compact" (no issue)."""
    seed: int = 0


@dataclass
class DemoReport:
    files: int = 0
    rows: int = 0
    by_method: Counter[str] = field(default_factory=Counter)
    dropped: Counter[str] = field(default_factory=Counter)
    cached: bool = False
    """The rows came from the cache (files and per-reason drops of the build are not known then)."""
    guarded: dict[str, int] = field(default_factory=dict)
    """What the leakage guard held (`LeakageGuard.describe`); its drops are in `dropped`, one reason a guard."""

    def to_dict(self) -> dict[str, Any]:
        return {"cached": self.cached, "files": self.files, "rows": self.rows, "by_method": dict(self.by_method),
                "dropped": dict(self.dropped), "guarded": self.guarded}  # fmt: skip


def short_statement(text: str, max_tests: int = 3) -> str:
    """A statement's first paragraph, with at most `max_tests` test names: the part a tiny model can use.

    Synthetic tasks' default statements list the failing tests, then their whole output (hundreds of
    tokens that the window prompt's 3 lines would drown in); a mined task's first paragraph is its title.

    >>> short_statement("2 test(s) fail:\\n- t.py::a\\n- t.py::b\\n\\nOutput of t.py::a:\\n...")
    '2 test(s) fail:\\n- t.py::a\\n- t.py::b'
    >>> short_statement("Fix mode()\\n\\nLong body")
    'Fix mode()'
    """
    first = text.strip().split("\n\n", 1)[0]
    lines = first.splitlines()
    head, tests = (
        [line for line in lines if not line.startswith("- ")],
        [line for line in lines if line.startswith("- ")],
    )
    kept = head[:2] + tests[:max_tests]
    return "\n".join(line[:160] for line in kept)


def shorten_statements(tasks: Iterable[Task], max_tests: int = 3) -> list[Task]:
    """The tasks with `short_statement` problem statements (the full one kept in metadata)."""
    shortened = []
    for task in tasks:
        short = short_statement(task.problem_statement, max_tests)
        if short == task.problem_statement:
            shortened.append(task)
            continue
        metadata = {**task.metadata, "full_problem_statement": task.problem_statement}
        shortened.append(replace(task, problem_statement=short, metadata=metadata))
    return shortened


def demo_statement(path: str, function: str) -> str:
    """What a demo's issue says: the shape of `short_statement` of a synthetic task, with a test named
    after the function (there is no real test).

    >>> demo_statement("json/decoder.py", "JSONDecoder.raw_decode")
    '1 test(s) fail:\\n- tests/test_decoder.py::test_raw_decode'
    """
    stem = Path(path).stem.lstrip("_") or "module"
    name = function.rsplit(".", 1)[-1].lstrip("_") or "it"
    return f"1 test(s) fail:\n- tests/test_{stem}.py::test_{name}"


def file_demos(path: str, text: str, options: DemoOptions, report: DemoReport) -> Iterator[dict[str, Any]]:
    """Rows for one source file: up to `per_function` mutations per function, drawn with the seed."""
    for row, _buggy in file_mutations(path, text, options, report):
        yield row


def file_mutations(path: str, text: str, options: DemoOptions,
                   report: DemoReport) -> Iterator[tuple[dict[str, Any], str]]:  # fmt: skip
    """(row, buggy file text) for one source file (`file_demos` without the buggy text)."""
    try:
        source = SourceFile.parse(path, text)
    except ConfigError:
        report.dropped["does not parse"] += 1
        return
    methods = resolve_methods(list(options.methods))
    for unit in source.units:
        if unit.is_class:
            continue
        sites = [mutation for method in methods for mutation in method.find(source, unit)]
        rng = random.Random(f"{options.seed}\0{path}\0{unit.qualname}")
        rng.shuffle(sites)
        made = 0
        for mutation in sites:
            if made >= options.per_function:
                break
            row = _demo_row(source, unit.qualname, mutation, options, report)
            if row is not None:
                made += 1
                report.by_method[mutation.method] += 1
                yield row


def _demo_row(source: SourceFile, function: str, mutation: Any, options: DemoOptions,
              report: DemoReport) -> tuple[dict[str, Any], str] | None:  # fmt: skip
    buggy = _spliced(source, mutation)
    # A splice changes one operator or operand order, so equal text is the only "same program" case
    # (synth's own same_program check dumps the whole file's AST twice: most of the cost per row).
    if buggy is None or buggy == source.text or compiles(buggy, source.path):
        report.dropped["no change or does not compile"] += 1
        return None
    gold = unified_diff({source.path: buggy}, {source.path: source.text})
    first, last = touched_lines(gold)
    if first == 0 or first != last:
        report.dropped["not one line"] += 1
        return None
    lines = buggy.splitlines()
    if len(lines[first - 1]) > options.max_line_chars:
        report.dropped["line too long"] += 1
        return None
    spots = {source.path: (first,)}
    contents = {source.path: buggy}
    windows = make_windows(spots, contents, options.window_lines)
    if options.answer_format == "lines":
        answer = lines_answer(gold, spots, contents)
    else:
        answer = window_answer(gold, contents, windows)
    if answer is None:
        report.dropped["no unique answer in the window"] += 1
        return None
    prompt = window_prompt(demo_statement(source.path, function), windows, spots, contents, options.answer_format,
                           options.prompt_style)  # fmt: skip
    return make_row([{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}],
                    source="mutation-demo", metadata={"method": mutation.method, "file": source.path,
                                                      "function": function, "context": "window",
                                                      "localize": "oracle", "answer_format": options.answer_format,
                                                      "prompt_style": options.prompt_style,
                                                      "gold_patch": gold}), buggy  # fmt: skip


def _spliced(source: SourceFile, mutation: Any) -> str | None:
    """The file with the mutated node's text replaced in place, or None when it spans lines.

    `SourceFile.rewrite` visits the whole tree per mutation, which made a file's demos cost a parse
    each; a one-node, one-line change is a splice of that line (checked: the node's own code must be
    what the line holds where the position says).
    """
    if len(mutation.replacements) != 1:
        return None
    node, new = mutation.replacements[0]
    where = source.positions[node]
    if where.start.line != where.end.line or not isinstance(new, cst.CSTNode):
        return None
    lines = source.text.splitlines(keepends=True)
    line = lines[where.start.line - 1]
    start, end = where.start.column, where.end.column
    if line[start:end] != source.module.code_for_node(node):
        return None
    lines[where.start.line - 1] = line[:start] + source.module.code_for_node(new) + line[end:]
    return "".join(lines)


def build_demos(out: str | os.PathLike[str], options: DemoOptions,
                guard: LeakageGuard | None = None, workers: int = 1) -> DemoReport:  # fmt: skip
    """Up to `max_rows` demonstrations from the default corpus -> `out` (JSONL chat rows).

    Cached under $REPOGYM_CACHE/demos by the options and the corpus digest (the leakage guard runs after).
    `guard`: the held-out tasks' fixes. A demo whose answer writes one of their fixed lines or fixed
    function bodies is dropped (`repogym.train.leakage`): a guard against a held-out function that also
    lives in the corpus (a vendored copy, say), on top of the corpus leaving repogym's own package out.
    """
    corpus = load_corpus(None, options.max_chars, options.seed, max_file_bytes=options.max_file_bytes)
    key = hashlib.sha256(json.dumps([asdict(options), corpus.digest, DEMO_FORMAT]).encode()).hexdigest()
    cached = cache_dir("demos") / f"{key[:24]}.jsonl"
    with FileLock(str(cached) + ".lock"):
        if cached.is_file():  # the same options on the same corpus give the same rows: built once per machine
            rows = list(read_jsonl_records(cached))
            report = DemoReport(cached=True, by_method=Counter(row["metadata"]["method"] for row in rows))
        else:
            rows, report = _corpus_rows(corpus, options, workers)
            write_jsonl(cached, rows)
    if guard is not None:
        rows = drop_held_out(rows, guard, report)
    report.rows = len(rows)
    write_jsonl(Path(out), rows)
    return report


def _corpus_rows(corpus: Any, options: DemoOptions, workers: int) -> tuple[list[dict[str, Any]], DemoReport]:
    files = [(re.sub(r"^\d+/", "", name), text) for name, text in corpus.files]  # names: "<root>/<path>"
    report, rows = DemoReport(), []
    chunks = [files[i : i + 8] for i in range(0, len(files), 8)]
    with ProcessPoolExecutor(max_workers=max(1, workers)) as pool:
        # libcst's parse is most of the cost (about a second per stdlib file): spread files over processes
        for chunk_rows, chunk_report in pool.map(_chunk_demos, chunks, [options] * len(chunks)):
            report.files += chunk_report.files
            report.by_method.update(chunk_report.by_method)
            report.dropped.update(chunk_report.dropped)
            rows.extend(chunk_rows)
            if len(rows) >= options.max_rows:
                pool.shutdown(wait=False, cancel_futures=True)
                break
    rows = rows[: options.max_rows]
    random.Random(options.seed).shuffle(rows)  # files come in a fixed order; batches should mix them
    return rows, report


def repo_demos(folders: Iterable[Path], options: DemoOptions, banned: set[tuple[str, str]],
               report: DemoReport) -> list[dict[str, Any]]:  # fmt: skip
    """Rows from the Python files of task repositories (their working trees), leaving out every function
    in `banned` ((file, function) pairs, as `repogym.locate.task_locations` names them: the
    held-out functions) and every test file."""
    rows = []
    for folder in folders:
        for file in sorted(Path(folder).rglob("*.py")):
            relative = file.relative_to(folder)
            if ".git" in relative.parts or is_test_path(relative.as_posix(), support_files=True):
                continue
            for row in file_demos(str(relative), file.read_text(encoding="utf-8"), options, report):
                if (row["metadata"]["file"], row["metadata"]["function"]) in banned:
                    report.dropped["in a held-out function"] += 1
                    report.by_method[row["metadata"]["method"]] -= 1
                    continue
                rows.append(row)
    report.rows += len(rows)
    return rows


def _chunk_demos(
    files: list[tuple[str, str]], options: DemoOptions
) -> tuple[list[dict[str, Any]], DemoReport]:
    report = DemoReport()
    rows = []
    for path, text in files:
        report.files += 1
        rows.extend(file_demos(path, text, options, report))
    return rows, report


def drop_held_out(
    rows: list[dict[str, Any]], guard: LeakageGuard, report: DemoReport
) -> list[dict[str, Any]]:
    """The rows no leakage guard trips; each guard's drops counted in `report.dropped` under its reason
    (every guard named, 0 included, so a report shows the guard ran)."""
    report.dropped.update(dict.fromkeys(Guard, 0))
    report.guarded = guard.describe()
    kept = []
    for row in rows:
        tripped = guard.check_row(row)
        if tripped is None:
            kept.append(row)
        else:
            report.dropped[tripped] += 1
            report.by_method[row["metadata"]["method"]] -= 1
    return kept
