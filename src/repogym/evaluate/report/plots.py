"""The report's figures, drawn with matplotlib's object API (no pyplot state) into PNG bytes.

Every plot is a `Plot` (a file name, a title, the PNG); the page embeds it as base64 and the same
bytes are written beside the page. Training columns are grouped into families (`metric_family`),
one figure per family per run, so a loss never shares an axis with a learning rate.
"""

from __future__ import annotations

import io
import math
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Columns that are axes or one-off totals, not curves.
NOT_CURVES = frozenset({"step", "epoch", "wall_s", "total_flos", "train_runtime", "train_samples_per_second",
                        "train_steps_per_second", "train_loss"})  # fmt: skip
#: (family, pattern on the lower-cased column name), first match wins; the rest go to "other".
FAMILIES: tuple[tuple[str, str], ...] = (
    ("loss", r"loss"),
    ("reward", r"^rewards?\b|^rewards?[/_]|reward"),
    ("resolve rate", r"resolve"),
    ("format errors", r"format"),
    ("clipping", r"clip"),
    ("throughput", r"per_s(ec(ond)?)?$"),
    # TRL's `num_tokens` counts every token trained on so far (a running total): not a length.
    ("tokens seen", r"(^|/)num_tokens$|tokens_seen"),
    ("completion length", r"length|_len\b|tokens"),
    ("learning rate", r"learning_rate|^lr$"),
    ("grad norm", r"grad_norm"),
    ("kl", r"(^|[/_])kl($|[/_])"),
    ("entropy", r"entropy"),
    ("timing", r"time|_s$|seconds"),
)
_SLUG = re.compile(r"[^A-Za-z0-9]+")


@dataclass(frozen=True)
class Plot:
    name: str
    """File name of the PNG (unique within a report)."""
    title: str
    png: bytes


def metric_family(column: str) -> str:
    """The figure a training column is drawn in.

    >>> [metric_family(c) for c in ("loss", "rewards/tests_pass/mean", "completions/mean_length", "kl", "foo")]
    ['loss', 'reward', 'completion length', 'kl', 'other']
    >>> metric_family("tokens_per_s")  # pretraining's throughput, not a length
    'throughput'
    >>> metric_family("num_tokens"), metric_family("completions/max_length")  # SFT's and GRPO's running total
    ('tokens seen', 'completion length')
    """
    lowered = column.lower()
    for family, pattern in FAMILIES:
        if re.search(pattern, lowered):
            return family
    return "other"


def slug(text: str) -> str:
    """A file-name-safe version of a label.

    >>> slug("runs/sft: loss")
    'runs-sft-loss'
    """
    return _SLUG.sub("-", text).strip("-").lower() or "plot"


