"""The validation funnel: candidates in -> env built -> applied -> has FAIL_TO_PASS -> not only flaky -> scrubbed -> written.

Every candidate is in exactly one place: dropped for one reason at one stage,
or written. `build_funnel` checks that as it counts, and `ValidationFunnel`
checks that the stages add up, so a report that loses a candidate cannot be
built.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.markup import escape
from rich.table import Table

from repogym.errors import RepogymError
from repogym.privacy import ScrubResult
from repogym.task import Task
from repogym.validate.outcome import VERDICT_DESCRIPTIONS, CandidateOutcome, Stage, Verdict, clip_detail

MAX_EXAMPLES = 3
_DETAIL_CHARS = 400

STAGE_LABELS: dict[Stage, str] = {
    Stage.ENV_BUILT: "environment built",
    Stage.APPLIED: "patches applied",
    Stage.HAS_FAIL_TO_PASS: "has FAIL_TO_PASS",
    Stage.NOT_FLAKY: "not only flaky",
    Stage.SCRUBBED: "scrubbed (privacy)",
}


@dataclass(frozen=True)
class FunnelReason:
    """Candidates dropped for one reason at one stage."""

    name: str
    stage: Stage
    description: str
    count: int
    examples: tuple[str, ...] = ()
    example_detail: str = ""
    """Why the first example was dropped (an apply error, an environment build log's tail)."""


@dataclass(frozen=True)
class GroupYield:
    """Where the candidates of one group (a synthetic bug-injection method) went."""

    name: str
    candidates: int
    written: int
    dropped: tuple[tuple[str, int], ...] = ()
    """(reason, count), most frequent first."""

    @property
    def rate(self) -> float:
        return self.written / self.candidates if self.candidates else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "candidates": self.candidates,
            "written": self.written,
            "yield": round(self.rate, 4),
            "dropped": dict(self.dropped),
        }


@dataclass(frozen=True)
class ValidationFunnel:
    candidates: int
    reasons: tuple[FunnelReason, ...]
    written: int
    written_examples: tuple[str, ...] = ()
    resumed: int = 0
    """Candidates whose outcome came from the partial file of an earlier run."""
    flaky_tests: int = 0
    """Flaky tests left out of written and dropped candidates' test lists."""
    by_method: tuple[GroupYield, ...] = ()
    """Yield per metadata["method"] (synthetic candidates); empty when no candidate names one."""

    def __post_init__(self) -> None:
        accounted = sum(reason.count for reason in self.reasons) + self.written
        if accounted != self.candidates:  # a bug in whoever built the funnel, never user input
            raise RepogymError(
                f"validation funnel does not add up: {self.candidates} in, {accounted} accounted for"
            )

    def left_after(self, stage: Stage) -> int:
        """Candidates that passed `stage` (and every stage before it)."""
        order = list(Stage)
        dropped = sum(r.count for r in self.reasons if order.index(r.stage) <= order.index(stage))
        return self.candidates - dropped

    def count(self, name: str) -> int:
        return sum(reason.count for reason in self.reasons if reason.name == name)

    def to_dict(self) -> dict[str, Any]:
        stages = []
        left = self.candidates
        for stage in Stage:
            dropped = [r for r in self.reasons if r.stage is stage]
            out = left - sum(r.count for r in dropped)
            stages.append(
                {
                    "stage": stage.value,
                    "label": STAGE_LABELS[stage],
                    "in": left,
                    "out": out,
                    "dropped": [
                        {
                            "reason": r.name,
                            "description": r.description,
                            "count": r.count,
                            "examples": list(r.examples),
                            "example_detail": r.example_detail,
                        }
                        for r in dropped
                    ],
                }
            )
            left = out
        return {
            "candidates": self.candidates,
            "resumed": self.resumed,
            "written": self.written,
            "written_examples": list(self.written_examples),
            "flaky_tests_dropped": self.flaky_tests,
            "stages": stages,
            **({"by_method": {g.name: g.to_dict() for g in self.by_method}} if self.by_method else {}),
        }

    def table(self, title: str = "validation funnel") -> Table:
        """One row per stage (candidates left after it) and one per drop reason, with example ids."""
        table = Table(title=title)
        for column, justify in (
            ("stage / reason", "left"),
            ("dropped", "right"),
            ("left", "right"),
            ("examples", "left"),
        ):
            table.add_column(column, justify=justify)  # type: ignore[arg-type]
        resumed = f" ({self.resumed} from the partial file)" if self.resumed else ""
        table.add_row(f"[bold]candidates in[/]{escape(resumed)}", "", str(self.candidates), "")
        for stage in Stage:
            for reason in (r for r in self.reasons if r.stage is stage and r.count):
                table.add_row(
                    f"  {escape(reason.name)}", str(reason.count), "", escape(", ".join(reason.examples))
                )
            table.add_row(f"[bold]{STAGE_LABELS[stage]}[/]", "", str(self.left_after(stage)), "")
        table.add_row(
            "[bold green]written[/]", "", str(self.written), escape(", ".join(self.written_examples))
        )
        return table

    def method_table(self, title: str = "yield per method") -> Table:
        table = Table(title=title)
        for column, justify in (
            ("method", "left"),
            ("candidates", "right"),
            ("written", "right"),
            ("yield", "right"),
            ("dropped (reason: count)", "left"),
        ):
            table.add_column(column, justify=justify)  # type: ignore[arg-type]
        for group in self.by_method:
            dropped = ", ".join(f"{name}: {count}" for name, count in group.dropped)
            table.add_row(
                escape(group.name),
                str(group.candidates),
                str(group.written),
                f"{group.rate:.0%}",
                escape(dropped),
            )
        return table


