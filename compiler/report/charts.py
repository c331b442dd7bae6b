"""Charts as inline SVG, drawn with matplotlib's object API (never pyplot).

Every chart must read in grayscale print: series differ by gray level *and*
hatching, and carry direct labels rather than a colour legend.  Output is
byte-identical across runs: ``svg.hashsalt`` is fixed (per chart, so the hashed
clip-path and hatch ids of two charts in one page never collide), the Date
metadata is dropped, and text is drawn as paths so no font is looked up later.

Labels come from identifiers and fixed category names; matplotlib escapes the
text it writes into SVG, so the result is safe to inline as markup.
"""

from __future__ import annotations

import io
import re
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING, Any

from effspec.display import percent, quantity, sig
from effspec.report.mapping import as_mapping
from effspec.rules.sampling.EFF502 import MIN_SAMPLES

if TYPE_CHECKING:  # matplotlib is imported when a chart is drawn
    from matplotlib.typing import RcKeyType

# Gray levels, each with its own hatch, so neighbours differ in print.  Dotted
# hatches ('.', 'o') are avoided: matplotlib writes them as huge SVG patterns.
STYLES = (
    ("#3a3a3a", ""), ("#9a9a9a", "////"), ("#d9d9d9", ""), ("#6a6a6a", "||"),
    ("#ffffff", "\\\\\\"), ("#b8b8b8", "xx"), ("#f2f2f2", "--"), ("#ffffff", "++"),
)
INK = "#1a1a1a"
RC: dict[RcKeyType, Any] = {  # rc_context's own parameter type
    "svg.fonttype": "path",
    "font.family": "DejaVu Sans",
    "font.size": 7.5,
    "axes.edgecolor": INK,
    "axes.labelcolor": INK,
    "xtick.color": INK,
    "ytick.color": INK,
    "hatch.linewidth": 0.6,
    "hatch.color": INK,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


# Charts are drawn only where they say something: a histogram needs enough
# samples to have a shape (below this the statistics table says it all, and
# each bin would hold a sample or two), a stacked bar at least two segments.
MIN_HISTOGRAM_SAMPLES = 20
MAX_TICKS = 6  # major ticks per axis: each is several artists and a text drawn as paths


@cache
def _style() -> dict:
    """The shared chart style, validated by matplotlib once per process and reused by every chart."""
    import matplotlib

    params = matplotlib.RcParams()
    for key, value in RC.items():
        params[key] = value  # validated here, once
    return dict(params)


@contextmanager
def _styled(salt: str):
    """One rc context per chart: the shared style and the chart's own SVG id salt."""
    import matplotlib

    with matplotlib.rc_context({**_style(), "svg.hashsalt": f"effspec-{salt}"}):
        yield


def _svg(fig, salt: str) -> str:
    """The figure as an <svg> element (no XML prolog), deterministic.  Called inside ``_styled(salt)``."""
    from matplotlib.backends.backend_svg import FigureCanvasSVG

    FigureCanvasSVG(fig)
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches=None)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _figure(width: float, height: float):
    """A figure and its axes in the shared style (called inside ``_styled``), with few ticks."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(width, height))
    ax = fig.add_subplot()
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(MaxNLocator(MAX_TICKS, steps=[1, 2, 2.5, 5, 10]))  # AutoLocator's nice steps
    return fig, ax


MAX_LABEL_CHARS = 40  # a spec identifier in a chart: each character is a path, and no one reads 20,000 of them


def _short(text: str) -> str:
    return text if len(text) <= MAX_LABEL_CHARS else text[:MAX_LABEL_CHARS - 1] + "\u2026"


def _markup(svg: str):
    from markupsafe import Markup

    return Markup(svg)  # produced by matplotlib from our own labels, escaped by it


_ID = re.compile(r'(\sid=")([^"]+)"')
_REF = re.compile(r'(url\(#|(?:xlink:)?href="#)([^)"]+)')


def scope_ids(svg: str, prefix: str):
    """``svg`` with every id it defines prefixed ``prefix-``, and every reference to one of them
    (``url(#…)``, ``xlink:href="#…"``) rewritten to match.  matplotlib numbers its groups
    (``figure_1``, ``patch_3``) and names its glyphs (``DejaVuSans-31``) the same in every
    chart, so two charts in one page would repeat ids; a chart's index in its document,
    as the prefix, makes them unique and keeps the page deterministic.  ``prefix`` is ours
    (``c1``, ``c2``…), never spec text."""
    defined = {m.group(2) for m in _ID.finditer(svg)}
    text = _ID.sub(lambda m: f'{m.group(1)}{prefix}-{m.group(2)}"', str(svg))
    text = _REF.sub(lambda m: m.group(1) + (f"{prefix}-{m.group(2)}" if m.group(2) in defined else m.group(2)), text)
    return _markup(text)


def number_charts(views) -> None:
    """Give the charts of ``views`` (in document order) unique ids: chart n's ids start ``cn-``."""
    n = 0
    for view in views:
        for key, value in view.charts.items():
            if isinstance(value, str) and value.startswith("<svg"):
                n += 1
                view.charts[key] = scope_ids(value, f"c{n}")


def breakdown_chart(rec, salt: str) -> str | None:
    """The median step as one stacked bar of its declared shares (two at least: one says nothing the table does not)."""
    rows = [r for r in rec.rows if r.share > 0]
    if len(rows) < 2:
        return None
    with _styled(salt):
        fig, ax = _figure(6.4, 1.7)
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
        return _markup(_svg(fig, salt))


def step_time_caption(samples: list[float], stats) -> str:
    """The histogram's caption, saying only what the picture shows."""
    if any(v >= stats.stall_threshold for v in samples):
        parts = ["Step times after warm-up: the median (solid) and the stall threshold (dashed)",
                 "bins at or past the threshold hatched"]
    else:
        parts = [f"Step times after warm-up: the median (solid); no step reaches the stall threshold "
                 f"({quantity(stats.stall_threshold, 's')}), which is left off the axis"]
    if _long_tailed(samples, stats):
        parts.append("counts on a log scale, so a few slow steps stay visible beside the bulk")
    return "; ".join(parts) + "."


def _long_tailed(samples: list[float], stats) -> bool:
    """Stall steps a twentieth or less of the rest: on a linear count axis their bars vanish."""
    stalls = sum(v >= stats.stall_threshold for v in samples)
    return 0 < stalls * 20 <= len(samples) - stalls


def step_time_chart(samples: list[float], stats, salt: str) -> str | None:
    """Histogram of the kept step times, the median and the stall tail marked; None below
    ``MIN_HISTOGRAM_SAMPLES`` samples or when every sample is the same (no shape to show)."""
    if len(samples) < max(MIN_HISTOGRAM_SAMPLES, MIN_SAMPLES) or min(samples) == max(samples):
        return None
    with _styled(salt):
        fig, ax = _figure(6.4, 2.2)
        lo, hi = min(samples), max(samples)
        bins = max(5, min(40, len(samples) // 4))
        spread = hi > lo and lo + (hi - lo) / bins > lo  # samples a hair apart have no bin width either
        width = (hi - lo) / bins if spread else max(abs(hi) * 0.01, 1e-6)
        edges = [lo + i * width for i in range(bins + 1)] if spread else [lo - width, lo + width]
        counts = [0] * (len(edges) - 1)
        for v in samples:
            k = min(int((v - edges[0]) / (edges[1] - edges[0])), len(counts) - 1)
            counts[k] += 1
        # Two bar calls (steady bins, stall bins), not one a bin: each call is a container of artists.
        for stall, color, hatch in ((False, "#c8c8c8", ""), (True, "#5e5e5e", "////")):
            picked = [i for i in range(len(counts)) if (edges[i] >= stats.stall_threshold) == stall]
            if picked:
                ax.bar([edges[i] for i in picked], [counts[i] for i in picked], width=[edges[i + 1] - edges[i] for i in picked],
                       align="edge", color=color, hatch=hatch, edgecolor=INK, linewidth=0.4)
        ymax = max(counts) or 1
        ax.axvline(stats.median, color=INK, lw=1.2)
        ax.annotate(f"median {quantity(stats.median, 's')}", (stats.median, ymax * 1.02), ha="left", va="bottom",
                    fontsize=6.5, xytext=(3, 0), textcoords="offset points")
        stalls = any(v >= stats.stall_threshold for v in samples)
        if stalls:  # without a stall the threshold would only squeeze every bin against the left edge
            ax.axvline(stats.stall_threshold, color=INK, lw=0.8, ls="--")
            ax.annotate(f"stall threshold {quantity(stats.stall_threshold, 's')}\n{stats.stall_steps} stall steps, "
                        f"{percent(stats.stall_time_share, 3)} of time", (stats.stall_threshold, ymax * 0.75),
                        ha="left", va="top", fontsize=6.5, xytext=(3, 0), textcoords="offset points")
        right = max(edges[-1], stats.stall_threshold * 1.25) if stalls else edges[-1]
        ax.set_xlim(min(edges[0], stats.median) - width, right + width)
        if _long_tailed(samples, stats):
            ax.set_yscale("log")
            ax.set_ylim(0.7, ymax * 2.5)
            ax.set_ylabel("steps (log scale)")
        else:
            ax.set_ylim(0, ymax * 1.2)
            ax.set_ylabel("steps")
        ax.set_xlabel("step time (s), after warm-up")
        fig.subplots_adjust(left=0.08, right=0.98, bottom=0.2, top=0.95)
        return _markup(_svg(fig, salt))


def step_series_caption(values: list[float], warmup: int, stats) -> str:
    """The series chart's caption, saying only what the picture shows."""
    stalls = sum(v >= stats.stall_threshold for v in values[warmup:])
    parts = ["Each step's time by step index: the median after warm-up (solid) and the stall threshold (dashed)"
             if stalls else "Each step's time by step index: the median after warm-up (solid); no step reaches the "
             f"stall threshold ({quantity(stats.stall_threshold, 's')}), which is left off the axis"]
    if warmup:
        parts.append(f"the {warmup} warm-up step{'s' if warmup != 1 else ''}, left out of every statistic, shaded")
    if stalls:
        parts.append(f"the {stalls} stall step{'s' if stalls != 1 else ''} marked with a cross")
    return "; ".join(parts) + "."


def step_series_chart(values: list[float], warmup: int, stats, salt: str) -> str | None:
    """Every step's time against its index (warm-up shaded, stalls crossed, median line); None below
    the histogram's sample count (and so below EFF502's) after warm-up, where the table says all there
    is and a chart a run would only add weight (test_bounded_cost: 100 runs of 10 samples)."""
    kept = values[warmup:]
    if len(kept) < max(MIN_SAMPLES, MIN_HISTOGRAM_SAMPLES):
        return None
    with _styled(salt):
        fig, ax = _figure(6.4, 2.2)
        xs = list(range(1, len(values) + 1))
        if warmup:
            ax.axvspan(0.5, warmup + 0.5, facecolor="#e6e6e6", hatch="//", edgecolor="#9a9a9a", lw=0)
            ax.annotate("warm-up", (0.5, 1.0), xycoords=("data", "axes fraction"), xytext=(2, -2),
                        textcoords="offset points", ha="left", va="top", fontsize=6.5)
        ax.plot(xs, values, color="#6a6a6a", lw=0.6, marker="o", markersize=1.2)
        stall = [(x, v) for x, v in zip(xs, values, strict=True) if x > warmup and v >= stats.stall_threshold]
        if stall:
            ax.plot([x for x, _ in stall], [v for _, v in stall], ls="none", marker="x", markersize=5,
                    color=INK, markeredgewidth=1.0)
        ax.axhline(stats.median, color=INK, lw=1.0)
        ax.annotate(f"median {quantity(stats.median, 's')}", (1.0, stats.median), xycoords=("axes fraction", "data"),
                    xytext=(-2, 2), textcoords="offset points", ha="right", va="bottom", fontsize=6.5)
        if stall:  # without a stall the threshold line would flatten the series against the median
            ax.axhline(stats.stall_threshold, color=INK, lw=0.8, ls="--")
            ax.annotate(f"stall threshold {quantity(stats.stall_threshold, 's')}: {stats.stall_steps} stall steps",
                        (1.0, stats.stall_threshold), xycoords=("axes fraction", "data"), xytext=(-2, 2),
                        textcoords="offset points", ha="right", va="bottom", fontsize=6.5)
            ax.set_ylim(0, max(max(values), stats.stall_threshold) * 1.12)
        else:
            lo, hi = min(values), max(values)
            pad = (hi - lo) * 0.15 or abs(hi) * 0.01 or 1e-6
            ax.set_ylim(lo - pad, hi + pad * 2)
        ax.set_xlim(0.5, len(values) + 0.5)
        ax.set_xlabel("step index")
        ax.set_ylabel("step time (s)")
        fig.subplots_adjust(left=0.08, right=0.98, bottom=0.2, top=0.95)
        return _markup(_svg(fig, salt))


def scaling_chart(points: list[tuple[str, float, float]], kind: str, salt: str) -> str | None:
    """Efficiency against device count, ideal (100 %) as a dashed line. points: (run, devices, efficiency)."""
    if len(points) < 2:
        return None
    with _styled(salt):
        fig, ax = _figure(6.4, 2.3)
        xs = [p[1] for p in points]
        ys = [p[2] * 100 for p in points]
        ax.plot(xs, [100] * len(xs), color=INK, lw=0.8, ls="--")
        ax.annotate("ideal", (xs[-1], 100), xytext=(4, 2), textcoords="offset points", fontsize=6.5)
        ax.plot(xs, ys, color=INK, lw=1.2, marker="o", markerfacecolor="white", markersize=4)
        for (run, dev, _eff), y in zip(points, ys, strict=False):
            ax.annotate(f"{_short(run)}\n{sig(y, 4)} %", (dev, y), xytext=(0, -8), textcoords="offset points",
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
        return _markup(_svg(fig, salt))


def rank_chart(rows: list[tuple[str, float, float, float]], salt: str) -> str | None:
    """Compute, communication and stall seconds of the named ranks (worst, median), stacked."""
    if not rows:
        return None
    with _styled(salt):
        fig, ax = _figure(6.4, 0.6 + 0.45 * len(rows))
        names = ("compute", "communication", "stall")
        for i, (_name, *values) in enumerate(rows):
            left = 0.0
            for j, v in enumerate(values):
                color, hatch = STYLES[j]
                ax.barh(i, v, left=left, height=0.55, color=color, hatch=hatch, edgecolor=INK, linewidth=0.5)
                # Label a segment only where the label fits (a share of the
                # longest bar); the legend-free chart relies on direct labels.
                if v > 0.18 * max(sum(r[1:]) for r in rows):
                    ax.text(left + v / 2, i, f"{names[j]} {quantity(v, 's', 3)}", ha="center", va="center",
                            fontsize=6, color="white" if j == 0 else INK,
                            bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none"} if j else None)
                left += v
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([r[0] for r in rows])
        ax.invert_yaxis()
        ax.set_xlabel("seconds per step (compute solid, communication hatched, stall light)")
        fig.subplots_adjust(left=0.2, right=0.98, bottom=0.3 if len(rows) < 3 else 0.2, top=0.95)
        return _markup(_svg(fig, salt))


def rank_rows(diagnosis) -> list[tuple[str, float, float, float]]:
    """(label, compute, comm, stall) for the worst and median ranks, where the diagnosis evidence gives them.

    The diagnosis structure belongs to another module; look for mappings with
    compute/comm/stall under keys or labels naming `worst` and `median`.
    """
    data = as_mapping(diagnosis) or {}
    found: list[tuple[str, float, float, float]] = []

    def visit(key: str, value) -> None:
        m = as_mapping(value)
        if m is not None and all(isinstance(m.get(k), (int, float)) for k in ("compute", "comm", "stall")):
            tag = str(m.get("label") or m.get("role") or key)
            if "worst" in tag or "median" in tag:
                rank = m.get("rank")
                name = f"{tag.replace('_', ' ')}" + (f" (rank {rank})" if rank is not None else "")
                found.append((name, float(m["compute"]), float(m["comm"]), float(m["stall"])))
            return
        if m is not None:
            for k, v in m.items():
                visit(str(k), v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                visit(key, v)

    visit("", data)
    # Worst first, then median: a stable, meaningful order.
    return sorted(found, key=lambda r: (0 if "worst" in r[0] else 1, r[0]))[:4]


def run_charts(rr) -> dict:
    """The charts of one run, by name; absent where the data is absent."""
    out: dict[str, str | None] = {}
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
    rows = rank_rows(rr.diagnosis) if rr.diagnosis is not None else []
    if rows:
        out["ranks"] = rank_chart(rows, f"{rr.run.id}-ranks")
    return out


def scaling_charts(sr, runs: dict) -> dict:
    name = "weak_scaling_efficiency" if sr.scaling.kind == "weak" else "strong_scaling_efficiency"
    if sr.baseline is None:
        return {}
    points = [(sr.baseline.run_id, sr.baseline.devices, 1.0)]
    points += [(r.run_id, r.devices, r.metrics[name].value) for r in sr.runs if name in r.metrics and r.devices > 0]
    svg = scaling_chart(points, sr.scaling.kind or "strong", f"{sr.scaling.id}-scaling")
    return {"efficiency": svg} if svg else {}
