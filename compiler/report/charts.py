"""Charts as inline SVG, drawn with matplotlib's object API (never pyplot): each run's and
scaling's charts by name (the step-time charts are in step_charts, the per-rank ones in
rank_charts, the shared style in chart_style).

Every chart must read in grayscale print: series differ by gray level *and*
hatching, and carry direct labels rather than a colour legend.  Output is
byte-identical across runs: ``svg.hashsalt`` is fixed (per chart, so the hashed
clip-path and hatch ids of two charts in one page never collide), the Date
metadata is dropped, and text is drawn as paths so no font is looked up later.

Labels come from identifiers and fixed category names; matplotlib escapes the
text it writes into SVG, so the result is safe to inline as markup.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from effspec.display import sig
from effspec.report.chart_style import INK, STYLES, _styled, markup, new_figure, scope_ids, short_label, svg
from effspec.report.rank_charts import rank_split_chart, straggler_timeline_chart
from effspec.report.step_charts import step_series_caption, step_series_chart, step_time_caption, step_time_chart

if TYPE_CHECKING:
    from effspec.engine.breakdown import Reconciliation
    from effspec.engine.results import RunResult
    from effspec.engine.scaling import ScalingResult


def number_charts(views: Iterable[Any]) -> None:
    """Give the charts of ``views`` (in document order) unique ids: chart n's ids start ``cn-``."""
    n = 0
    for view in views:
        for key, value in view.charts.items():
            if isinstance(value, str) and value.startswith("<svg"):
                n += 1
                view.charts[key] = scope_ids(value, f"c{n}")

def breakdown_chart(rec: Reconciliation, salt: str) -> str | None:
    """The median step as one stacked bar of its declared shares (two at least: one says nothing the table does not)."""
    rows = [r for r in rec.rows if r.share > 0]
    if len(rows) < 2:
        return None
    with _styled(salt):
        fig, ax = new_figure(6.4, 1.7)
        left = 0.0
        for i, row in enumerate(rows):
            color, hatch = STYLES[i % len(STYLES)]
            ax.barh(0, row.share * 100, left=left * 100, height=0.5, color=color, hatch=hatch,
                    edgecolor=INK, linewidth=0.6)
            centre = (left + row.share / 2) * 100
            # Direct labels, alternating above and below so narrow segments stay legible.
            y, va = (0.42, "bottom") if i % 2 == 0 else (-0.42, "top")
            # A plain leader line, not an arrow patch: clipping an arrow to its text box was a fifth of the chart's cost.
            ax.plot([centre, centre], [0.25 if y > 0 else -0.25, y], color=INK, lw=0.5)
            ax.text(centre, y, f"{row.category.replace('_', ' ')}\n{sig(row.share * 100, 3)} %", ha="center", va=va, fontsize=6.5)
            left += row.share
        top = max(100.0, left * 100)
        ax.axvline(100, color=INK, lw=0.8, ls="--")
        ax.set_xlim(0, top * 1.02)
        ax.set_ylim(-1.05, 1.05)
        ax.set_yticks([])
        ax.spines["left"].set_visible(False)
        ax.set_xlabel("share of the median step (%)" + (
            f"; declared shares sum to {sig(left * 100, 4)} %" if abs(left - 1) > 1e-9 else ""))
        fig.subplots_adjust(left=0.02, right=0.98, bottom=0.25, top=0.98)
        return markup(svg(fig, salt))

def scaling_chart(points: list[tuple[str, float, float]], kind: str, salt: str) -> str | None:
    """Efficiency against device count, ideal (100 %) as a dashed line. points: (run, devices, efficiency)."""
    if len(points) < 2:
        return None
    with _styled(salt):
        fig, ax = new_figure(6.4, 2.3)
        xs = [p[1] for p in points]
        ys = [p[2] * 100 for p in points]
        ax.plot(xs, [100] * len(xs), color=INK, lw=0.8, ls="--")
        ax.annotate("ideal", (xs[-1], 100), xytext=(4, 2), textcoords="offset points", fontsize=6.5)
        ax.plot(xs, ys, color=INK, lw=1.2, marker="o", markerfacecolor="white", markersize=4)
        for (run, dev, _eff), y in zip(points, ys, strict=False):
            ax.annotate(f"{short_label(run)}\n{sig(y, 4)} %", (dev, y), xytext=(0, -8), textcoords="offset points",
                        ha="center", va="top", fontsize=6.5)
        ax.set_xscale("log", base=2)
        ax.set_xticks(xs)
        ax.set_xticklabels([f"{x:g}" for x in xs])
        ax.minorticks_off()
        ax.set_xlim(min(xs) / 1.5, max(xs) * 1.5)
        ax.set_ylim(0, max(110.0, max(ys) * 1.1))
        ax.set_xlabel("devices")
        ax.set_ylabel(f"{kind} scaling efficiency (%)")
        fig.subplots_adjust(left=0.08, right=0.98, bottom=0.18, top=0.95)
        return markup(svg(fig, salt))

def run_charts(rr: RunResult) -> dict[str, str]:
    """The charts of one run, by name; absent where the data is absent."""
    out: dict[str, str] = {}
    if rr.breakdown is not None:
        svg = breakdown_chart(rr.breakdown, f"{rr.run.id}-breakdown")
        if svg:
            out["breakdown"] = svg
    timing = rr.run.block("timing")
    entry = timing.get("step_time") if timing is not None else None
    if rr.step_stats is not None and entry is not None and hasattr(entry.value, "values"):
        values, warmup = list(entry.value.values), rr.step_stats.warmup_excluded
        series = step_series_chart(values, warmup, rr.step_stats, f"{rr.run.id}-series")
        if series:
            out["step_series"] = series
            out["step_series_caption"] = step_series_caption(values, warmup, rr.step_stats)
        kept = values[warmup:]
        svg = step_time_chart(kept, rr.step_stats, f"{rr.run.id}-steps")
        if svg:
            out["step_time"] = svg
            out["step_time_caption"] = step_time_caption(kept, rr.step_stats)
    profile = getattr(rr.diagnosis, "profile", None) if rr.diagnosis is not None else None
    for key, draw in (("ranks", rank_split_chart), ("rank_timeline", straggler_timeline_chart)):
        drawn = draw(profile, f"{rr.run.id}-{key}")
        if drawn:
            out[key], out[key + "_caption"] = drawn
    return out


def scaling_charts(sr: ScalingResult, runs: dict[str, RunResult]) -> dict[str, str]:
    name = "weak_scaling_efficiency" if sr.scaling.kind == "weak" else "strong_scaling_efficiency"
    if sr.baseline is None:
        return {}
    points = [(sr.baseline.run_id, sr.baseline.devices, 1.0)]
    points += [(r.run_id, r.devices, r.metrics[name].value) for r in sr.runs if name in r.metrics and r.devices > 0]
    svg = scaling_chart(points, sr.scaling.kind or "strong", f"{sr.scaling.id}-scaling")
    return {"efficiency": svg} if svg else {}
