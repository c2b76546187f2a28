"""`build_report(run_dirs, out)`: one self-contained HTML page (plots as base64 PNG, no external
file, font, style or script) and the same plots as PNG files in `<out stem>_plots/` beside it.

The page has seven sections, each present even when empty (it then says what would fill it):
training curves, before/after resolve rate per split, funnels, verifiers (`repogym verify` folders: a
reliability diagram, AUC and ECE), routing (`repogym eval --route` folders: the curve over thresholds), a per-task table and the trajectory viewer. Text from run folders is escaped by Jinja's autoescape, and the page's
Content-Security-Policy lets only its own inline script run (by hash), so a trajectory holding
`<script>` is shown, never executed, even if escaping were ever skipped.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repogym.errors import ConfigError
from repogym.evaluate.layout import STEP_STAGE
from repogym.evaluate.report.collect import EvalRun, ReportInputs, collect
from repogym.evaluate.report.funnels import funnel_view
from repogym.evaluate.report.plots import (
    Plot,
    RoutingCurve,
    StageBar,
    before_after_plot,
    curve_plot,
    funnel_plot,
    reliability_plot,
    routing_plot,
    slug,
    training_series,
)
from repogym.evaluate.report.trajectories import rollout_view
from repogym.evaluate.scores import score_names
from repogym.files import atomic_writer

#: Records, after load, how many images decoded (naturalWidth > 0) and how many tables exist, as
#: attributes of <body>: what a headless browser test reads back with --dump-dom.
PAGE_SCRIPT = (
    "window.addEventListener('load', function () {"
    " var images = Array.prototype.slice.call(document.images);"
    " var loaded = images.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;"
    " document.body.setAttribute('data-images-total', String(images.length));"
    " document.body.setAttribute('data-images-loaded', String(loaded));"
    " document.body.setAttribute('data-tables', String(document.querySelectorAll('table').length));"
    " });"
)
MAX_TASK_ROWS = 3000


@dataclass
class ReportResult:
    out: Path
    plots_dir: Path
    plots: list[Plot] = field(default_factory=list)
    inputs: ReportInputs = field(default_factory=ReportInputs)
    attempts_shown: int = 0


Progress = Callable[[str, int, int], None]
"""on_progress(what, done, total), called as each piece is drawn."""


def build_report(
    run_dirs: list[Path], out: Path, max_attempts: int = 100, on_progress: Progress | None = None
) -> ReportResult:
    """Read `run_dirs`, draw every plot, write `out` and the PNGs; raises ConfigError on unusable input."""
    if out.exists() and out.is_dir():
        raise ConfigError(f"--out {out}: is a folder; give the HTML file to write, e.g. {out}/report.html")
    if max_attempts < 0:
        raise ConfigError(f"--max-attempts: must be >= 0, got {max_attempts}")
    report = lambda what, done, total: on_progress(what, done, total) if on_progress else None  # noqa: E731
    inputs = collect(run_dirs)
    result = ReportResult(out, out.with_name(f"{out.stem}_plots"), inputs=inputs)
    trainings = _training_section(inputs, result, report)
    before_after = _before_after_section(inputs, result)
    step_curves = _step_curves(inputs, result)
    funnels = _funnel_section(inputs, result, report)
    verifiers = _verifier_section(inputs, result)
    routings = _routing_section(inputs, result)
    rollouts = _rollouts(inputs, max_attempts, report)
    result.attempts_shown = sum(len(r.attempts) for r in rollouts)
    page = _render(
        generated=datetime.datetime.now(datetime.UTC).strftime("generated %Y-%m-%d %H:%M UTC"),
        sources=[str(p) for p in run_dirs], warnings=inputs.warnings, trainings=trainings,
        before_after=before_after, step_curves=step_curves,
        evals=[_eval_details(run) for run in inputs.ordered_evals()],
        funnels=funnels, verifiers=verifiers, routings=routings, task_table=_task_table(_stage_evals(inputs)), rollouts=rollouts,
    )  # fmt: skip
    result.plots_dir.mkdir(parents=True, exist_ok=True)
    for plot in result.plots:
        with atomic_writer(result.plots_dir / plot.name, "wb") as handle:
            handle.write(plot.png)
    with atomic_writer(out) as handle:
        handle.write(page)
    return result


def _embed(plot: Plot, result: ReportResult) -> dict[str, str]:
    names = {p.name for p in result.plots}
    name, number = plot.name, 2
    while name in names:  # two runs with the same label: keep both files
        name = plot.name.replace(".png", f"-{number}.png")
        number += 1
    result.plots.append(Plot(name, plot.title, plot.png))
    return {"title": plot.title, "b64": base64.b64encode(plot.png).decode("ascii")}


def _training_section(inputs: ReportInputs, result: ReportResult, report: Progress) -> list[dict[str, Any]]:
    sections = []
    for index, run in enumerate(inputs.ordered_trainings(), start=1):
        families = training_series(run.rows)
        plots = [_embed(curve_plot(f"train-{slug(run.label)}-{slug(family)}.png", f"{run.label}: {family}", series),
                        result) for family, series in families.items()]  # fmt: skip
        columns = sorted({column for series in families.values() for column in series})
        sections.append({"label": run.label, "rows": len(run.rows), "columns": columns, "plots": plots})
        report("training curves", index, len(inputs.trainings))
    return sections


def _interval_text(block: dict[str, Any], name: str) -> str:
    try:
        low, high = block["intervals"][name]
        return f"{float(block[name]):.1%} [{float(low):.1%}, {float(high):.1%}]"
    except (KeyError, TypeError, ValueError):
        value = block.get(name)
        return f"{float(value):.1%}" if isinstance(value, int | float) else "–"


def _top_k(summary: dict[str, Any]) -> str | None:
    ks = [k for k in summary.get("ks") or [] if isinstance(k, int) and k > 1]
    return f"pass@{max(ks)}" if ks else None


def _stage_evals(inputs: ReportInputs) -> list[EvalRun]:
    """The evals of whole stages (baseline, sft, grpo, ...), not of a training run's checkpoints."""
    return [run for run in inputs.ordered_evals() if not STEP_STAGE.match(run.stage)]


