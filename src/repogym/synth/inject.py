"""Pick mutations in the covered functions of a file and turn each into a candidate bug (text, diffs, tests).

For every unit that the suite covers, each method's sites are listed, the sites no passing test runs are
dropped (no test could notice them), and up to `per_function` are drawn: first a method (single-line
methods weigh more), then one of its sites. The draw for a unit depends only on the seed, the file and the
unit's name, so adding a file or a method does not reshuffle the others. A method that no draw picked
but that has covered sites gets one of them afterwards (`top_up`), so every method is represented.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from dataclasses import dataclass, field

from repogym.patches import diff_stats, parse_patch, unified_diff
from repogym.synth.config import SynthConfig
from repogym.synth.coverage import CoverageMap
from repogym.synth.mutation import Method, Mutation
from repogym.synth.source import SourceFile, Unit, compiles, same_program


@dataclass(frozen=True)
class Bug:
    """One injected bug in one file: the buggy text and everything the task needs about it."""

    method: str
    file: str
    function: str
    clean_text: str
    buggy_text: str
    gold_patch: str
    """Buggy -> clean: what a solver must produce."""
    lines: tuple[int, int]
    """First and last line (1-based, in the buggy file) that the gold patch touches."""
    tests: tuple[str, ...]
    """Tests to run for it: those that run the mutated lines, then a few others of their files."""
    affected: int
    """How many of `tests` run the mutated lines."""

    @property
    def digest(self) -> str:
        return hashlib.sha256(f"{self.file}\0{self.buggy_text}".encode()).hexdigest()

    @property
    def lines_changed(self) -> int:
        stats = diff_stats(self.gold_patch)
        return stats.added + stats.removed


@dataclass
class FileYield:
    """What one file gave, per method (the synth funnel adds these up)."""

    sites: Counter[str] = field(default_factory=Counter)
    uncovered: Counter[str] = field(default_factory=Counter)
    drawn: Counter[str] = field(default_factory=Counter)
    no_change: Counter[str] = field(default_factory=Counter)
    does_not_compile: Counter[str] = field(default_factory=Counter)
    bugs: list[Bug] = field(default_factory=list)
    units: int = 0
    covered_units: int = 0
    source: SourceFile | None = None
    spare: dict[str, list[tuple[Unit, Mutation, set[int]]]] = field(default_factory=dict)
    """Covered sites the per-function draw left, by method (`top_up` takes from them)."""


def inject_file(
    source: SourceFile, coverage: CoverageMap, methods: list[Method], config: SynthConfig
) -> FileYield:
    """Every candidate bug drawn in one parsed file."""
    result = FileYield(source=source)
    for unit in source.units:
        result.units += 1
        unit_tests = coverage.tests_on(source.path, unit.body_lines)
        if not unit_tests:
            continue
        result.covered_units += 1
        pools: dict[str, list[tuple[Mutation, set[int]]]] = {}
        for chosen in methods:
            if chosen.class_level != unit.is_class:
                continue
            for mutation in chosen.find(source, unit):
                result.sites[chosen.name] += 1
                if not coverage.tests_on(source.path, mutation.affected_lines):
                    result.uncovered[chosen.name] += 1  # no test runs it (import-time code does not count)
                    continue
                # The tests to run: those that run the lines, and those whose module imports run them.
                affected = coverage.tests_on(source.path, mutation.affected_lines, imports=True)
                pools.setdefault(chosen.name, []).append((mutation, affected))
        weights = {m.name: (config.single_line_weight if m.single_line else 1.0) for m in methods}
        rng = random.Random(f"{config.seed}\0{source.path}\0{unit.qualname}")
        for mutation, affected in _draw(pools, weights, config.per_function, rng):
            result.drawn[mutation.method] += 1
            bug = _build(source, unit, mutation, affected, coverage, config, rng, result)
            if bug is not None:
                result.bugs.append(bug)
        for name, left in pools.items():
            result.spare.setdefault(name, []).extend(
                (unit, mutation, affected) for mutation, affected in left
            )
    return result


def top_up(
    yields: list[FileYield], methods: list[Method], coverage: CoverageMap, config: SynthConfig
) -> None:
    """Every method with a covered site gets at least one candidate: a method the weighted draws never
    picked (rare, structural) gets one of its spare sites, drawn with the seed, across the files."""
    have = {bug.method for y in yields for bug in y.bugs}
    for chosen in methods:
        if chosen.name in have:
            continue
        spares = [(y, *item) for y in yields for item in y.spare.get(chosen.name, [])]
        rng = random.Random(f"{config.seed}\0top-up\0{chosen.name}")
        rng.shuffle(spares)
        for file_yield, unit, mutation, affected in spares:
            assert file_yield.source is not None
            file_yield.drawn[chosen.name] += 1
            bug = _build(file_yield.source, unit, mutation, affected, coverage, config, rng, file_yield)
            if bug is not None:
                file_yield.bugs.append(bug)
                break


def _draw(
    pools: dict[str, list[tuple[Mutation, set[int]]]],
    weights: dict[str, float],
    count: int,
    rng: random.Random,
) -> list[tuple[Mutation, set[int]]]:
    """Up to `count` mutations without replacement (taken out of `pools`): a method by weight, then one of
    its sites. Weighing methods, not sites, keeps the mix varied (constants do not crowd out the rest)."""
    remaining = {name: items for name, items in sorted(pools.items()) if items}
    drawn: list[tuple[Mutation, set[int]]] = []
    while remaining and len(drawn) < count:
        names = sorted(remaining)
        name = rng.choices(names, weights=[weights[n] for n in names])[0]
        items = remaining[name]
        drawn.append(items.pop(rng.randrange(len(items))))
        if not items:
            del remaining[name]
    return drawn


def _build(
    source: SourceFile,
    unit: Unit,
    mutation: Mutation,
    affected: set[int],
    coverage: CoverageMap,
    config: SynthConfig,
    rng: random.Random,
    result: FileYield,
) -> Bug | None:
    buggy = source.rewrite(dict(mutation.replacements))
    if buggy == source.text or same_program(source.text, buggy):
        result.no_change[mutation.method] += 1
        return None
    if compiles(buggy, source.path):
        result.does_not_compile[mutation.method] += 1
        return None
    gold = unified_diff({source.path: buggy}, {source.path: source.text})
    return Bug(
        method=mutation.method,
        file=source.path,
        function=unit.qualname,
        clean_text=source.text,
        buggy_text=buggy,
        gold_patch=gold,
        lines=touched_lines(gold),
        tests=_select_tests(affected, coverage, config, rng),
        affected=min(len(affected), config.max_tests),
    )


def _select_tests(
    affected: set[int], coverage: CoverageMap, config: SynthConfig, rng: random.Random
) -> tuple[str, ...]:
    """The tests that run the mutated lines (at most max_tests), then up to p2p_tests passing others, of the
    same test files first (grading runs those anyway), of other files when those are all affected: where
    PASS_TO_PASS comes from."""
    chosen = sorted(affected)
    if len(chosen) > config.max_tests:
        chosen = sorted(rng.sample(chosen, config.max_tests))
    names = [coverage.tests[i] for i in chosen]
    files = {name.split("::", 1)[0] for name in names}
    rest = sorted(coverage.passing - set(chosen))
    same_file = [i for i in rest if coverage.tests[i].split("::", 1)[0] in files]
    elsewhere = [i for i in rest if coverage.tests[i].split("::", 1)[0] not in files]
    others = rng.sample(same_file, min(len(same_file), config.p2p_tests))
    others += rng.sample(elsewhere, min(len(elsewhere), config.p2p_tests - len(others)))
    return tuple(names + [coverage.tests[i] for i in sorted(others)])


def touched_lines(gold_patch: str) -> tuple[int, int]:
    """First and last line of the buggy file (the patch's source side) that a one-file patch touches.

    A pure insertion touches the line it follows (or precedes, at the top of the file).

    >>> touched_lines("--- a/f.py\\n+++ b/f.py\\n@@ -2,3 +2,3 @@\\n a\\n-b\\n+c\\n d\\n")
    (3, 3)
    >>> touched_lines("--- a/f.py\\n+++ b/f.py\\n@@ -4,2 +4,3 @@\\n x\\n+y\\n z\\n")
    (4, 4)
    """
    parsed = parse_patch(gold_patch)
    touched: list[int] = []
    for patched in parsed or []:
        for hunk in patched:
            previous = max(hunk.source_start - 1, 0)
            for line in hunk:
                if line.is_removed:
                    touched.append(line.source_line_no)
                elif line.is_added:
                    touched.append(max(previous, 1))
                if line.source_line_no is not None:
                    previous = line.source_line_no
    if not touched:
        return (0, 0)
    return (min(touched), max(touched))
