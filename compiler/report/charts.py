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
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from effspec.display import percent, quantity, sig
from effspec.engine.stats import MIN_SAMPLES

if TYPE_CHECKING:  # matplotlib is imported when a chart is drawn
    from matplotlib.typing import RcKeyType

# Gray levels, each with its own hatch, so neighbours differ in print.  Dotted
# hatches ('.', 'o') are avoided: matplotlib writes them as huge SVG patterns.
STYLES = (
    ("#3a3a3a", ""), ("#9a9a9a", "////"), ("#d9d9d9", ""), ("#6a6a6a", "||"),
    ("#ffffff", "\\\\\\"), ("#b8b8b8", "xx"), ("#f2f2f2", "--"), ("#ffffff", "++"),
)
INK = "#1a1a1a"
# A label drawn over the data (the median, the stall threshold) sits on a light box, so no line runs through it.
LABEL_BOX = {"boxstyle": "square,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.85}
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
    from matplotlib.ticker import MaxNLocator

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
                    fontsize=6.5, xytext=(3, 0), textcoords="offset points", bbox=LABEL_BOX)
        stalls = any(v >= stats.stall_threshold for v in samples)
        if stalls:  # without a stall the threshold would only squeeze every bin against the left edge
            ax.axvline(stats.stall_threshold, color=INK, lw=0.8, ls="--")
            ax.annotate(f"stall threshold {quantity(stats.stall_threshold, 's')}\n{stats.stall_steps} stall steps, "
                        f"{percent(stats.stall_time_share, 3)} of time", (stats.stall_threshold, ymax * 0.75),
                        ha="left", va="top", fontsize=6.5, xytext=(3, 0), textcoords="offset points", bbox=LABEL_BOX)
        right = max(edges[-1], stats.stall_threshold * 1.25) if stalls else edges[-1]
        ax.set_xlim(min(edges[0], stats.median) - width, right + width)
        if _long_tailed(samples, stats):
            ax.set_yscale("log")
            ax.set_ylim(0.7, ymax * 2.5)
            ax.set_ylabel("steps (log scale)")
        else:
            ax.set_ylim(0, ymax * 1.2)
            ax.set_ylabel("steps")
            ax.yaxis.set_major_locator(MaxNLocator(MAX_TICKS, integer=True))  # a count of steps: no 2.5 steps
        ax.set_xlabel("step time (s), after warm-up")
        fig.subplots_adjust(left=0.08, right=0.98, bottom=0.2, top=0.95)
        return _markup(_svg(fig, salt))


# A long series is drawn bucketed, so that the chart's size is bounded whatever the run's
# length (a 1,000,000-step run drew 1,000,224 markers, a 109 MB page): above
# MAX_SERIES_POINTS steps, the warm-up and the kept steps are each cut into runs of
# consecutive steps (SERIES_BUCKETS runs in all, shared by length) and each run is drawn by
# its fastest and its slowest step, in step order (min/max bucketing).  The range, every
# stall's run and the warm-up's end stay visible; every statistic and the histogram still
# use every step.  The caption says how many steps are drawn.
MAX_SERIES_POINTS = 2_000
SERIES_BUCKETS = MAX_SERIES_POINTS // 2