def _step_curves(inputs: ReportInputs, result: ReportResult) -> list[dict[str, str]]:
    """Per training run whose checkpoints were evaluated (stages `<run>-step-N`, as the quickstart names them):
    held-out pass@1 over its steps, a line per split."""
    series: dict[str, dict[str, tuple[list[float], list[float]]]] = {}
    points = sorted(
        (
            (int(match["step"]), match["run"], run)
            for run in inputs.evals
            if (match := STEP_STAGE.match(run.stage))
        ),
        key=lambda point: point[0],
    )
    for step, name, run in points:
        value = run.summary.get("pass@1")
        if isinstance(value, int | float):
            xs, ys = series.setdefault(name, {}).setdefault(run.split, ([], []))
            xs.append(float(step))
            ys.append(float(value))
    return [
        _embed(
            curve_plot(f"steps-{slug(name)}.png", f"{name}: held-out pass@1 at each checkpoint", lines),
            result,
        )
        for name, lines in series.items()
    ]


def _before_after_section(inputs: ReportInputs, result: ReportResult) -> dict[str, Any] | None:
    runs = _stage_evals(inputs)
    if not runs:
        return None
    stages = list(dict.fromkeys(run.stage for run in runs))
    splits = list(dict.fromkeys(run.split for run in runs))
    texts: dict[tuple[str, str], list[str]] = {}
    for run in runs:
        text = _interval_text(run.summary, "pass@1")
        top = _top_k(run.summary)
        for name in score_names(run.summary)[1:]:  # best@k where a selection ran, then the top pass@k
            if name.startswith("best@") or name == top:
                text += f" · {name} {_interval_text(run.summary, name)}"
        texts.setdefault((run.split, run.stage), []).append(text)
    bars = stage_bars(runs)
    cells = {}
    for key, found in texts.items():  # several runs (seeds) of a cell: their mean first, then each run
        bar = bars.get(key)
        mean = f"mean {bar.value:.1%} of {len(bar.points)} runs: " if bar and len(bar.points) > 1 else ""
        cells[key] = mean + " | ".join(found)
    plot = _embed(before_after_plot(splits, stages, bars), result) if bars else None
    return {"stages": stages, "splits": splits, "cells": cells, "plot": plot}


def stage_bars(runs: list[EvalRun]) -> dict[tuple[str, str], StageBar]:
    """Per (split, stage): one run's pass@1 and its bootstrap interval, or, where several runs (seeds) share
    the cell, their mean with the range across them, every run's value kept as a point."""
    values: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    for run in runs:
        try:
            low, high = run.summary["intervals"]["pass@1"]
            values.setdefault((run.split, run.stage), []).append(
                (float(run.summary["pass@1"]), float(low), float(high))
            )
        except (KeyError, TypeError, ValueError):
            continue
    bars = {}
    for key, found in values.items():
        points = [value for value, _, _ in found]
        if len(found) == 1:
            bars[key] = StageBar(points[0], found[0][1], found[0][2], points)
        else:
            bars[key] = StageBar(sum(points) / len(points), min(points), max(points), points)
    return bars


