"""The step-time charts: the histogram of the kept samples and the series of every step."""

from __future__ import annotations

from typing import TYPE_CHECKING

from effspec.display import percent, quantity
from effspec.engine.stats import MIN_SAMPLES
from effspec.report.chart_style import (
    INK,
    LABEL_BOX,
    MAX_TICKS,
    MIN_HISTOGRAM_SAMPLES,
    _styled,
    markup,
    new_figure,
    svg,
)

if TYPE_CHECKING:
    from effspec.engine.stats import StepStats


def step_time_caption(samples: list[float], stats: StepStats) -> str:
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


def _long_tailed(samples: list[float], stats: StepStats) -> bool:
    """Stall steps a twentieth or less of the rest: on a linear count axis their bars vanish."""
    stalls = sum(v >= stats.stall_threshold for v in samples)
    return bool(0 < stalls * 20 <= len(samples) - stalls)


def step_time_chart(samples: list[float], stats: StepStats, salt: str) -> str | None:
    """Histogram of the kept step times, the median and the stall tail marked; None below
    ``MIN_HISTOGRAM_SAMPLES`` samples or when every sample is the same (no shape to show)."""
    if len(samples) < max(MIN_HISTOGRAM_SAMPLES, MIN_SAMPLES) or min(samples) == max(samples):
        return None
    from matplotlib.ticker import MaxNLocator

    with _styled(salt):
        fig, ax = new_figure(6.4, 2.2)
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
        return markup(svg(fig, salt))


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


def step_series_caption(values: list[float], warmup: int, stats: StepStats) -> str:
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


def step_series_chart(values: list[float], warmup: int, stats: StepStats, salt: str) -> str | None:
    """Every step's time against its index (warm-up shaded, stalls crossed, median line); None below
    the histogram's sample count (and so below EFF502's) after warm-up, where the table says all there
    is and a chart a run would only add weight (test_bounded_cost: 100 runs of 10 samples)."""
    kept = values[warmup:]
    if len(kept) < max(MIN_SAMPLES, MIN_HISTOGRAM_SAMPLES):
        return None
    with _styled(salt):
        fig, ax = new_figure(6.4, 2.2)
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
        return markup(svg(fig, salt))