def _minmax(values: list[float], start: int, stop: int, buckets: int) -> list[int]:
    """The indexes of the fastest and the slowest value of each of ``buckets`` runs of
    consecutive indexes in [start, stop), in index order (one where they are the same)."""
    n = stop - start
    out: list[int] = []
    for b in range(buckets):
        run = range(start + b * n // buckets, start + (b + 1) * n // buckets)
        if run:
            out.extend(sorted({min(run, key=values.__getitem__), max(run, key=values.__getitem__)}))
    return out


def series_drawn(values: list[float], warmup: int) -> tuple[list[int], int]:
    """The indexes of the steps the series chart draws, and into how many runs it cut them
    (0: every step is drawn); see MAX_SERIES_POINTS."""
    n = len(values)
    if n <= MAX_SERIES_POINTS:
        return list(range(n)), 0
    warm = min(warmup, n)
    warm_buckets = min(warm, max(1, round(SERIES_BUCKETS * warm / n))) if warm else 0
    kept_buckets = SERIES_BUCKETS - warm_buckets
    return _minmax(values, 0, warm, warm_buckets) + _minmax(values, warm, n, kept_buckets), warm_buckets + kept_buckets


def step_series_caption(values: list[float], warmup: int, stats) -> str:
    """The series chart's caption, saying only what the picture shows."""
    stalls = sum(v >= stats.stall_threshold for v in values[warmup:])
    drawn, buckets = series_drawn(values, warmup)
    parts = ["Each step's time by step index: the median after warm-up (solid) and the stall threshold (dashed)"
             if stalls else "Each step's time by step index: the median after warm-up (solid); no step reaches the "
             f"stall threshold ({quantity(stats.stall_threshold, 's')}), which is left off the axis"]
    if buckets:
        parts.append(f"{len(drawn):,} of {len(values):,} steps drawn: the steps are cut into {buckets:,} runs of "
                     f"about {round(len(values) / buckets):,} consecutive steps, each drawn by its fastest and its slowest "
                     f"step (min/max bucketing), so the range and every stall's run stay visible; every statistic "
                     f"and the histogram use all {len(values) - warmup:,} steps after warm-up")
    if warmup:
        parts.append(f"the {warmup:,} warm-up step{'s' if warmup != 1 else ''}, left out of every statistic, shaded")
    if stalls and buckets:
        crossed = sum(i >= warmup and values[i] >= stats.stall_threshold for i in drawn)
        parts.append(f"of the {stalls:,} stall step{'s' if stalls != 1 else ''}, the {crossed:,} drawn "
                     f"{'are' if crossed != 1 else 'is'} marked with a cross")
    elif stalls:
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
        if warmup:
            ax.axvspan(0.5, warmup + 0.5, facecolor="#e6e6e6", hatch="//", edgecolor="#9a9a9a", lw=0)
            ax.annotate("warm-up", (0.5, 1.0), xycoords=("data", "axes fraction"), xytext=(2, -2),
                        textcoords="offset points", ha="left", va="top", fontsize=6.5)
        drawn, _ = series_drawn(values, warmup)
        xs, ys = [i + 1 for i in drawn], [values[i] for i in drawn]
        ax.plot(xs, ys, color="#6a6a6a", lw=0.6, marker="o", markersize=1.2)
        stall = [(x, v) for x, v in zip(xs, ys, strict=True) if x > warmup and v >= stats.stall_threshold]
        if stall:
            ax.plot([x for x, _ in stall], [v for _, v in stall], ls="none", marker="x", markersize=5,
                    color=INK, markeredgewidth=1.0)
        ax.axhline(stats.median, color=INK, lw=1.0)
        ax.annotate(f"median {quantity(stats.median, 's')}", (1.0, stats.median), xycoords=("axes fraction", "data"),
                    xytext=(-2, 2), textcoords="offset points", ha="right", va="bottom", fontsize=6.5, bbox=LABEL_BOX)
        if stall:  # without a stall the threshold line would flatten the series against the median
            ax.axhline(stats.stall_threshold, color=INK, lw=0.8, ls="--")
            ax.annotate(f"stall threshold {quantity(stats.stall_threshold, 's')}: {stats.stall_steps} stall steps",
                        (1.0, stats.stall_threshold), xycoords=("axes fraction", "data"), xytext=(-2, 2),
                        textcoords="offset points", ha="right", va="bottom", fontsize=6.5, bbox=LABEL_BOX)
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


MAX_RANK_BARS = 64  # bars in the per-rank chart: past it, ranks are averaged in bins (a straggler keeps its own bar)
MAX_RANK_TICKS = 64  # a rank id under every bar up to this many bars
MAX_MARKED = 3  # flagged ranks the caption names (the chart marks every one)
RANK_PARTS = ("compute", "comm", "stall")


@dataclass(frozen=True)
class RankBars:
    """The bars of the per-rank chart, left to right: one per rank, or a bin of consecutive ranks in the order."""

    ids: tuple[str, ...]  # "rank-37" or "bin-3": each bar's segments are drawn with the gid ID-compute, ID-comm, ID-stall
    labels: tuple[str, ...]  # under the bar: the rank id, or the bin's positions in the order ("17–32")
    values: dict[str, list[float]]  # compute, comm, stall seconds of each bar
    flagged: tuple[int, ...]  # bar indexes of flagged ranks
    sort_by: str
    singles: int  # bars of one rank before the bins (all of them when nothing is binned)
    bin_size: int  # 0: no bins


def rank_bars(profile, sort_by: str) -> RankBars:
    """Ranks sorted by their mean ``sort_by`` seconds, slowest first (ties by rank id); past
    ``MAX_RANK_BARS`` ranks the flagged ones keep a bar each and the rest are averaged in bins."""
    import numpy as np

    means = {"compute": np.asarray(profile.compute), "comm": np.asarray(profile.comm), "stall": np.asarray(profile.stall)}
    ranks = np.asarray(profile.ranks)
    order = [int(i) for i in np.lexsort((ranks, -means[sort_by]))]
    flagged_ids = set(profile.flagged)
    if len(order) <= MAX_RANK_BARS:
        groups = [[i] for i in order]
        singles, size = len(order), 0
    else:
        first = [i for i in order if int(ranks[i]) in flagged_ids][:MAX_RANK_BARS // 8]
        rest = [i for i in order if i not in first]
        size = -(-len(rest) // (MAX_RANK_BARS - len(first)))
        groups = [[i] for i in first] + [rest[k:k + size] for k in range(0, len(rest), size)]
        singles = len(first)
    ids, labels = [], []
    for n, members in enumerate(groups):
        if n < singles:
            ids.append(f"rank-{int(ranks[members[0]])}")
            labels.append(str(int(ranks[members[0]])))
        else:
            start = singles + (n - singles) * size + 1
            ids.append(f"bin-{n - singles + 1}")
            labels.append(f"{start}\u2013{start + len(members) - 1}")
    values = {p: [float(np.mean(means[p][m])) for m in groups] for p in RANK_PARTS}
    flagged = tuple(n for n in range(singles) if int(ranks[groups[n][0]]) in flagged_ids)
    return RankBars(tuple(ids), tuple(labels), values, flagged, sort_by, singles, size)


def _quantity(profile, name: str) -> str:
    return profile.comm_label if name == "comm" else name


def _spread_labels(ys: list[float], gap: float) -> list[float]:
    """Label heights at least ``gap`` apart, in the order given (bottom to top), as near their points as that allows."""
    out: list[float] = []
    for y in ys:
        out.append(max(y, out[-1] + gap) if out else y)
    return out


def rank_split_caption(profile, bars: RankBars) -> str:
    parts = [f"Each rank's mean seconds per step, split into compute (dark), {profile.comm_label} (hatched) and stall "
             f"(light); the {len(profile.ranks):,} ranks sorted by mean {_quantity(profile, bars.sort_by)} time, slowest first"]
    if bars.flagged:
        named = ", ".join(f"rank {bars.labels[n]} ({_short(profile.nodes[_rank_index(profile, bars.labels[n])])})"
                          for n in bars.flagged[:MAX_MARKED])
        more = f" and {len(bars.flagged) - MAX_MARKED} more" if len(bars.flagged) > MAX_MARKED else ""
        parts.append(f"the straggler{'s' if len(bars.flagged) > 1 else ''}, {named}{more}, marked with a triangle")
    if bars.bin_size:
        kept = "the other" if bars.singles else "the"
        parts.append(f"{kept} ranks averaged in bins of up to {bars.bin_size} consecutive ranks in that order "
                     "(labelled by their positions in it)")
    return "; ".join(parts) + "."


def _rank_index(profile, label: str) -> int:
    import numpy as np

    return int(np.flatnonzero(np.asarray(profile.ranks) == int(label))[0])


def rank_split_chart(profile, salt: str):
    """The per-rank split (compute, communication, stall) of every rank, sorted slowest first; (svg, caption),
    or None below two ranks."""
    if profile is None or len(profile.ranks) < 2:
        return None
    bars = rank_bars(profile, profile.timeline_quantity or "compute")
    n = len(bars.ids)
    with _styled(salt):
        fig, ax = _figure(6.4, 2.5)
        bottom = [0.0] * n
        for j, part in enumerate(RANK_PARTS):
            color, hatch = STYLES[j]
            heights = bars.values[part]
            drawn = ax.bar(range(n), heights, bottom=bottom, width=0.8, color=color, hatch=hatch, edgecolor=INK, linewidth=0.3)
            for rect, bar_id in zip(drawn, bars.ids, strict=True):
                rect.set_gid(f"{bar_id}-{part}")
            bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
        top = max(bottom) or 1.0
        if bars.flagged:  # a triangle over each flagged bar, and one word beside the last
            marks = list(bars.flagged)
            (drawn_marks,) = ax.plot(marks, [bottom[k] + top * 0.07 for k in marks], ls="none", marker="v", color=INK,
                                     markersize=4)
            drawn_marks.set_gid("flagged")
            ax.annotate("straggler" + ("s" if len(marks) > 1 else ""), (marks[-1], bottom[marks[-1]] + top * 0.07),
                        xytext=(5, 0), textcoords="offset points", ha="left", va="center", fontsize=6.5)
        # Direct labels at the right edge, beside the last bar's segments, kept apart.
        mids, level = [], 0.0
        for part in RANK_PARTS:
            mids.append(level + bars.values[part][-1] / 2)
            level += bars.values[part][-1]
        for part, y in zip(RANK_PARTS, _spread_labels(mids, top * 0.09), strict=True):
            ax.annotate(_quantity(profile, part), (1.0, y), xycoords=("axes fraction", "data"), xytext=(4, 0),
                        textcoords="offset points", ha="left", va="center", fontsize=6.5)
        ticks = range(n) if n <= MAX_RANK_TICKS else range(0, n, -(-n // 8))
        ax.set_xticks(list(ticks))
        ax.set_xticklabels([bars.labels[k] for k in ticks], rotation=90 if n > 16 or bars.bin_size else 0,
                           fontsize=5 if n > 24 else 6.5)
        ax.set_xlim(-0.6, n - 0.4)
        ax.set_ylim(0, top * (1.15 if bars.flagged else 1.05))
        binned = f" (bins of up to {bars.bin_size}: positions in that order)" if bars.bin_size else ""
        ax.set_xlabel(f"rank, slowest mean {_quantity(profile, bars.sort_by)} first" + binned)
        ax.set_ylabel("seconds per step (mean)")
        fig.subplots_adjust(left=0.08, right=0.84, bottom=0.27, top=0.96)
        return _markup(_svg(fig, salt)), rank_split_caption(profile, bars)


def timeline_drawn(timeline) -> list[int]:
    """The indexes of the steps the straggler's timeline draws: every step up to
    MAX_SERIES_POINTS, else the straggler's fastest and slowest step in each of SERIES_BUCKETS
    runs of consecutive steps (min/max bucketing, as the step-time series; a run without a row
    of that rank by its first step)."""
    import numpy as np

    n = len(timeline)
    if n <= MAX_SERIES_POINTS:
        return list(range(n))
    values = np.asarray(timeline, float)
    out: list[int] = []
    for b in range(SERIES_BUCKETS):
        lo, hi = b * n // SERIES_BUCKETS, (b + 1) * n // SERIES_BUCKETS
        chunk = values[lo:hi]
        if np.all(np.isnan(chunk)):
            out.append(lo)
        else:
            out.extend(sorted({lo + int(np.nanargmin(chunk)), lo + int(np.nanargmax(chunk))}))
    return out


def straggler_timeline_caption(profile) -> str:
    qty = _quantity(profile, profile.timeline_quantity)
    n, drawn = len(profile.steps), len(timeline_drawn(profile.timeline))
    bucketed = (f" {drawn:,} of {n:,} steps drawn: in each of {SERIES_BUCKETS:,} runs of about "
                f"{round(n / SERIES_BUCKETS):,} consecutive steps, the straggler's fastest and slowest step "
                "(min/max bucketing), and the other ranks' median and band at those steps." if drawn < n else "")
    return (f"{qty[:1].upper() + qty[1:]} seconds at each step of rank {profile.timeline_rank} "
            f"({_short(profile.timeline_node)}), the straggler (dashed), against the median of the other "
            f"{profile.others:,} rank{'s' if profile.others != 1 else ''} (solid) and their 10th to 90th percentile "
            "band (shaded)." + bucketed)


def straggler_timeline_chart(profile, salt: str):
    """The straggler's seconds per step against the other ranks' median and p10–p90 band; (svg, caption),
    or None without a straggler or below two steps."""
    if profile is None or profile.timeline is None or len(profile.steps) < 2:
        return None
    import numpy as np

    drawn = timeline_drawn(profile.timeline)
    steps = [int(profile.steps[i]) for i in drawn]
    series = {"rank": np.asarray(profile.timeline, float)[drawn], "median": np.asarray(profile.others_median, float)[drawn],
              "p10": np.asarray(profile.others_p10, float)[drawn], "p90": np.asarray(profile.others_p90, float)[drawn]}
    with _styled(salt):
        fig, ax = _figure(6.4, 2.2)
        band = ax.fill_between(steps, series["p10"], series["p90"], facecolor="#d9d9d9", edgecolor="#9a9a9a", lw=0.3)
        band.set_gid("others-band")
        (median,) = ax.plot(steps, series["median"], color="#6a6a6a", lw=1.0)
        median.set_gid("others-median")
        (line,) = ax.plot(steps, series["rank"], color=INK, lw=1.0, ls="--")
        line.set_gid("straggler")
        lo = float(np.nanmin([np.nanmin(v) for v in series.values()]))
        hi = float(np.nanmax([np.nanmax(v) for v in series.values()]))
        pad = (hi - lo) * 0.12 or abs(hi) * 0.01 or 1e-6
        ax.set_ylim(lo - pad, hi + pad)
        last = {k: float(v[~np.isnan(v)][-1]) if np.any(~np.isnan(v)) else lo for k, v in series.items()}
        names = {"p10": "10th percentile", "median": f"median of {profile.others:,} others",
                 "p90": "90th percentile", "rank": f"rank {profile.timeline_rank}"}
        keys = sorted(names, key=lambda k: last[k])
        for key, y in zip(keys, _spread_labels([last[k] for k in keys], (hi - lo + 2 * pad) * 0.09), strict=True):
            ax.annotate(names[key], (1.0, y), xycoords=("axes fraction", "data"), xytext=(4, 0),
                        textcoords="offset points", ha="left", va="center", fontsize=6.5)
        ax.set_xlim(steps[0] - 0.5, steps[-1] + 0.5)
        ax.set_xlabel("step")
        ax.set_ylabel(f"{_quantity(profile, profile.timeline_quantity)} seconds")
        fig.subplots_adjust(left=0.08, right=0.82, bottom=0.2, top=0.95)
        return _markup(_svg(fig, salt)), straggler_timeline_caption(profile)


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
    profile = getattr(rr.diagnosis, "profile", None) if rr.diagnosis is not None else None
    for key, draw in (("ranks", rank_split_chart), ("rank_timeline", straggler_timeline_chart)):
        drawn = draw(profile, f"{rr.run.id}-{key}")
        if drawn:
            out[key], out[key + "_caption"] = drawn
    return out


def scaling_charts(sr, runs: dict) -> dict:
    name = "weak_scaling_efficiency" if sr.scaling.kind == "weak" else "strong_scaling_efficiency"
    if sr.baseline is None:
        return {}
    points = [(sr.baseline.run_id, sr.baseline.devices, 1.0)]
    points += [(r.run_id, r.devices, r.metrics[name].value) for r in sr.runs if name in r.metrics and r.devices > 0]
    svg = scaling_chart(points, sr.scaling.kind or "strong", f"{sr.scaling.id}-scaling")
    return {"efficiency": svg} if svg else {}