def _eval_details(run: EvalRun) -> dict[str, Any]:
    summary = run.summary
    ks = score_names(summary)
    rows = [
        {"group": "all", "tasks": summary.get("tasks", ""), "cells": [_interval_text(summary, k) for k in ks]}
    ]
    breakdown = summary.get("breakdown") if isinstance(summary.get("breakdown"), dict) else {}
    for group, labels in breakdown.items():
        for label, block in labels.items() if isinstance(labels, dict) else []:
            if isinstance(block, dict):
                rows.append({"group": f"{group}: {label}", "tasks": block.get("tasks", ""),
                             "cells": [_interval_text(block, k) for k in ks]})  # fmt: skip
    settings = summary.get("bootstrap") if isinstance(summary.get("bootstrap"), dict) else {}
    bootstrap = f"95% bootstrap over tasks, {settings.get('resamples', '?')} resamples, seed {settings.get('seed', '?')}"
    return {"label": run.label, "path": str(run.path), "policy": summary.get("policy", "?"), "n": summary.get("n", "?"),
            "tasks": summary.get("tasks", "?"), "mode": summary.get("mode", "agent"), "bootstrap": bootstrap,
            "ks": ks, "breakdown": rows}  # fmt: skip


def _funnel_section(inputs: ReportInputs, result: ReportResult, report: Progress) -> list[dict[str, Any]]:
    sections = []
    for index, funnel in enumerate(inputs.funnels, start=1):
        view = funnel_view(funnel)
        report("funnels", index, len(inputs.funnels))
        if view is None:
            inputs.warnings.append(f"{funnel.path}: no counts found in it; not shown")
            continue
        labels, counts = [r.label for r in view.rows], [r.count for r in view.rows]
        plot = _embed(funnel_plot(f"funnel-{slug(funnel.label)}.png", view.title, labels, counts), result)
        sections.append({"title": view.title, "plot": plot, "rows": view.rows})
    return sections


def _verifier_section(inputs: ReportInputs, result: ReportResult) -> list[dict[str, Any]]:
    """Per `repogym verify` folder: its reliability diagram, and AUC and ECE with their intervals beside it."""
    sections = []
    for run in inputs.verifies:
        summary = run.summary
        attempts = summary.get("attempts", "?")
        title = f"{run.label}: verifier reliability, predicted p(YES) vs observed resolve rate ({attempts} attempts)"
        plot = reliability_plot(f"reliability-{slug(run.label)}.png", title, summary["reliability"])
        bins = [b for b in summary["reliability"] if isinstance(b, dict) and b.get("count")]
        settings = summary.get("bootstrap") if isinstance(summary.get("bootstrap"), dict) else {}
        sections.append({
            "label": run.label, "path": str(run.path), "plot": _embed(plot, result),
            "verifier": summary.get("verifier", "?"), "attempts": attempts,
            "resolved": summary.get("resolved", "?"), "unresolved": summary.get("unresolved", "?"),
            "auc": _metric_text(summary, "auc"), "ece": _metric_text(summary, "ece"),
            "auc_undefined": summary.get("auc_undefined", ""),
            "bootstrap": f"95% bootstrap over tasks, {settings.get('resamples', '?')} resamples",
            "bins": [{"range": f"{_number_text(b.get('low'))}-{_number_text(b.get('high'))}", "count": b["count"],
                      "mean_score": _number_text(b.get("mean_score")),
                      "resolved_rate": _number_text(b.get("resolved_rate"))} for b in bins],
        })  # fmt: skip
    return sections


def _number_text(value: Any) -> str:
    return f"{float(value):.3f}" if isinstance(value, int | float) else "–"


def _metric_text(summary: dict[str, Any], name: str) -> str:
    """`0.812 [0.700, 0.950]`: a verifier's AUC or ECE (a number in [0, 1], not a rate) and its interval."""
    interval = (summary.get("intervals") or {}).get(name)
    text = _number_text(summary.get(name))
    if isinstance(interval, list) and len(interval) == 2:
        text += f" [{_number_text(interval[0])}, {_number_text(interval[1])}]"
    return text