def build_funnel(
    candidates: Sequence[Task],
    outcomes: Mapping[str, CandidateOutcome],
    scrub: ScrubResult | None,
    written: Sequence[Task],
    resumed: int = 0,
) -> ValidationFunnel:
    """Count where each candidate went: its drop verdict, its scrub drop, or the written file."""
    placed: dict[str, tuple[str, Stage, str]] = {}
    written_ids = {task.instance_id for task in written}
    scrub_reasons = {d.instance_id: d.reasons[0] for d in scrub.dropped} if scrub else {}
    for task in candidates:
        iid = task.instance_id
        outcome = outcomes.get(iid)
        if outcome is None:
            raise RepogymError(f"validation funnel: candidate {iid} has no outcome")
        if not outcome.validated:
            assert outcome.stage is not None
            placed[iid] = (outcome.verdict.value, outcome.stage, outcome.detail)
        elif iid in scrub_reasons:
            placed[iid] = (scrub_reasons[iid].code.value, Stage.SCRUBBED, scrub_reasons[iid].message)
        elif iid not in written_ids:
            raise RepogymError(
                f"validation funnel: validated candidate {iid} was neither scrubbed out nor written"
            )
    reasons: dict[tuple[Stage, str], list[tuple[str, str]]] = {}
    for iid, (name, stage, detail) in placed.items():
        reasons.setdefault((stage, name), []).append((iid, detail))
    order = list(Stage)
    built = [
        FunnelReason(
            name=name,
            stage=stage,
            description=_describe(name),
            count=len(items),
            examples=tuple(iid for iid, _ in items[:MAX_EXAMPLES]),
            example_detail=clip_detail(items[0][1], _DETAIL_CHARS),
        )
        for (stage, name), items in sorted(reasons.items(), key=lambda kv: (order.index(kv[0][0]), kv[0][1]))
    ]
    flaky = sum(len(outcomes[t.instance_id].flaky) for t in candidates)
    return ValidationFunnel(
        by_method=_by_method(candidates, placed, written_ids),
        candidates=len(candidates),
        reasons=tuple(built),
        written=len(written),
        written_examples=tuple(t.instance_id for t in written[:MAX_EXAMPLES]),
        resumed=resumed,
        flaky_tests=flaky,
    )


def _by_method(
    candidates: Sequence[Task], placed: Mapping[str, tuple[str, Stage, str]], written_ids: set[str]
) -> tuple[GroupYield, ...]:
    groups: dict[str, dict[str, int]] = {}
    for task in candidates:
        method = task.metadata.get("method")
        if not isinstance(method, str):
            continue
        counts = groups.setdefault(method, {})
        outcome = "written" if task.instance_id in written_ids else placed[task.instance_id][0]
        counts[outcome] = counts.get(outcome, 0) + 1
    built = []
    for method, counts in sorted(groups.items()):
        written = counts.pop("written", 0)
        dropped = tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        built.append(GroupYield(method, written + sum(counts.values()), written, dropped))
    return tuple(built)


def _describe(name: str) -> str:
    try:
        return VERDICT_DESCRIPTIONS[Verdict(name)]
    except ValueError:
        return f"dropped by the privacy stage ({name})"