def _figure(width: float, height: float) -> Figure:
    """A figure not tied to pyplot (matplotlib is the report extra: imported when a report draws)."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height))


def _png(figure: Figure) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    return buffer.getvalue()


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def training_series(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, tuple[list[float], list[float]]]]:
    """family -> column -> (steps, values), over the numeric columns of metrics.jsonl rows."""
    families: dict[str, dict[str, tuple[list[float], list[float]]]] = {}
    for index, row in enumerate(rows):
        x = _number(row.get("step"))
        x = float(index) if x is None else x
        for column, value in row.items():
            y = _number(value)
            if column in NOT_CURVES or y is None:
                continue
            xs, ys = families.setdefault(metric_family(column), {}).setdefault(column, ([], []))
            xs.append(x)
            ys.append(y)
    return dict(sorted(families.items(), key=lambda item: [f for f, _ in FAMILIES].index(item[0])
                       if item[0] != "other" else len(FAMILIES)))  # fmt: skip


def curve_plot(name: str, title: str, series: dict[str, tuple[list[float], list[float]]]) -> Plot:
    figure = _figure(5.4, 3.0)
    axes = figure.add_subplot()
    for column, (xs, ys) in sorted(series.items()):
        axes.plot(xs, ys, marker="o" if len(xs) < 30 else None, markersize=3, label=column)
    axes.set_title(title, fontsize=10)
    axes.set_xlabel("step")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7, loc="best")
    figure.tight_layout()
    return Plot(name, title, _png(figure))


@dataclass(frozen=True)
class StageBar:
    """One bar of the before/after plot: `value` with an error bar from `low` to `high`, and the runs'
    own values (one run: the bootstrap interval; several: their mean and range)."""

    value: float
    low: float
    high: float
    points: list[float]


def before_after_plot(
    splits: Sequence[str], stages: Sequence[str], cells: dict[tuple[str, str], StageBar]
) -> Plot:
    """Grouped bars: per split, one bar per stage (pass@1) with its error bar; where several runs (seeds)
    share a bar, it is their mean, the error bar their range, and each run a dot."""
    figure = _figure(6.4, 3.4)
    axes = figure.add_subplot()
    width = 0.8 / max(1, len(stages))
    several = max((len(bar.points) for bar in cells.values()), default=1)
    for i, stage in enumerate(stages):
        xs, heights, low_err, high_err = [], [], [], []
        for j, split in enumerate(splits):
            if (split, stage) in cells:
                bar = cells[(split, stage)]
                x = j + (i - (len(stages) - 1) / 2) * width
                xs.append(x)
                heights.append(bar.value * 100)
                low_err.append(max(0.0, (bar.value - bar.low) * 100))
                high_err.append(max(0.0, (bar.high - bar.value) * 100))
                if len(bar.points) > 1:
                    axes.scatter(
                        [x] * len(bar.points), [p * 100 for p in bar.points], s=10, color="black", zorder=3
                    )
        if xs:
            axes.bar(xs, heights, width * 0.9, yerr=[low_err, high_err], capsize=3, label=stage)
    axes.set_xticks(range(len(splits)), list(splits), fontsize=8)
    axes.set_ylabel("pass@1 (%)")
    axes.set_ylim(0, 118)  # headroom for the legend above full bars
    title = (
        f"resolve rate per split and stage: mean of {several} runs (dots), range across them"
        if several > 1
        else "resolve rate per split and stage (95% bootstrap interval)"
    )
    axes.set_title(title, fontsize=10 if several == 1 else 9)
    axes.legend(fontsize=8, loc="upper center", ncol=min(len(stages), 5), frameon=False)
    axes.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    return Plot("before-after.png", "resolve rate per split and stage", _png(figure))


def funnel_plot(name: str, title: str, labels: Sequence[str], counts: Sequence[int]) -> Plot:
    """Horizontal bars, first step on top, each labelled with its count."""
    figure = _figure(5.4, max(1.6, 0.35 * len(labels) + 0.9))
    axes = figure.add_subplot()
    positions = list(range(len(labels)))[::-1]
    bars = axes.barh(positions, counts, color="#4c72b0")
    axes.bar_label(bars, labels=[str(c) for c in counts], fontsize=7, padding=2)
    axes.set_yticks(positions, [label[:40] for label in labels], fontsize=7)
    axes.set_title(title, fontsize=10)
    axes.margins(x=0.12)
    figure.tight_layout()
    return Plot(name, title, _png(figure))


def reliability_plot(name: str, title: str, bins: Sequence[dict[str, Any]]) -> Plot:
    """A verifier's reliability diagram: per equal-width bin of predicted p(YES), the share of its attempts that
    resolved (a bar over the bin) at the bin's mean prediction (a dot), each bar labelled with its attempt count;
    a calibrated verifier's dots lie on the diagonal. Empty bins draw nothing (`repogym verify`'s summary bins)."""
    figure = _figure(4.6, 4.2)
    axes = figure.add_subplot()
    axes.plot([0, 1], [0, 1], linestyle="--", color="#8c959f", linewidth=1, label="calibrated (diagonal)")
    filled = [b for b in bins if (b.get("count") or 0) > 0 and _number(b.get("resolved_rate")) is not None]
    if filled:
        lows = [float(b["low"]) for b in filled]
        widths = [float(b["high"]) - float(b["low"]) for b in filled]
        rates = [float(b["resolved_rate"]) for b in filled]
        bars = axes.bar(lows, rates, widths, align="edge", color="#4c72b0", alpha=0.35, edgecolor="#4c72b0",
                        label="resolve rate in the bin")  # fmt: skip
        axes.bar_label(bars, labels=[f"n={b['count']}" for b in filled], fontsize=7, padding=2)
        axes.plot([float(b["mean_score"]) for b in filled], rates, "o", color="#c44e52", markersize=4,
                  label="at the bin's mean p(YES)")  # fmt: skip
    axes.set_xlim(0, 1)
    axes.set_ylim(0, 1.12)  # room for the counts above full bars
    axes.set_xlabel("predicted p(YES)")
    axes.set_ylabel("observed resolve rate")
    axes.set_title("\n".join(textwrap.wrap(title, 60)), fontsize=9)
    axes.legend(fontsize=7, loc="upper left", frameon=False)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    return Plot(name, title, _png(figure))


#: Each policy of a route and its colour in the routing plot.
ROUTE_COLOURS = (("small", "#55a868"), ("large", "#c44e52"))


@dataclass(frozen=True)
class RoutingCurve:
    """What a routing plot draws: the curve's rows (threshold, share_to_large, resolve_rate and the spend) and each
    policy alone, from an eval summary's `routing`; `measure` is the spend the second panel compares (cost,
    tokens or seconds) and `chosen` the run's own threshold."""

    rows: Sequence[dict[str, Any]]
    small: dict[str, Any]
    large: dict[str, Any]
    measure: str
    chosen: float


