"""`repogym eval compare A B`: paired per-task differences between two eval folders.

Each task's score is its resolve rate (c / n, the per-task pass@1); the delta is B minus A on the
tasks both runs measured. The interval is a paired bootstrap: resample tasks, each draw keeping a
task's A and B scores together, i.e. resample the per-task deltas (`repogym.evaluate.bootstrap`).
Pairing removes the between-task variance that two independent intervals would double count.
Tasks only one run measured are listed, never scored.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repogym.errors import ConfigError
from repogym.evaluate.bootstrap import BootstrapSettings, bootstrap_interval
from repogym.evaluate.layout import SUMMARY_FILE, SUMMARY_KIND


@dataclass(frozen=True)
class TaskDelta:
    instance_id: str
    a: float
    b: float

    @property
    def delta(self) -> float:
        return self.b - self.a


@dataclass(frozen=True)
class Comparison:
    """B minus A, task by task and on average."""

    a: str
    b: str
    deltas: tuple[TaskDelta, ...]
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]
    interval: tuple[float, float]
    settings: BootstrapSettings

    @property
    def mean_a(self) -> float:
        return sum(d.a for d in self.deltas) / len(self.deltas)

    @property
    def mean_b(self) -> float:
        return sum(d.b for d in self.deltas) / len(self.deltas)

    @property
    def mean_delta(self) -> float:
        return sum(d.delta for d in self.deltas) / len(self.deltas)

    def changed(self) -> list[TaskDelta]:
        """Tasks whose resolve rate moved, largest gains first."""
        return sorted((d for d in self.deltas if d.delta != 0), key=lambda d: (-d.delta, d.instance_id))

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a, "b": self.b, "tasks": len(self.deltas),
            "resolve_rate_a": self.mean_a, "resolve_rate_b": self.mean_b, "delta": self.mean_delta,
            "interval": list(self.interval), "bootstrap": {**self.settings.to_dict(), "paired": True},
            "improved": sum(1 for d in self.deltas if d.delta > 0),
            "regressed": sum(1 for d in self.deltas if d.delta < 0),
            "changed": [{"instance_id": d.instance_id, "a": d.a, "b": d.b, "delta": d.delta} for d in self.changed()],
            "per_task": {d.instance_id: {"a": d.a, "b": d.b, "delta": d.delta} for d in self.deltas},
            "only_a": list(self.only_a), "only_b": list(self.only_b),
        }  # fmt: skip


def load_summary(path: str | os.PathLike[str]) -> dict[str, Any]:
    """An eval folder's summary.json (or the file itself); anything else is named in the error."""
    given = Path(path)
    file = given / SUMMARY_FILE if given.is_dir() else given
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{given}: no {SUMMARY_FILE} here; is it a `repogym eval --out` folder?") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{file}: cannot read it as JSON ({exc})") from None
    if (
        not isinstance(data, dict)
        or data.get("kind") != SUMMARY_KIND
        or not isinstance(data.get("per_task"), dict)
    ):
        raise ConfigError(
            f"{file}: not an eval summary (no kind: {SUMMARY_KIND!r} with per_task); run `repogym eval`"
        )
    return data


def compare_runs(
    a: str | os.PathLike[str], b: str | os.PathLike[str], settings: BootstrapSettings | None = None
) -> Comparison:
    """Paired per-task deltas of B over A, with a paired-bootstrap interval of their mean."""
    settings = settings or BootstrapSettings()
    tasks_a, tasks_b = _rates(load_summary(a)), _rates(load_summary(b))
    common = sorted(set(tasks_a) & set(tasks_b))
    if not common:
        raise ConfigError(f"{a} and {b} share no task; compare runs on the same task file")
    deltas = tuple(TaskDelta(iid, tasks_a[iid], tasks_b[iid]) for iid in common)
    return Comparison(
        a=os.fspath(a), b=os.fspath(b), deltas=deltas,
        only_a=tuple(sorted(set(tasks_a) - set(tasks_b))), only_b=tuple(sorted(set(tasks_b) - set(tasks_a))),
        interval=bootstrap_interval([d.delta for d in deltas], settings), settings=settings,
    )  # fmt: skip


def _rates(summary: dict[str, Any]) -> dict[str, float]:
    rates = {}
    for iid, row in summary["per_task"].items():
        n, c = row.get("n"), row.get("c")
        if not isinstance(n, int) or not isinstance(c, int) or n < 1:
            raise ConfigError(f"eval summary: per_task[{iid!r}] has no usable n/c ({n!r}/{c!r})")
        rates[iid] = c / n
    return rates
