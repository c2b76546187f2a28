"""The synth funnel: per method, sites found in covered functions -> covered by a passing test -> drawn ->
built (changes the program, compiles, not a duplicate, within max_candidates) -> written.

Every site is in exactly one place; `MethodYield` checks that its counts add up, so a report that loses a
site cannot be built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.markup import escape
from rich.table import Table

from repogym.errors import RepogymError

#: A method's counts in the order the funnel places a site: found, each way it drops out, written.
COLUMNS = (
    "sites",
    "uncovered",
    "not_drawn",
    "no_change",
    "does_not_compile",
    "duplicate",
    "over_max",
    "written",
)


_SHORT = {
    "uncovered": "uncov",
    "not_drawn": "undrawn",
    "no_change": "no-op",
    "does_not_compile": "bad",
    "duplicate": "dup",
    "over_max": "cap",
}


@dataclass(frozen=True)
class MethodYield:
    method: str
    sites: int = 0
    """Sites the method found in functions the suite covers."""
    uncovered: int = 0
    """Sites on lines no passing test runs: no test could notice them."""
    not_drawn: int = 0
    """Covered sites beyond the per-function draw."""
    no_change: int = 0
    """Drawn, but the mutated file compiles to the same program."""
    does_not_compile: int = 0
    duplicate: int = 0
    """The same buggy file as another candidate's."""
    over_max: int = 0
    """Beyond max_candidates."""
    written: int = 0

    def __post_init__(self) -> None:
        accounted = (
            self.uncovered + self.not_drawn + self.no_change + self.does_not_compile
            + self.duplicate + self.over_max + self.written
        )  # fmt: skip
        if accounted != self.sites:  # a bug in whoever counted, never user input
            raise RepogymError(
                f"synth funnel for {self.method} does not add up: {self.sites} sites, {accounted} placed"
            )

    def to_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in COLUMNS}


@dataclass(frozen=True)
class SynthFunnel:
    repo: str
    rev: str
    files: int
    """Python files considered (not excluded) at the revision."""
    files_covered: int
    """Of those, files that some test runs."""
    unparsable: tuple[tuple[str, str], ...]
    """(file, why) for files libcst could not parse; they are skipped."""
    units: int
    covered_units: int
    tests: int
    passing_tests: int
    coverage_s: float
    methods: tuple[MethodYield, ...]

    @property
    def written(self) -> int:
        return sum(m.written for m in self.methods)

    def to_dict(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "rev": self.rev,
            "files": self.files,
            "files_covered": self.files_covered,
            "unparsable": [{"file": f, "why": why} for f, why in self.unparsable],
            "functions": self.units,
            "covered_functions": self.covered_units,
            "tests": self.tests,
            "passing_tests": self.passing_tests,
            "coverage_s": self.coverage_s,
            "written": self.written,
            "by_method": {m.method: m.to_dict() for m in self.methods},
        }

    def table(self) -> Table:
        title = (
            f"synth funnel: {self.repo} @ {self.rev[:12]} ({self.covered_units}/{self.units} functions covered "
            f"by {self.passing_tests}/{self.tests} passing tests, {self.files_covered}/{self.files} files)"
        )
        table = Table(title=escape(title))
        table.add_column("method", no_wrap=True)
        for name in COLUMNS:
            table.add_column(_SHORT.get(name, name), justify="right")
        for row in self.methods:
            table.add_row(row.method, *(str(getattr(row, name)) for name in COLUMNS))
        totals = [sum(getattr(m, name) for m in self.methods) for name in COLUMNS]
        table.add_row("[bold]total[/]", *(f"[bold]{value}[/]" for value in totals))
        return table