def routing_plot(name: str, title: str, curve: RoutingCurve) -> Plot:
    """Routing between a small and a large policy. Left: per threshold, the routed resolve rate and the share of
    tasks sent to the large policy, with each policy's resolve rate alone as a level. Right: the routed resolve
    rate at each threshold against its spend as a share of the large policy's alone (the two ends are the two
    policies alone, drawn as squares)."""
    figure = _figure(9.6, 3.6)
    by_threshold, against_spend = figure.subplots(1, 2)
    thresholds = [float(row["threshold"]) for row in curve.rows]
    resolved = [100 * float(row["resolve_rate"]) for row in curve.rows]
    by_threshold.plot(thresholds, resolved, marker="o", markersize=3, label="routed resolve rate")
    by_threshold.plot(thresholds, [100 * float(row["share_to_large"]) for row in curve.rows], linestyle="--",
                      color="#8c959f", label="share sent to large")  # fmt: skip
    for key, color in ROUTE_COLOURS:
        by_threshold.axhline(100 * float(getattr(curve, key)["resolve_rate"]), color=color, linewidth=1,
                             linestyle=":", label=f"{key} alone")  # fmt: skip
    by_threshold.axvline(curve.chosen, color="black", linewidth=0.8, alpha=0.5)
    by_threshold.set_xlabel("threshold (the small policy keeps risk below it)")
    by_threshold.set_ylabel("%")
    by_threshold.set_ylim(-3, 108)
    by_threshold.legend(fontsize=7, loc="best", frameon=False)
    by_threshold.grid(alpha=0.3)
    whole = _number(curve.large.get(curve.measure))
    if whole:
        # Points, not a line: the spend need not fall as the threshold rises (a cascade pays the small policy on
        # every task), so a line in threshold order would double back on itself.
        for row, rate in zip(curve.rows, resolved, strict=True):
            spent = _number(row.get(curve.measure))
            if spent is not None:
                chosen = float(row["threshold"]) == curve.chosen
                against_spend.plot([100 * spent / whole], [rate], "o", color="#4c72b0", markersize=6 if chosen else 4,
                                   markeredgecolor="black" if chosen else "#4c72b0",
                                   label=f"threshold {curve.chosen:g}" if chosen else None)  # fmt: skip
        for key, color in ROUTE_COLOURS:
            alone = getattr(curve, key)
            value = _number(alone.get(curve.measure))
            if value is not None:
                against_spend.plot([100 * value / whole], [100 * float(alone["resolve_rate"])], "s", color=color,
                                   markersize=7, label=f"{key} alone")  # fmt: skip
        against_spend.legend(fontsize=7, loc="lower right", frameon=False)
    else:
        against_spend.text(0.5, 0.5, f"the large policy alone spent no {curve.measure}", ha="center", fontsize=8,
                           transform=against_spend.transAxes)  # fmt: skip
    against_spend.set_xlabel(f"{curve.measure}, % of the large policy's alone")
    against_spend.set_ylabel("resolve rate (%)")
    against_spend.set_ylim(-3, 108)
    against_spend.grid(alpha=0.3)
    figure.suptitle("\n".join(textwrap.wrap(title, 110)), fontsize=9)
    figure.tight_layout()
    return Plot(name, title, _png(figure))
