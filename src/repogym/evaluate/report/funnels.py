"""Funnel files of any stage turned into one shape the report draws: labelled counts, in order.

Known shapes (read defensively: a missing or odd field drops a row, never the report):

- mining (`repogym mine --funnel`): `scanned`, `candidates`, `steps[{name, stage, count, examples}]`,
  `written`; rows are what is left after each step.
- validation (`repogym validate`, OUT.funnel.json): `candidates`, `stages[{label, in, out,
  dropped[{reason, count}]}]`, `written`.
- synth (`repogym synth`, OUT.funnel.json): a list with one object per repository, each with
  `by_method{method: {sites, uncovered, not_drawn, no_change, does_not_compile, duplicate, over_max,
  written}}` (`repogym.synth.funnel`); rows are what is left after each drop, summed over the
  repositories and methods, with each method's share of a drop as its note.
- anything else (future stages): a `steps` or `stages` list of objects with a name/label and a
  count/out/left/written number, else the top-level numbers (and numbers one level down, as
  `group.key`) in file order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from repogym.evaluate.report.collect import FunnelFile
from repogym.synth.funnel import COLUMNS as SYNTH_COLUMNS


@dataclass(frozen=True)
class FunnelRow:
    label: str
    count: int
    note: str = ""
    """What was dropped at this step, in words (reasons and counts; example ids)."""


@dataclass(frozen=True)
class FunnelView:
    title: str
    kind: str
    """mining, validation, synth or funnel (unknown shape)."""
    rows: tuple[FunnelRow, ...]


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def funnel_view(funnel: FunnelFile) -> FunnelView | None:
    """The rows of a funnel file, or None when it has no counts at all."""
    data = funnel.data
    if isinstance(data, list):
        rows = _synth_rows(data)
        return FunnelView(f"synth funnel: {funnel.label}", "synth", tuple(rows)) if rows else None
    if not isinstance(data, dict):
        return None
    kind = _kind(funnel, data)
    if kind == "mining":
        rows = _mining_rows(data)
    elif kind == "validation":
        rows = _validation_rows(data)
    else:
        rows = _generic_rows(data)
    return FunnelView(f"{kind} funnel: {funnel.label}", kind, tuple(rows)) if rows else None


def _kind(funnel: FunnelFile, data: dict[str, Any]) -> str:
    if isinstance(data.get("steps"), list) and "scanned" in data:
        return "mining"
    if isinstance(data.get("stages"), list) and "candidates" in data:
        return "validation"
    named = f"{funnel.path.name} {data.get('kind', '')}".lower()
    return "synth" if "synth" in named else "funnel"


def _mining_rows(data: dict[str, Any]) -> list[FunnelRow]:
    left = _int(data.get("scanned"))
    if left is None:
        return []
    rows = [FunnelRow("commits scanned", left)]
    for step in data["steps"]:
        count = _int(step.get("count")) if isinstance(step, dict) else None
        if count is None:
            continue
        left -= count
        if count:
            examples = ", ".join(str(x) for x in step.get("examples") or [])[:200]
            note = f"dropped {count}" + (f" (e.g. {examples})" if examples else "")
            rows.append(FunnelRow(str(step.get("name", "?")), left, note))
    written = _int(data.get("written"))
    if written is not None:
        rows.append(FunnelRow("written", written))
    return rows


#: The row label of what is left after each of synth's drops (repogym.synth.funnel.COLUMNS between
#: "sites" and "written", in its order); a drop added there without a label here shows by its name.
_SYNTH_LEFT = {
    "uncovered": "on a line a passing test runs",
    "not_drawn": "drawn (per-function limit)",
    "no_change": "changes the program",
    "does_not_compile": "compiles",
    "duplicate": "not a duplicate",
    "over_max": "within --max",
}


def _synth_rows(records: list[Any]) -> list[FunnelRow]:
    totals: dict[str, dict[str, int]] = {}  # column -> method -> count, over every repository
    repos = 0
    for record in records:
        if not isinstance(record, dict) or not isinstance(record.get("by_method"), dict):
            continue
        repos += 1
        for method, counts in record["by_method"].items():
            for column in SYNTH_COLUMNS:
                count = _int(counts.get(column)) if isinstance(counts, dict) else None
                if count:
                    by_method = totals.setdefault(column, {})
                    by_method[str(method)] = by_method.get(str(method), 0) + count
    if not repos:
        return []

    def shares(column: str) -> str:
        ranked = sorted(totals.get(column, {}).items(), key=lambda item: (-item[1], item[0]))
        return ", ".join(f"{method} {count}" for method, count in ranked)

    left = sum(totals.get("sites", {}).values())
    where = "1 repository" if repos == 1 else f"{repos} repositories"
    rows = [FunnelRow(f"sites in covered functions of {where}", left)]
    for column in SYNTH_COLUMNS[1:-1]:
        dropped = sum(totals.get(column, {}).values())
        if dropped:
            left -= dropped
            rows.append(
                FunnelRow(_SYNTH_LEFT.get(column, column), left, f"dropped {dropped} ({shares(column)})")
            )
    rows.append(FunnelRow("written", sum(totals.get("written", {}).values())))
    return rows


def _validation_rows(data: dict[str, Any]) -> list[FunnelRow]:
    start = _int(data.get("candidates"))
    if start is None:
        return []
    rows = [FunnelRow("candidates in", start)]
    for stage in data["stages"]:
        if not isinstance(stage, dict) or _int(stage.get("out")) is None:
            continue
        dropped = [d for d in stage.get("dropped") or [] if isinstance(d, dict) and _int(d.get("count"))]
        note = "; ".join(f"{d.get('reason', '?')}: {d['count']}" for d in dropped)
        rows.append(FunnelRow(str(stage.get("label") or stage.get("stage") or "?"), int(stage["out"]), note))
    written = _int(data.get("written"))
    if written is not None:
        rows.append(FunnelRow("written", written))
    return rows


def _generic_rows(data: dict[str, Any]) -> list[FunnelRow]:
    for key in ("steps", "stages"):
        items = data.get(key)
        if isinstance(items, list):
            rows = []
            for item in items:
                if not isinstance(item, dict):
                    continue
                label = item.get("label") or item.get("name") or item.get("stage") or item.get("method")
                number = next((_int(item.get(f)) for f in ("count", "out", "left", "written", "kept")
                               if _int(item.get(f)) is not None), None)  # fmt: skip
                if label is not None and number is not None:
                    rows.append(FunnelRow(str(label), number))
            if rows:
                return rows
    rows = []
    for key, value in data.items():
        if _int(value) is not None:
            rows.append(FunnelRow(str(key), int(value)))
        elif isinstance(value, dict):
            rows.extend(FunnelRow(f"{key}.{sub}", int(v)) for sub, v in value.items() if _int(v) is not None)
    return rows
