"""The funnel: where every scanned commit went, with counts and example ids per reason.

A funnel is an ordered list of steps; each step counts the items dropped for
one reason. Its invariant is that nothing is lost: `scanned == sum of all step
counts + written`, which `Funnel` checks when it is built. Later stages (e.g.
`repogym validate`) continue a funnel with `extend`, so one report covers
commits scanned -> candidates -> each filter -> validated.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rich.table import Table

from repogym.errors import DatasetError, RepogymError

MAX_EXAMPLES = 3


@dataclass(frozen=True)
class FunnelStep:
    """Items dropped for one reason."""

    name: str
    stage: str
    """Where the step sits: "scan" (not a candidate), "filter", "limit", or a later stage's name."""
    description: str
    count: int
    examples: tuple[str, ...] = ()
    """Up to three instance ids (or commit shas for commits that never became candidates)."""


@dataclass(frozen=True)
class FunnelFlag:
    """Written items that carry a warning (counted, not dropped): e.g. a statement that quotes the fix."""

    name: str
    description: str
    count: int
    examples: tuple[str, ...] = ()


@dataclass(frozen=True)
class Funnel:
    """Counts from commits scanned to items written; every scanned commit is in exactly one place."""

    scanned: int
    steps: tuple[FunnelStep, ...]
    written: int
    written_examples: tuple[str, ...] = ()
    flags: tuple[FunnelFlag, ...] = ()
    """Warnings about some of the items, outside the accounting (an item may carry several)."""

    def __post_init__(self) -> None:
        accounted = sum(step.count for step in self.steps) + self.written
        if accounted != self.scanned:  # a bug in whoever built the funnel, never user input
            raise RepogymError(f"funnel does not add up: {self.scanned} scanned, {accounted} accounted for")

    @property
    def candidates(self) -> int:
        """Commits that became candidates (scanned minus the "scan" steps)."""
        return self.scanned - sum(step.count for step in self.steps if step.stage == "scan")

    def count(self, name: str) -> int:
        return sum(step.count for step in self.steps if step.name == name)

    def extend(
        self, steps: Iterable[FunnelStep], written: int, written_examples: Iterable[str] = ()
    ) -> Funnel:
        """This funnel continued by a later stage that took the `written` items and dropped some of them."""
        return Funnel(
            self.scanned, (*self.steps, *steps), written, tuple(written_examples)[:MAX_EXAMPLES], self.flags
        )

    def with_flags(self, flags: Iterable[FunnelFlag]) -> Funnel:
        """This funnel with more flags (those with a count of zero are kept too: they say what was checked)."""
        return Funnel(self.scanned, self.steps, self.written, self.written_examples, (*self.flags, *flags))

    def flag_count(self, name: str) -> int:
        return sum(flag.count for flag in self.flags if flag.name == name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scanned": self.scanned,
            "candidates": self.candidates,
            "written": self.written,
            "written_examples": list(self.written_examples),
            "steps": [
                {
                    "name": step.name,
                    "stage": step.stage,
                    "description": step.description,
                    "count": step.count,
                    "examples": list(step.examples),
                }
                for step in self.steps
            ],
            "flags": [
                {"name": f.name, "description": f.description, "count": f.count, "examples": list(f.examples)}
                for f in self.flags
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "funnel") -> Funnel:
        try:
            steps = tuple(
                FunnelStep(
                    s["name"],
                    s["stage"],
                    s.get("description", ""),
                    int(s["count"]),
                    tuple(s.get("examples", ())),
                )
                for s in data["steps"]
            )
            flags = tuple(
                FunnelFlag(f["name"], f.get("description", ""), int(f["count"]), tuple(f.get("examples", ())))
                for f in data.get("flags", ())
            )
            return cls(
                int(data["scanned"]),
                steps,
                int(data["written"]),
                tuple(data.get("written_examples", ())),
                flags,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise DatasetError(f"{where}: not a funnel report ({exc!r})") from None

    def table(self, title: str = "mining funnel") -> Table:
        """A rich table: one row per step with its count, running total and examples."""
        table = Table(title=title)
        for column, justify in (
            ("step", "left"),
            ("dropped", "right"),
            ("left", "right"),
            ("examples", "left"),
        ):
            table.add_column(column, justify=justify)  # type: ignore[arg-type]
        left = self.scanned
        table.add_row("commits scanned", "", str(left), "")
        stage = "scan"
        for step in self.steps:
            if step.stage != stage and stage == "scan":
                table.add_row("[bold]candidates[/]", "", str(self.candidates), "", end_section=False)
            stage = step.stage
            left -= step.count
            table.add_row(
                f"  {step.name}", str(step.count) if step.count else "-", str(left), ", ".join(step.examples)
            )
        table.add_row("[bold green]written[/]", "", str(self.written), ", ".join(self.written_examples))
        for flag in self.flags:
            table.add_row(
                f"  [yellow]flag[/] {flag.name}",
                str(flag.count) if flag.count else "-",
                "",
                ", ".join(flag.examples),
            )
        return table


@dataclass
class FunnelCounter:
    """Mutable tally used while mining; `freeze` makes the Funnel. Steps are declared up front, in order."""

    declared: list[tuple[str, str, str]]
    """(name, stage, description) of each step, in report order."""
    scanned: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._known = {name for name, _, _ in self.declared}

    def drop(self, name: str, example: str) -> None:
        if name not in self._known:
            raise RepogymError(f"funnel step {name!r} was not declared")
        self.counts[name] = self.counts.get(name, 0) + 1
        kept = self.examples.setdefault(name, [])
        if len(kept) < MAX_EXAMPLES:
            kept.append(example)

    def freeze(self, written: Iterable[str]) -> Funnel:
        written = list(written)
        steps = tuple(
            FunnelStep(name, stage, description, self.counts.get(name, 0), tuple(self.examples.get(name, ())))
            for name, stage, description in self.declared
        )
        return Funnel(self.scanned, steps, len(written), tuple(written[:MAX_EXAMPLES]))