def _routing_section(inputs: ReportInputs, result: ReportResult) -> list[dict[str, Any]]:
    """Per routed eval (`repogym eval --route`): its curve drawn, and as a table between each policy alone."""
    sections = []
    for run in inputs.ordered_evals():
        routing = run.routing
        if routing is None:
            continue
        measure = routing_measure(routing)
        chosen = routing.get("threshold")
        curve = RoutingCurve(
            routing["curve"], routing["small"], routing["large"], measure, float(chosen or 0.0)
        )
        title = f"{run.label}: routing {routing.get('route', '?')} by {routing.get('by', '?')}"
        plot = _embed(routing_plot(f"routing-{slug(run.label)}.png", title, curve), result)
        rows = [_routing_row("small alone", routing["small"], routing, measure)]
        rows += [_routing_row(_number_text(row.get("threshold")), row, routing, measure, row.get("threshold") == chosen)
                 for row in routing["curve"] if isinstance(row, dict)]  # fmt: skip
        rows.append(_routing_row("large alone", routing["large"], routing, measure))
        sections.append({"label": run.label, "path": str(run.path), "route": routing.get("route", "?"),
                         "by": routing.get("by", "?"), "threshold": _number_text(chosen),
                         "tasks": routing.get("tasks", "?"), "measure": measure, "plot": plot, "rows": rows})  # fmt: skip
    return sections


def routing_measure(routing: dict[str, Any]) -> str:
    """The spend a routing curve is compared by: money where every row and both policies are priced, else tokens
    where the large policy spent any, else seconds."""
    rows = [*routing["curve"], routing["small"], routing["large"]]
    if all(isinstance(row.get("cost"), int | float) for row in rows) and routing["large"]["cost"]:
        return "cost"
    return "tokens" if routing["large"].get("tokens") else "seconds"


def _routing_row(
    label: str, row: dict[str, Any], routing: dict[str, Any], measure: str, chosen: bool = False
) -> dict[str, Any]:
    """One line of the routing table: the row's figures, and its resolve rate and spend as shares of the large
    policy's alone (what "95% of the large policy at 60% of its cost" is read from)."""
    large = routing["large"]

    def of_large(name: str) -> str:
        value, whole = row.get(name), large.get(name)
        ok = isinstance(value, int | float) and isinstance(whole, int | float) and whole
        return f"{float(value) / float(whole):.0%}" if ok else "–"

    share = row.get("share_to_large", 1.0 if label == "large alone" else 0.0)
    tokens, seconds, cost = row.get("tokens"), row.get("seconds"), row.get("cost")
    return {
        "label": label, "chosen": chosen, "to_large": f"{float(share):.0%}",
        "resolve_rate": _interval_text(row, "resolve_rate"), "resolve_of_large": of_large("resolve_rate"),
        "tokens": f"{tokens:,}" if isinstance(tokens, int) else "–",
        "seconds": f"{seconds:.1f}" if isinstance(seconds, int | float) else "–",
        "cost": f"{cost:.4g}" if isinstance(cost, int | float) else "–", "spend_of_large": of_large(measure),
    }  # fmt: skip


def _task_table(runs: list[EvalRun]) -> dict[str, Any]:
    facts: dict[str, dict[str, str]] = {}
    for run in runs:
        for iid, row in run.summary["per_task"].items():
            if isinstance(row, dict):
                facts.setdefault(iid, {k: str(row.get(k) or "") for k in ("repo", "method", "difficulty")})
    rows = []
    for iid in sorted(facts)[:MAX_TASK_ROWS]:
        cells = []
        for run in runs:
            row = run.summary["per_task"].get(iid)
            n, c = (row.get("n"), row.get("c")) if isinstance(row, dict) else (None, None)
            if not isinstance(n, int) or not isinstance(c, int) or n < 1:
                cells.append({"text": "", "css": ""})
            else:
                cells.append({"text": f"{c}/{n}", "css": "full" if c == n else "some" if c else "none"})
        rows.append({"instance_id": iid, **facts[iid], "cells": cells})
    return {"columns": [run.label for run in runs], "rows": rows, "cut": max(0, len(facts) - MAX_TASK_ROWS)}


def _rollouts(inputs: ReportInputs, max_attempts: int, report: Progress) -> list[Any]:
    folders = [(run.rollout_dir, run.label) for run in inputs.ordered_evals() if run.rollout_dir.is_dir()]
    folders += [(run.path, run.label) for run in inputs.rollouts]
    views = []
    for index, (folder, label) in enumerate(folders, start=1):
        views.append(rollout_view(folder, label, max_attempts))
        report("trajectories", index, len(folders))
    return views


def _render(**context: Any) -> str:
    import jinja2

    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent),
        autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
    )  # fmt: skip
    digest = base64.b64encode(hashlib.sha256(PAGE_SCRIPT.encode("utf-8")).digest()).decode("ascii")
    template = environment.get_template("page.html.j2")
    return template.render(script=PAGE_SCRIPT, script_hash=f"sha256-{digest}", **context)
